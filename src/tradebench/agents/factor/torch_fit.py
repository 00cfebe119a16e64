"""One small training loop for every PyTorch model of the zoo, and its seed ensemble.

Each seed trains a fresh network with Adam on mean squared error, in mini-batches of
sequences (`batch_size` rows drawn from at most `rows_per_epoch` shuffled training rows
per epoch) or, for the graph model, one trading day's cross-section per step. After each
epoch the validation loss is measured; training stops `early_stop` epochs after the best
one and keeps the best weights (Qlib's `metric: loss`). The model scores with the mean
over its `n_seeds` networks; each seed's validation IC is kept to report the spread.
Runs on CUDA when present (or `device: cuda`), else on the CPU.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tradebench.agents.factor.data import SequenceSet
from tradebench.agents.factor.graph import correlation_graph
from tradebench.agents.factor.progress import Progress, no_progress
from tradebench.errors import ConfigError

__all__ = ["LOOP_KEYS", "NetEnsemble", "fit_torch", "gather"]

LOOP_KEYS = (
    "n_epochs",
    "lr",
    "early_stop",
    "batch_size",
    "rows_per_epoch",
    "n_seeds",
    "device",
    "weight_decay",
    "graph_days",
    "graph_top_k",
    "clip",
)
"""Keys that steer the loop; the rest are the network's (`nets.ARCHS`)."""


SCORING_THREADS = 1
"""Torch threads while scoring. A day's few hundred sequences gain nothing from more, and
the run's two pool workers each scoring with two threads on two cores took 35 ms per LSTM
forward against 5 ms single-threaded (oversubscribed OpenMP threads spin); one thread
also makes every score independent of the machine's core count."""


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise ConfigError(
            "the deep factor models need torch: pip install 'tradebench[zoo]'"
        ) from None
    return torch


def gather(cube: np.ndarray, rc: np.ndarray, step_len: int) -> np.ndarray:
    """(B, step_len, F) sequences ending at rows `rc[:, 0]` of columns `rc[:, 1]`."""
    rows = rc[:, :1] + np.arange(1 - step_len, 1)[None, :]
    return cube[rows, rc[:, 1:2]]


@dataclass
class NetEnsemble:
    """Networks of several seeds (on the CPU) and what scoring needs beside them."""

    arch: str
    nets: list[Any]
    adjacency: np.ndarray | None
    """(N, N) neighbour mask over the dataset's columns (graph model only)."""
    seeds: list[int]
    epochs: list[int] = field(default_factory=list)

    def predict(
        self, x: np.ndarray, cols: np.ndarray | None = None, seed: int | None = None
    ) -> np.ndarray:
        """Mean score of the seeds' networks (or seed index `seed`'s) for (B, T, F) inputs.

        For the graph model `x` is one day's cross-section and `cols` its columns.
        """
        torch = _torch()
        if x.shape[0] == 0:
            return np.zeros(0)
        nets = self.nets if seed is None else [self.nets[seed]]
        adj = None
        if self.adjacency is not None:
            if cols is None:
                raise ConfigError("the graph model scores a day's cross-section: pass columns")
            adj = torch.from_numpy(self.adjacency[np.ix_(cols, cols)])
        xt = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
        out = np.zeros(x.shape[0])
        threads = torch.get_num_threads()
        torch.set_num_threads(SCORING_THREADS)
        try:
            with torch.no_grad():
                for net in nets:
                    net.eval()
                    out += _batched(net, xt, adj).numpy()
        finally:
            torch.set_num_threads(threads)
        return out / len(nets)


def _batched(net: Any, x: Any, adj: Any, size: int = 8192) -> Any:
    torch = _torch()
    if adj is not None:
        return net(x, adj).float().cpu()
    return torch.cat([net(x[i : i + size]).float().cpu() for i in range(0, x.shape[0], size)])


def _day_groups(rc: np.ndarray) -> list[np.ndarray]:
    order = np.argsort(rc[:, 0], kind="stable")
    _, starts = np.unique(rc[order, 0], return_index=True)
    return np.split(order, starts[1:])


def _device(choice: str) -> Any:
    torch = _torch()
    if choice == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(choice)


@dataclass
class _Run:
    """What one seed's loop reads."""

    arch: str
    net_params: dict[str, Any]
    loop: dict[str, Any]
    data: SequenceSet
    adjacency: np.ndarray | None
    device: Any


def _loss_on(run: _Run, net: Any, rc: np.ndarray, y: np.ndarray) -> float:
    """Validation MSE (day by day for the graph model)."""
    pred = _predict_rows(run, net, rc)
    return float(np.mean((pred - y) ** 2)) if len(y) else float("nan")


