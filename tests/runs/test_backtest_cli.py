"""`tradebench backtest` writes the four files with the documented columns."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from tradebench.cli import app

runner = CliRunner()
STEP_COLUMNS = ["date", "nav", "cash", "benchmark_close", "n_orders", "n_rejected", "turnover"]
POSITION_COLUMNS = ["date", "symbol", "shares", "shares_available", "close", "weight"]
ORDER_COLUMNS = [
    "date",
    "symbol",
    "side",
    "requested_shares",
    "target_weight",
    "filled_shares",
    "fill_price",
    "cost",
    "status",
    "reject_code",
]
METRIC_KEYS = [
    "total_return",
    "sharpe",
    "max_drawdown",
    "information_ratio",
    "annualized_turnover",
    "hhi",
    "cash_ratio",
    "abstention_rate",
    "parse_failure_rate",
    "ece",
    "tool_validity_rate",
    "brier",
]


def _run(dataset: Path, agent: str, start: str, end: str, out: Path, *extra: str) -> dict:
    result = runner.invoke(
        app,
        [
            "backtest",
            "--dataset",
            str(dataset),
            "--agent",
            agent,
            "--start",
            start,
            "--end",
            end,
            "--out",
            str(out),
            *extra,
        ],
    )
    assert result.exit_code == 0, result.output
    for name in ("steps.parquet", "positions.parquet", "orders.parquet", "metrics.json"):
        assert (out / name).exists()
    steps = pd.read_parquet(out / "steps.parquet")
    assert list(steps.columns[: len(STEP_COLUMNS)]) == STEP_COLUMNS
    positions = pd.read_parquet(out / "positions.parquet")
    assert set(POSITION_COLUMNS) <= set(positions.columns)
    orders = pd.read_parquet(out / "orders.parquet")
    assert set(ORDER_COLUMNS) <= set(orders.columns)
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(METRIC_KEYS) <= set(metrics)
    assert set(metrics["benchmark"]) >= {"total_return", "sharpe", "max_drawdown"}
    assert metrics["total_return"] == pytest.approx(steps["nav"].iloc[-1] / 1_000_000 - 1)
    return {"steps": steps, "positions": positions, "orders": orders, "metrics": metrics}


@pytest.mark.parametrize("agent", ["cash", "equal_weight", "momentum_topk", "benchmark"])
def test_baselines_on_synthetic(synth_dataset_dir: Path, tmp_path: Path, agent: str) -> None:
    run = _run(synth_dataset_dir, agent, "2022-03-01", "2022-05-31", tmp_path / agent)
    m = run["metrics"]
    assert m["ece"] is None and m["parse_failure_rate"] is None  # baselines have no LLM fields
    if agent == "cash":
        assert m["total_return"] == 0.0 and m["abstention_rate"] == 1.0
    if agent == "equal_weight":
        # nearest-lot sizing keeps most of NAV invested; the cash ratio is reported, not hidden
        assert m["cash_ratio"] < 0.2
        assert run["positions"]["symbol"].nunique() > 200
    if agent == "benchmark":
        assert m["total_return"] == pytest.approx(m["benchmark"]["total_return"])


def test_equal_weight_on_real_cn(cn_dataset_dir: Path, tmp_path: Path) -> None:
    run = _run(
        cn_dataset_dir, "equal_weight", "2024-01-02", "2024-03-29", tmp_path / "ew", "-A", "every=5"
    )
    pos = run["positions"]
    assert pos.groupby("date")["symbol"].count().max() > 200
    filled = run["orders"][run["orders"]["filled_shares"] > 0]
    assert (filled.loc[filled["side"] == "BUY", "filled_shares"] % 100 == 0).all()
    info = json.loads((tmp_path / "ew" / "run.json").read_text())
    assert info["agent"] == {"name": "equal_weight", "args": {"lot_size": 100, "every": 5}}


def test_floor_rounding_leaves_cash_idle(cn_dataset_dir: Path, tmp_path: Path) -> None:
    """The documented lot problem: flooring ~CNY 3,300 targets leaves much of NAV in cash."""
    floor = _run(
        cn_dataset_dir,
        "equal_weight",
        "2024-01-02",
        "2024-03-29",
        tmp_path / "f",
        "-A",
        "rounding=floor",
    )["metrics"]
    nearest = _run(cn_dataset_dir, "equal_weight", "2024-01-02", "2024-03-29", tmp_path / "n")[
        "metrics"
    ]
    assert floor["cash_ratio"] > 0.3 > nearest["cash_ratio"]


def test_bad_window_is_a_clear_error(synth_dataset_dir: Path, tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "backtest",
            "--dataset",
            str(synth_dataset_dir),
            "--agent",
            "equal_weight",
            "--start",
            "1999-01-01",
            "--end",
            "1999-02-01",
            "--out",
            str(tmp_path / "x"),
        ],
    )
    assert result.exit_code == 1 and "no trading days" in result.output
    result = runner.invoke(
        app,
        [
            "backtest",
            "--dataset",
            str(synth_dataset_dir),
            "--agent",
            "nope",
            "--start",
            "2022-03-01",
            "--end",
            "2022-03-10",
            "--out",
            str(tmp_path / "y"),
        ],
    )
    assert result.exit_code == 1 and "unknown agent 'nope'" in result.output


def test_report_reads_the_folder_backtest_writes(synth_dataset_dir: Path, tmp_path: Path) -> None:
    """`backtest` says it writes "the run folder" and prints `tradebench report` as the next
    step; that command then reports it as a one-episode run: the final NAV / cash shown for
    the agent is the one its own steps table holds."""
    out = tmp_path / "ew"
    run = _run(synth_dataset_dir, "equal_weight", "2022-03-01", "2022-04-29", out, "-A", "every=5")
    shown = runner.invoke(app, ["backtest", "--help"]).output
    assert "run folder" in shown
    result = runner.invoke(app, ["report", str(out)])
    assert result.exit_code == 0, result.output
    page = (out / "report.html").read_text()
    text = re.sub(r"(\s*<[^>]+>\s*)+", "|", re.sub(r"<script.*?</script>", "", page, flags=re.S))
    final = run["steps"]["nav"].iloc[-1] / 1_000_000
    days = len(run["steps"])
    assert re.search(rf"\|equal_weight\|{days}\|[-0-9]+\|1\|{final:.4f}\|", text), text[:3000]
