"""Each factor model's out-of-sample IC beside a shuffled-label control, and training time.

On the real CSI300 data every model is trained twice with the same windows, config and
seed: once on the real labels and once on labels permuted within each training day (a
control with no skill by construction). Both are scored on the test window after the
anchor with the agent's own scoring path; a model has learned something when its IC
stands clear of its control's. Training wall time is measured for both.

    python perf/factor_zoo.py                         # every model, reduced windows
    python perf/factor_zoo.py --models lightgbm,lstm --train-days 750 --valid-days 250

Defaults (stated in the output): anchor 2024-01-02, 250 training + 60 validation days
before it, test 2024-01-02 .. 2024-06-28, the registered (CPU-scaled) hyperparameters.
The machine may be shared: times are wall times of this run.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import import_real_cn

from tradebench.agents.factor.agent import FACTOR_MODELS, build_ml_agent
from tradebench.agents.factor.signal import realised_labels, score_days
from tradebench.agents.factor.training import train_or_load
from tradebench.data import load_dataset
from tradebench.metrics.attribution_ic import daily_ic, signal_quality
from tradebench.view import MarketView, to_day


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(FACTOR_MODELS))
    ap.add_argument("--anchor", default="2024-01-02")
    ap.add_argument("--test-end", default="2024-06-28")
    ap.add_argument("--train-days", type=int, default=250)
    ap.add_argument("--valid-days", type=int, default=60)
    ap.add_argument("--data", type=Path, default=None, help="an imported CSI300 dataset")
    ap.add_argument(
        "--deep-params",
        default="{}",
        help="JSON overrides for the PyTorch models, e.g. '{\"n_epochs\": 3}'",
    )
    return ap.parse_args()


def main() -> None:
    """Train, control and score each model; print one row per model."""
    a = _args()
    tmp = Path(tempfile.mkdtemp(prefix="factor-zoo-"))
    folder = a.data or import_real_cn(tmp / "csi300", start="2018-01-01", end="2024-12-31")
    dataset = load_dataset(folder)
    panel = dataset.panel
    days = np.flatnonzero((panel.dates >= to_day(a.anchor)) & (panel.dates <= to_day(a.test_end)))
    labels = realised_labels(panel, days)
    anchor = panel.dates[days[0]]
    view = MarketView(dataset, anchor)
    print(
        f"anchor {anchor}; train {a.train_days} + valid {a.valid_days} days before it; "
        f"test {panel.dates[days[0]]} .. {panel.dates[days[-1]]} ({days.size} days)"
    )
    deep = json.loads(a.deep_params)
    if deep:
        print(f"deep-model overrides: {deep}")
    head = ("model", "train s", "IC", "rank IC", "ICIR", "ctrl s", "ctrl IC", "ctrl rank IC")
    print(" | ".join(head))
    print("|".join("---" for _ in head))
    for name in a.models.split(","):
        agent = build_ml_agent(
            name, train_days=a.train_days, valid_days=a.valid_days, cache_dir=str(tmp / "m")
        )
        if agent.spec.inputs == "sequence" and deep:
            agent = build_ml_agent(
                name,
                train_days=a.train_days,
                valid_days=a.valid_days,
                cache_dir=str(tmp / "m"),
                params=deep,
            )
        cells = [name]
        for labels_kind in ("real", "shuffled"):
            start = time.perf_counter()
            fitted = train_or_load(
                view, anchor, agent.spec, agent.config, 0, tmp / "m", labels=labels_kind
            )
            seconds = time.perf_counter() - start
            q = signal_quality(*daily_ic(score_days(dataset, agent, fitted, days), labels))
            cells.append(f"{seconds:.0f}")
            cells += [f"{q.ic:+.4f}", f"{q.rank_ic:+.4f}"]
            if labels_kind == "real":
                cells.append(f"{q.icir:+.3f}")
        print(" | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
