"""Each typed constraint of a mandate through a real run: a scripted constructor proposes a
portfolio that breaks it, and the target weights the broker receives keep it (checked here
from the orders and positions, not from the critic's own record).

`long_only` is not here: every proposal is bounded to [0, 1] by the `propose_weights`
schema and the coded checks (tests/benchmarks/mandate/test_llm_constructor.py), so no
constructor can propose a short position for the critic to remove.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from tests.benchmarks.mandate.conftest import example_spec, run
from tradebench.benchmarks.mandate.pool import draw_pool, sector_map
from tradebench.data.dataset import load_dataset
from tradebench.llm.loopback import LoopbackServer, Reply

pytest.importorskip("cvxpy", reason="needs cvxpy, the mandate extra: pip install -e '.[mandate]'")

TOOL = "propose_weights"
FIRST = "2025-06-02"
EPISODE = "llm_daily_k10_s0_20250602-20250804"
EPS = 1e-9

Targets = dict[str, float]


def _pool(dataset: Path) -> tuple[list[str], dict[str, str]]:
    ds = load_dataset(dataset)
    pool = draw_pool(ds, FIRST, 10, 0)
    return pool, sector_map(ds, pool)


def _call(weights: Targets) -> Reply:
    items = [{"symbol": k, "weight": v} for k, v in weights.items()]
    return Reply.tool(TOOL, {"weights": items, "rationale": "scripted"})


def _run(dataset: Path, out: Path, mandate: str, proposals: list[Targets]) -> Path:
    with LoopbackServer(script=[_call(p) for p in proposals]) as server:
        spec = example_spec(
            dataset, pool_sizes=[10], max_steps=len(proposals), pool="random", mandate=mandate
        )
        spec["agents"] = [
            {
                "name": "llm",
                "provider": "openai",
                "model": "scripted",
                "base_url": server.openai_url,
            }
        ]
        spec["modes"] = ["daily"]
        run(spec, out)
    return out / "episodes" / EPISODE


def _targets(folder: Path, step: int) -> Targets:
    """What the broker was asked to hold on a day (names it traded)."""
    orders = pd.read_parquet(folder / "orders.parquet")
    day = sorted(orders["date"].unique())[step]
    mine = orders[orders["date"] == day]
    return dict(zip(mine["symbol"], mine["target_weight"].astype(float), strict=True))


def _held(folder: Path, step: int) -> Targets:
    pos = pd.read_parquet(folder / "positions.parquet")
    steps = pd.read_parquet(folder / "steps.parquet")
    day = steps["date"].iloc[step]
    mine = pos[pos["date"] == day]
    nav = float(steps["nav"].iloc[step])
    return dict(zip(mine["symbol"], mine["shares"] * mine["close"] / nav, strict=True))


def _ew(pool: list[str], _s: dict[str, str]) -> list[Targets]:
    return [{n: 0.1 for n in pool}]


def _pair(pool: list[str], _s: dict[str, str]) -> list[Targets]:
    return [{pool[0]: 0.25, pool[1]: 0.25}]


def _by_sector(t: Targets, sectors: dict[str, str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for n, w in t.items():
        out[sectors[n]] = out.get(sectors[n], 0.0) + w
    return out


def _capped_sector(pool: list[str], sectors: dict[str, str]) -> str:
    return sectors[pool[0]]


CASES: dict[str, tuple[Callable[[list[str], dict[str, str]], str], Callable, Callable]] = {
    "max_weight": (
        lambda p, s: "No more than 8% in any single name.",
        _ew,
        lambda t, p, s: max(t.values()) <= 0.08 + EPS,
    ),
    "min_position": (
        lambda p, s: "At least 12% in each name held.",
        _ew,
        lambda t, p, s: min(w for w in t.values() if w > EPS) >= 0.12 - EPS,
    ),
    "max_names": (
        lambda p, s: "Hold at most 4 names.",
        _ew,
        lambda t, p, s: sum(w > EPS for w in t.values()) <= 4,
    ),
    "min_names": (
        lambda p, s: "Hold at least 6 names.",
        _pair,
        lambda t, p, s: sum(w > EPS for w in t.values()) >= 6,
    ),
    "max_sector_weight": (
        lambda p, s: "At most 15% in any sector.",
        _ew,
        lambda t, p, s: max(_by_sector(t, s).values()) <= 0.15 + EPS,
    ),
    "sector_caps": (
        lambda p, s: f"At most 5% in the {_capped_sector(p, s)} sector.",
        _ew,
        lambda t, p, s: _by_sector(t, s).get(_capped_sector(p, s), 0.0) <= 0.05 + EPS,
    ),
    "cash_floor": (
        lambda p, s: "Keep at least 30% in cash.",
        _ew,
        lambda t, p, s: sum(t.values()) <= 0.70 + EPS,
    ),
    "cash_ceiling": (
        lambda p, s: "Keep at most 5% in cash.",
        _pair,
        lambda t, p, s: sum(t.values()) >= 0.95 - EPS,
    ),
    "max_gross": (
        lambda p, s: "Gross exposure at most 60%.",
        _ew,
        lambda t, p, s: sum(t.values()) <= 0.60 + EPS,
    ),
    "excluded": (
        lambda p, s: f"Exclude {p[0]}.",
        _ew,
        lambda t, p, s: t.get(p[0], 0.0) <= EPS,
    ),
}


@pytest.mark.parametrize("constraint", sorted(CASES))
def test_each_constraint_holds_in_the_broker_targets(
    constraint: str, mandate_dataset: Path, tmp_path: Path
) -> None:
    pool, sectors = _pool(mandate_dataset)
    mandate_of, proposals_of, holds = CASES[constraint]
    proposals = proposals_of(pool, sectors)
    folder = _run(mandate_dataset, tmp_path / "run", mandate_of(pool, sectors), proposals)
    targets = _targets(folder, 0)  # from cash: every name held is ordered
    assert not holds(proposals[0], pool, sectors)  # the proposal breaks it ...
    assert holds(targets, pool, sectors), targets  # ... the broker's targets keep it


def test_turnover_cap_binds_from_the_second_rebalance(
    mandate_dataset: Path, tmp_path: Path
) -> None:
    """Day 1 buys five names (the first rebalance has no turnover cap), day 2 proposes the
    other five: 200% turnover, capped at 10% of the book held at the last close."""
    pool, _ = _pool(mandate_dataset)
    first, second = {n: 0.2 for n in pool[:5]}, {n: 0.2 for n in pool[5:]}
    folder = _run(
        mandate_dataset, tmp_path / "run", "Turnover at most 10% per rebalance.", [first, second]
    )
    assert _targets(folder, 0) == pytest.approx(first)
    held = _held(folder, 0)
    moved = _targets(folder, 1)
    # names not traded on day 2 keep their shares (their weight change is below one share)
    turnover = sum(abs(w - held.get(n, 0.0)) for n, w in moved.items())
    assert 0.05 < turnover <= 0.10 + 1e-6
