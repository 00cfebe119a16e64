"""The PyTorch networks of the factor-model zoo, each scoring (B, T, F) feature sequences.

Compact implementations after the papers and Qlib's benchmark models (the sources and
scalings are in `docs/baselines_ml.md`): LSTM, GRU, ALSTM (attention over a GRU's
states), Transformer (encoder over the steps), TCN (causal dilated convolutions), TabNet
(sequential sparse attention over the features of one day) and GATs (graph attention
over an LSTM's encodings of one day's cross-section, along a correlation graph). Every
network maps `(x, adj)` to (B,) scores; only GATs reads `adj`, the (B, B) neighbour mask
of the batch's stocks. Imported only when a deep model trains or scores (needs torch).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from tradebench.errors import ConfigError

__all__ = ["ARCHS", "build_net", "sparsemax"]


class RNNNet(nn.Module):
    """LSTM or GRU over the steps; the last hidden state scores (Qlib's LSTM/GRU)."""

    def __init__(self, d_feat: int, hidden_size: int, num_layers: int, dropout: float, cell: str):
        super().__init__()
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn(d_feat, hidden_size, num_layers, batch_first=True, dropout=dropout)
        self.out = nn.Linear(hidden_size, 1)

    def forward(self, x: torch.Tensor, adj: torch.Tensor | None = None) -> torch.Tensor:
        """Scores of a (B, T, F) batch."""
        states, _ = self.rnn(x)
        return self.out(states[:, -1]).squeeze(-1)


class ALSTMNet(nn.Module):
    """Attention-LSTM (Qin et al. 2017, as Qlib's ALSTM): last state + attention pooling."""

    def __init__(self, d_feat: int, hidden_size: int, num_layers: int, dropout: float, cell: str):
        super().__init__()
        self.embed = nn.Sequential(nn.Linear(d_feat, hidden_size), nn.Tanh())
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn(hidden_size, hidden_size, num_layers, batch_first=True, dropout=dropout)
        self.attention = nn.Sequential(
            nn.Linear(hidden_size, max(hidden_size // 2, 1)),
            nn.Dropout(dropout),
            nn.Tanh(),
            nn.Linear(max(hidden_size // 2, 1), 1, bias=False),
        )
        self.out = nn.Linear(2 * hidden_size, 1)

    def forward(self, x: torch.Tensor, adj: torch.Tensor | None = None) -> torch.Tensor:
        """Scores of a (B, T, F) batch."""
        states, _ = self.rnn(self.embed(x))
        weights = torch.softmax(self.attention(states), dim=1)
        pooled = (weights * states).sum(dim=1)
        return self.out(torch.cat([states[:, -1], pooled], dim=1)).squeeze(-1)


class TransformerNet(nn.Module):
    """A Transformer encoder over the steps with sinusoidal positions (Vaswani et al.)."""

    def __init__(self, d_feat: int, d_model: int, nhead: int, num_layers: int, dropout: float):
        super().__init__()
        self.embed = nn.Linear(d_feat, d_model)
        layer = nn.TransformerEncoderLayer(
            d_model, nhead, dim_feedforward=2 * d_model, dropout=dropout, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        self.out = nn.Linear(d_model, 1)
        self.d_model = d_model

    def _positions(self, steps: int, device: torch.device) -> torch.Tensor:
        pos = torch.arange(steps, device=device, dtype=torch.float32)[:, None]
        rate = torch.exp(
            torch.arange(0, self.d_model, 2, device=device, dtype=torch.float32)
            * (-math.log(10000.0) / self.d_model)
        )
        pe = torch.zeros(steps, self.d_model, device=device)
        pe[:, 0::2] = torch.sin(pos * rate)
        pe[:, 1::2] = torch.cos(pos * rate)[:, : pe[:, 1::2].shape[1]]
        return pe

    def forward(self, x: torch.Tensor, adj: torch.Tensor | None = None) -> torch.Tensor:
        """Scores of a (B, T, F) batch (the last step's encoding)."""
        h = self.embed(x) + self._positions(x.shape[1], x.device)
        return self.out(self.encoder(h)[:, -1]).squeeze(-1)


class _CausalBlock(nn.Module):
    """Two causal dilated convolutions with a residual connection (Bai et al. 2018)."""

    def __init__(self, c_in: int, c_out: int, kernel: int, dilation: int, dropout: float):
        super().__init__()
        self.pad = (kernel - 1) * dilation
        self.conv1 = nn.Conv1d(c_in, c_out, kernel, dilation=dilation)
        self.conv2 = nn.Conv1d(c_out, c_out, kernel, dilation=dilation)
        self.drop = nn.Dropout(dropout)
        self.skip = nn.Conv1d(c_in, c_out, 1) if c_in != c_out else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, C, T) -> (B, C', T), step t reading steps <= t only."""
        h = self.drop(torch.relu(self.conv1(nn.functional.pad(x, (self.pad, 0)))))
        h = self.drop(torch.relu(self.conv2(nn.functional.pad(h, (self.pad, 0)))))
        return torch.relu(h + self.skip(x))


class TCNNet(nn.Module):
    """Temporal convolutional network: dilations 1, 2, 4, ...; the last step scores."""

    def __init__(
        self, d_feat: int, n_chans: int, num_layers: int, kernel_size: int, dropout: float
    ):
        super().__init__()
        blocks = [
            _CausalBlock(d_feat if i == 0 else n_chans, n_chans, kernel_size, 2**i, dropout)
            for i in range(num_layers)
        ]
        self.blocks = nn.Sequential(*blocks)
        self.out = nn.Linear(n_chans, 1)

    def forward(self, x: torch.Tensor, adj: torch.Tensor | None = None) -> torch.Tensor:
        """Scores of a (B, T, F) batch."""
        return self.out(self.blocks(x.transpose(1, 2))[:, :, -1]).squeeze(-1)


def sparsemax(z: torch.Tensor) -> torch.Tensor:
    """Sparsemax over the last axis (Martins & Astudillo 2016): a sparse softmax."""
    srt, _ = torch.sort(z, dim=-1, descending=True)
    k = torch.arange(1, z.shape[-1] + 1, device=z.device, dtype=z.dtype)
    cums = srt.cumsum(-1)
    support = (1 + k * srt) > cums
    k_z = support.sum(dim=-1, keepdim=True).clamp(min=1)
    tau = (cums.gather(-1, k_z - 1) - 1) / k_z.to(z.dtype)
    return torch.clamp(z - tau, min=0)


class _GLU(nn.Module):
    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        self.fc = nn.Linear(d_in, 2 * d_out)
        self.bn = nn.BatchNorm1d(2 * d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.glu(self.bn(self.fc(x)), dim=-1)


class _FeatureTransformer(nn.Module):
    """Shared then step-specific GLU layers with scaled residuals (Arik & Pfister)."""

    def __init__(self, shared: nn.ModuleList, d_in: int, width: int, n_ind: int):
        super().__init__()
        self.shared = shared
        first = d_in if len(shared) == 0 else width
        self.own = nn.ModuleList(_GLU(first if i == 0 else width, width) for i in range(n_ind))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate([*self.shared, *self.own]):
            x = layer(x) if i == 0 else (x + layer(x)) * math.sqrt(0.5)
        return x


class TabNetNet(nn.Module):
    """TabNet (Arik & Pfister 2019): `n_steps` sparse feature masks over one day's features."""

    def __init__(
        self, d_feat: int, n_d: int, n_a: int, n_steps: int, n_shared: int, n_ind: int, relax: float
    ):
        super().__init__()
        width = n_d + n_a
        shared = nn.ModuleList(_GLU(d_feat if i == 0 else width, width) for i in range(n_shared))
        self.bn = nn.BatchNorm1d(d_feat)
        self.first = _FeatureTransformer(shared, d_feat, width, n_ind)
        self.steps = nn.ModuleList(
            _FeatureTransformer(shared, d_feat, width, n_ind) for _ in range(n_steps)
        )
        self.masks = nn.ModuleList(
            nn.Sequential(nn.Linear(n_a, d_feat), nn.BatchNorm1d(d_feat)) for _ in range(n_steps)
        )
        self.out = nn.Linear(n_d, 1)
        self.n_d, self.relax = n_d, relax

    def forward(self, x: torch.Tensor, adj: torch.Tensor | None = None) -> torch.Tensor:
        """Scores of a (B, T, F) batch from its last step's features."""
        x = self.bn(x[:, -1])
        attended = self.first(x)[:, self.n_d :]
        prior = torch.ones_like(x)
        total = torch.zeros(x.shape[0], self.n_d, device=x.device)
        for step, mask_net in zip(self.steps, self.masks, strict=True):
            mask = sparsemax(mask_net(attended) * prior)
            prior = prior * (self.relax - mask)
            h = step(x * mask)
            total = total + torch.relu(h[:, : self.n_d])
            attended = h[:, self.n_d :]
        return self.out(total).squeeze(-1)


class GATNet(nn.Module):
    """Graph attention (Velickovic et al. 2018) over LSTM encodings of one day's stocks.

    Attention runs only along `adj`, a correlation graph from returns before the training
    window (self loops included), instead of Qlib's GATs' complete graph.
    """

    def __init__(self, d_feat: int, hidden_size: int, num_layers: int, dropout: float):
        super().__init__()
        self.rnn = nn.LSTM(d_feat, hidden_size, num_layers, batch_first=True)
        self.transform = nn.Linear(hidden_size, hidden_size)
        self.att_src = nn.Parameter(torch.randn(hidden_size) / math.sqrt(hidden_size))
        self.att_dst = nn.Parameter(torch.randn(hidden_size) / math.sqrt(hidden_size))
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(hidden_size, hidden_size)
        self.out = nn.Linear(hidden_size, 1)

    def forward(self, x: torch.Tensor, adj: torch.Tensor | None = None) -> torch.Tensor:
        """Scores of one cross-section (B stocks, T steps, F) along the (B, B) mask `adj`."""
        states, _ = self.rnn(x)
        h = self.transform(states[:, -1])
        logits = nn.functional.leaky_relu(
            (h @ self.att_src)[:, None] + (h @ self.att_dst)[None, :], 0.2
        )
        if adj is None:
            adj = torch.eye(h.shape[0], dtype=torch.bool, device=h.device)
        weights = self.drop(torch.softmax(logits.masked_fill(~adj, float("-inf")), dim=1))
        h = nn.functional.leaky_relu(self.fc(weights @ h + h))
        return self.out(h).squeeze(-1)


def _rnn(cell: str) -> Any:
    def build(d_feat: int, p: dict[str, Any]) -> nn.Module:
        return RNNNet(d_feat, p["hidden_size"], p["num_layers"], p["dropout"], cell)

    return build


ARCHS: dict[str, Any] = {
    "lstm": _rnn("lstm"),
    "gru": _rnn("gru"),
    "alstm": lambda d, p: ALSTMNet(
        d, p["hidden_size"], p["num_layers"], p["dropout"], p.get("rnn_type", "gru").lower()
    ),
    "transformer": lambda d, p: TransformerNet(
        d, p["d_model"], p["nhead"], p["num_layers"], p["dropout"]
    ),
    "tcn": lambda d, p: TCNNet(d, p["n_chans"], p["num_layers"], p["kernel_size"], p["dropout"]),
    "tabnet": lambda d, p: TabNetNet(
        d, p["n_d"], p["n_a"], p["n_steps"], p["n_shared"], p["n_ind"], p["relax"]
    ),
    "gats": lambda d, p: GATNet(d, p["hidden_size"], p["num_layers"], p["dropout"]),
}
"""Architecture name -> builder(d_feat, params)."""


def build_net(arch: str, d_feat: int, params: dict[str, Any]) -> nn.Module:
    """The network `arch` for `d_feat` features, or a ConfigError for a bad setting."""
    try:
        return ARCHS[arch](d_feat, params)
    except KeyError as exc:
        raise ConfigError(f"deep model {arch!r}: missing or unknown setting {exc}") from None
    except (TypeError, ValueError, AssertionError) as exc:
        raise ConfigError(f"deep model {arch!r}: {exc}") from None
