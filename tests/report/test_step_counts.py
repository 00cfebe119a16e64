"""Episodes are compared over the same decision days: a 3-step model episode is not ranked
against 6-step baselines on their full windows, but against everyone's first 3 days,
recomputed from the recorded steps (checked here by hand from the Parquet files)."""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pandas as pd
import pytest

from tests.report.conftest import ModelRun
from tests.report.model_run import AGENT, MODEL_STEPS, WINDOW_DAYS, recorded_capital
from tradebench.benchmarks import build_report
from tradebench.report import load_run
from tradebench.report.horizons import horizons


@pytest.fixture(scope="module")
def panel(model_run: ModelRun) -> str:
    page = build_report(model_run.live).read_text(encoding="utf-8")
    return page[page.index('id="metric-panel"') : page.index('id="mode-mask-matrix"')]


def _rows(fragment: str) -> list[list[str]]:
    """Cell texts of each body row of the first table in `fragment`."""
    body = fragment[fragment.index("<tbody>") : fragment.index("</tbody>")]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", body)
    return [[html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", r)] for r in rows]


def _steps(model_run: ModelRun, prefix: str) -> pd.DataFrame:
    folder = next((model_run.live / "episodes").glob(f"{prefix}_*"))
    return pd.read_parquet(folder / "steps.parquet")


def _hand_sharpe(nav: np.ndarray, start: float) -> float:
    returns = np.diff(np.concatenate([[start], nav])) / np.concatenate([[start], nav[:-1]])
    return float(returns.mean() / returns.std(ddof=1) * np.sqrt(252))


def test_full_windows_rank_only_full_length_episodes(panel: str) -> None:
    full = panel[panel.index("<h3>Full windows</h3>") : panel.index("<h3>First ")]
    rows = _rows(full)
    assert sorted(r[1] for r in rows) == ["benchmark index", "ew"]  # no 3-step episode
    assert {r[4] for r in rows} == {str(WINDOW_DAYS)}  # the steps column
    assert "stopped before their window&#x27;s end" in panel


def test_short_episodes_rank_against_everyone_over_their_days(
    panel: str, model_run: ModelRun
) -> None:
    part = panel[panel.index(f"<h3>First {MODEL_STEPS} decision days</h3>") :]
    rows = _rows(part)
    by_agent = {(r[1], r[3]): r for r in rows}
    assert set(by_agent) == {
        ("benchmark index", "n/a"),
        ("ew", "n/a"),
        (AGENT, "blinded"),
        (AGENT, "bright"),
    }
    assert {r[4] for r in rows} == {str(MODEL_STEPS)}
    ew = _steps(model_run, "ew")["nav"].to_numpy()
    capital = recorded_capital(model_run.live)
    assert by_agent[("ew", "n/a")][7] == f"{ew[MODEL_STEPS - 1] / capital - 1:.4f}"
    folder = next((model_run.live / "episodes").glob("benchmark_*"))
    base = json.loads((folder / "run.json").read_text())["benchmark_start"]
    close = _steps(model_run, "benchmark")["benchmark_close"].to_numpy()
    index_return = close[MODEL_STEPS - 1] / base - 1
    assert by_agent[("benchmark index", "n/a")][7] == f"{index_return:.4f}"
    returns = [float(r[7]) for r in rows]
    # 3 days of one seed separate nobody: one shared rank, then by mean return
    assert returns == sorted(returns, reverse=True) and [r[0] for r in rows] == ["1"] * 4
    assert all(r[6].endswith(f"{MODEL_STEPS} days") for r in rows)


def test_horizon_metrics_recomputed_from_the_recorded_steps(model_run: ModelRun) -> None:
    run = load_run(model_run.live)
    (only,) = horizons(run)
    assert only.steps == MODEL_STEPS and len(only.short) == 2 and only.left_out == ()
    rows = only.summary.set_index("agent")
    ew = _steps(model_run, "ew")["nav"].to_numpy()[:MODEL_STEPS]
    capital = recorded_capital(model_run.live)
    assert rows.loc["ew", "total_return"] == pytest.approx(ew[-1] / capital - 1, rel=1e-12)
    assert rows.loc["ew", "sharpe"] == pytest.approx(_hand_sharpe(ew, capital), rel=1e-9)
    assert (only.summary["n_steps"] == MODEL_STEPS).all()
    full = run.summary.set_index("agent")
    assert full.loc["ew", "n_steps"] == WINDOW_DAYS  # the summary itself is untouched
    model = only.summary[only.summary["agent"] == AGENT].set_index("mask")
    recorded = full[full.index == AGENT].set_index("mask")
    for col in ("total_return", "sharpe", "max_drawdown"):  # a short episode is as recorded
        np.testing.assert_allclose(model[col], recorded.loc[model.index, col], rtol=1e-12)


def test_equity_table_says_the_days_differ(model_run: ModelRun) -> None:
    page = build_report(model_run.live).read_text(encoding="utf-8")
    equity = page[page.index('id="equity-curves"') : page.index('id="metric-panel"')]
    assert f"different numbers of decision days ({MODEL_STEPS}, {WINDOW_DAYS})" in equity
    rejections = page[page.index('id="rejected-orders"') : page.index('id="tokens-and-cost"')]
    assert "<th>decision days</th>" in rejections


def test_equal_lengths_keep_one_panel(run_dir) -> None:
    page = build_report(run_dir).read_text(encoding="utf-8")
    assert horizons(load_run(run_dir)) == []
    assert "<h3>Full windows</h3>" not in page and "decision days</h3>" not in page
