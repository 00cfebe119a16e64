"""The metric panel ranks honestly: spec -> run -> report.html, checked against the run's
own Parquet files and the leaderboard's statistics.

A model that never answers usably falls back to cash on every step of a 6-day window
beside an equal-weight baseline and the index. Its row must carry its flags (no trades, all
fallbacks, one seed, 6 days), no ratio may be annualised from 6 days, and the ranks must be
the leaderboard's significance ranks (rows the data cannot separate share one)."""

from __future__ import annotations

import html
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from tests.report.model_run import END, START, recorded_capital, run
from tradebench.benchmarks import build_report
from tradebench.leaderboard.board import build_leaderboard
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply

IDLE = "idle"
DAYS = 6


def _unusable(req: RecordedRequest) -> Reply:
    """Every reply unreadable, so every step falls back."""
    return Reply.garbage()


@pytest.fixture(scope="module")
def idle_run(synth_dataset_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("idle_run")
    with LoopbackServer(responder=_unusable) as server:
        spec = {
            "dataset": str(synth_dataset_dir),
            "windows": [{"start": START, "end": END}],
            "modes": ["memory_only"],
            "masks": ["blinded"],
            "seeds": [0],
            "agents": [
                {
                    "name": IDLE,
                    "provider": "openai",
                    "model": "test-model",
                    "base_url": server.openai_url,
                    "max_tokens": 128,
                    "max_attempts": 1,
                },
                {"name": "ew", "baseline": "equal_weight"},
            ],
            "concurrency": 2,
        }
        return run(spec, root / "run")


def _panel_rows(page: str, key: tuple[str, ...] = ("agent",)) -> dict:
    """The metric panel's rows by `key` columns, each a {column header: cell text}."""
    panel = page[page.index('id="metric-panel"') : page.index('id="mode-mask-matrix"')]
    head = re.findall(r"<th>(.*?)</th>", panel[: panel.index("</thead>")])
    body = panel[panel.index("<tbody>") : panel.index("</tbody>")]
    rows = {}
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", body):
        cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr)]
        row = dict(zip([html.unescape(h) for h in head], cells, strict=True))
        rows[row[key[0]] if len(key) == 1 else tuple(row[k] for k in key)] = row
    return rows


def _episode(run_dir: Path, prefix: str) -> Path:
    return next((run_dir / "episodes").glob(f"{prefix}_*"))


def _daily_returns(nav: np.ndarray, start: float) -> np.ndarray:
    path = np.concatenate([[start], nav])
    return path[1:] / path[:-1] - 1


@pytest.fixture(scope="module")
def page(idle_run: Path) -> str:
    return build_report(idle_run).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def rows(page: str) -> dict[str, dict[str, str]]:
    return _panel_rows(page)


def test_flags_follow_the_episode_files(rows: dict[str, dict[str, str]], idle_run: Path) -> None:
    idle = _episode(idle_run, IDLE)
    steps = pd.read_parquet(idle / "steps.parquet")
    orders = pd.read_parquet(idle / "orders.parquet")
    assert len(steps) == DAYS and steps["fallback"].astype(bool).all()
    assert not orders["status"].isin(["filled", "partial"]).any()
    assert rows[IDLE]["flags"] == f"no trades, all fallbacks, one seed, {DAYS} days"
    ew_orders = pd.read_parquet(_episode(idle_run, "ew") / "orders.parquet")
    assert ew_orders["status"].isin(["filled", "partial"]).any()
    assert rows["ew"]["flags"] == f"{DAYS} days"
    assert rows["benchmark index"]["flags"] == f"{DAYS} days"