def _predict_rows(run: _Run, net: Any, rc: np.ndarray) -> np.ndarray:
    torch = _torch()
    out = np.zeros(len(rc))
    net.eval()
    with torch.no_grad():
        if run.adjacency is not None:
            for rows in _day_groups(rc):
                x, adj = _batch(run, rc[rows])
                out[rows] = net(x, adj).float().cpu().numpy()
        else:
            for i in range(0, len(rc), 8192):
                x, _ = _batch(run, rc[i : i + 8192])
                out[i : i + 8192] = net(x).float().cpu().numpy()
    return out


def _batch(run: _Run, rc: np.ndarray) -> tuple[Any, Any]:
    torch = _torch()
    x = torch.from_numpy(gather(run.data.cube, rc, run.data.step_len)).to(run.device)
    adj = None
    if run.adjacency is not None:
        adj = torch.from_numpy(run.adjacency[np.ix_(rc[:, 1], rc[:, 1])]).to(run.device)
    return x, adj


def _train_seed(run: _Run, seed: int, progress: Any) -> tuple[Any, int]:
    from tradebench.agents.factor.nets import build_net

    torch = _torch()
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    loop, data = run.loop, run.data
    net = build_net(run.arch, data.cube.shape[2], run.net_params).to(run.device)
    opt = torch.optim.Adam(
        net.parameters(), lr=float(loop["lr"]), weight_decay=float(loop.get("weight_decay", 0))
    )
    y_train = torch.from_numpy(data.y_train.astype(np.float32))
    best, best_state, best_epoch, waited = np.inf, copy.deepcopy(net.state_dict()), 0, 0
    epochs = int(loop["n_epochs"])
    for epoch in range(epochs):
        net.train()
        for rows in _epoch_batches(run, rng):
            x, adj = _batch(run, data.rc_train[rows])
            pred = net(x, adj)
            loss = torch.mean((pred - y_train[rows].to(run.device)) ** 2)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_value_(net.parameters(), float(loop.get("clip", 3.0)))
            opt.step()
        rc_va, y_va = data.rc_valid, data.y_valid
        score = _loss_on(run, net, rc_va, y_va) if len(y_va) else -epoch
        progress(epoch + 1)
        if score < best:
            best, best_state, best_epoch, waited = score, copy.deepcopy(net.state_dict()), epoch, 0
        else:
            waited += 1
            if waited >= int(loop["early_stop"]):
                break
    net.load_state_dict(best_state)
    return net.to("cpu").eval(), best_epoch + 1


def _epoch_batches(run: _Run, rng: np.random.Generator) -> list[np.ndarray]:
    n = len(run.data.y_train)
    if run.adjacency is not None:
        days = _day_groups(run.data.rc_train)
        cap = run.loop.get("rows_per_epoch")
        order = rng.permutation(len(days))
        picked, total = [], 0
        for i in order:
            if cap and total >= int(cap):
                break
            picked.append(days[i])
            total += len(days[i])
        return picked
    cap = min(int(run.loop.get("rows_per_epoch") or n), n)
    rows = rng.permutation(n)[:cap]
    size = int(run.loop["batch_size"])
    return [rows[i : i + size] for i in range(0, cap, size)]


def _graph(data: SequenceSet, loop: dict[str, Any]) -> np.ndarray:
    days = int(loop.get("graph_days", 120))
    lo = max(data.train_row0 - days, 0)
    return correlation_graph(data.close[lo : data.train_row0], int(loop.get("graph_top_k", 10)))


def fit_torch(
    arch: str,
    params: dict[str, Any],
    data: SequenceSet,
    seed: int,
    progress: Progress = no_progress,
) -> NetEnsemble:
    """Train `n_seeds` networks of `arch` (seeds seed, seed+1, ...) on sequence data."""
    loop = {k: params[k] for k in LOOP_KEYS if k in params}
    net_params = {k: v for k, v in params.items() if k not in LOOP_KEYS}
    if len(data.y_train) == 0:
        raise ConfigError(f"deep model {arch!r}: no training rows")
    adjacency = _graph(data, loop) if arch == "gats" else None
    run = _Run(arch, net_params, loop, data, adjacency, _device(str(loop.get("device", "auto"))))
    n_seeds, epochs = int(loop.get("n_seeds", 3)), int(loop["n_epochs"])
    seeds = [seed + i for i in range(n_seeds)]
    model = NetEnsemble(arch, [], adjacency, seeds)
    for i, s in enumerate(seeds):
        net, used = _train_seed(run, s, lambda e, i=i: progress(i * epochs + e, n_seeds * epochs))
        model.nets.append(net)
        model.epochs.append(used)
        progress((i + 1) * epochs, n_seeds * epochs)
    return model