def test_no_ratio_is_annualised_from_six_days(
    rows: dict[str, dict[str, str]], idle_run: Path, page: str
) -> None:
    matrix = page[page.index('id="mode-mask-matrix"') :]
    assert f"<h4>mean Sharpe per day (not annualised: {DAYS} days)</h4>" in matrix
    assert "<h4>mean Sharpe</h4>" not in matrix
    nav = pd.read_parquet(_episode(idle_run, "ew") / "steps.parquet")["nav"].to_numpy(float)
    returns = _daily_returns(nav, recorded_capital(idle_run))
    daily = returns.mean() / returns.std(ddof=1)
    assert rows["ew"]["sharpe"] == f"{daily:.4f} per day"
    annual = f"{daily * math.sqrt(252):.4f}"
    assert annual not in rows["ew"]["sharpe"]
    for row in rows.values():
        for column in ("sharpe", "information_ratio", "annualized_turnover"):
            assert row[column] == "–" or row[column].endswith(" per day")


def _leaderboard_ranks(run_dir: Path) -> dict[tuple[str, str, str], tuple]:
    """(agent, mode, mask) -> (rank, low, high, interval) from the leaderboard of the folder."""
    board = build_leaderboard([run_dir]).rows
    out = {}
    for _, r in board.iterrows():
        label = "benchmark index" if r["kind"] == "benchmark" else r["agent"]
        out[(label, r["mode"], r["mask"])] = (int(r["rank"]), r["low"], r["high"], r["interval"])
    return out


def _check_against_leaderboard(table: list[dict[str, str]], run_dir: Path) -> None:
    expected = _leaderboard_ranks(run_dir)
    assert {(r["agent"], r["mode"], r["mask"]) for r in table} == set(expected)
    for r in table:
        rank, low, high, over = expected[(r["agent"], r["mode"], r["mask"])]
        assert r["rank"] == str(rank)
        if np.isfinite(low):
            assert r["interval"] == f"[{low:.4f}, {high:.4f}] ({over})"
        else:
            assert r["interval"] == "–"


def test_six_days_of_one_seed_separate_nobody(
    rows: dict[str, dict[str, str]], idle_run: Path
) -> None:
    # one seed gives no interval over seeds and 6 days are under the block bootstrap's
    # 10: no comparison is defined, so nobody is ranked above anybody
    assert {r["rank"] for r in rows.values()} == {"1"}
    assert {r["interval"] for r in rows.values()} == {"–"}
    _check_against_leaderboard(list(rows.values()), idle_run)
    # a model that only fell back never sits above the baseline without saying so
    assert int(rows[IDLE]["rank"]) <= int(rows["ew"]["rank"])
    assert "all fallbacks" in rows[IDLE]["flags"]


def test_long_runs_separate_where_the_data_do(run_dir: Path) -> None:
    """The hand-built run (45 days): llm-a under bright ran two seeds of known returns
    0.10 and 0.20; llm-a under stock_blind and under blinded moved their NAV in equal
    daily steps to +3% and -5%, the cash baseline never moved."""
    page = build_report(run_dir).read_text(encoding="utf-8")
    table = list(_panel_rows(page, key=("agent", "mode", "mask")).values())
    by = {(r["agent"], r["mask"]): r for r in table}
    bright = by[("llm-a", "bright")]
    values = np.array([0.10, 0.20])
    half = stats.t.ppf(0.975, 1) * values.std(ddof=1) / math.sqrt(2)
    assert bright["interval"] == f"[{0.15 - half:.4f}, {0.15 + half:.4f}] (seeds)"
    assert bright["flags"] == ""
    assert by[("llm-a", "blinded")]["flags"] == "one seed"
    assert by[("cash", "n/a")]["flags"] == "no trades"
    # steady gains beat no change, which beats steady losses, at any sane level
    ranks = [int(by[("llm-a", m)]["rank"]) for m in ("stock_blind",)]
    ranks += [int(by[("cash", "n/a")]["rank"]), int(by[("llm-a", "blinded")]["rank"])]
    assert ranks == sorted(ranks) and len(set(ranks)) == 3
    assert all(not r["sharpe"].endswith("per day") for r in table)
    _check_against_leaderboard(table, run_dir)
