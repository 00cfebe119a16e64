"""The report's aggregations against hand-computed values and the raw orders files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.report.run_folder import (
    LLM_AGENT,
    LLM_EPISODES,
    LLM_ORDERS,
    episode_id,
)
from tradebench.report import RunData, load_run
from tradebench.report.tables import (
    BENCHMARK_LABEL,
    benchmark_curves,
    equity_curves,
    fault_totals,
    metric_panel,
    mode_mask_matrix,
    rejection_counts,
    sample_rationales,
    status_counts,
    usage_totals,
)
from tradebench.runs.summary import normalise_summary


@pytest.fixture(scope="module")
def run(run_dir: Path) -> RunData:
    return load_run(run_dir)


def test_status_counts(run: RunData) -> None:
    counts = status_counts(run.summary)
    assert counts.loc["llm"].to_dict() == {"done": 4, "running": 1, "failed": 1, "total": 6}
    assert counts.loc["total", "total"] == 11


def test_benchmark_row_sits_at_its_return_rank(run: RunData, run_dir: Path) -> None:
    panel = metric_panel(run.summary)
    bench = panel[panel["is_benchmark"]]
    assert len(bench) == 1 and bench["agent"].item() == BENCHMARK_LABEL
    bench_return = bench["total_return_mean"].item()
    expected = run.summary.loc[run.summary["kind"] == "benchmark", "total_return"].item()
    assert bench_return == pytest.approx(expected)
    others = panel[~panel["is_benchmark"]]["total_return_mean"]
    assert bench["rank"].item() == 1 + int((others > bench_return).sum())
    assert list(panel["rank"]) == list(range(1, len(panel) + 1))
    assert panel["total_return_mean"].is_monotonic_decreasing
    # one row per (agent, mode, mask) of finished non-benchmark episodes, plus the index
    assert len(panel) == 3 + 3 + 1


def test_panel_mean_and_std_across_seeds(run: RunData) -> None:
    panel = metric_panel(run.summary).set_index(["agent", "mode", "mask"])
    bright = panel.loc[(LLM_AGENT, "memory_only", "bright")]
    assert bright["n"] == 2
    assert bright["total_return_mean"] == pytest.approx(0.15)
    assert bright["total_return_std"] == pytest.approx(np.std([0.1, 0.2], ddof=1))
    assert np.isnan(panel.loc[(LLM_AGENT, "memory_only", "blinded"), "total_return_std"])


def test_benchmark_row_from_agents_when_no_benchmark_episode(run: RunData) -> None:
    summary = run.summary[run.summary["kind"] != "benchmark"]
    bench = metric_panel(summary).query("is_benchmark")
    expected = run.summary.loc[run.summary["kind"] == "benchmark"].iloc[0]
    assert bench["total_return_mean"].item() == pytest.approx(expected["total_return"])
    assert bench["sharpe_mean"].item() == pytest.approx(expected["sharpe"])
    assert bench["n"].item() == 1
    assert bench[["hhi_mean", "cash_ratio_mean", "ece_mean"]].isna().all(axis=None)


def test_mode_mask_matrix_cells_and_means(run: RunData) -> None:
    matrix = mode_mask_matrix(run.summary, LLM_AGENT, "total_return")
    assert list(matrix.index) == ["memory_only", "open_research"]
    assert list(matrix.columns) == ["bright", "stock_blind", "blinded"]
    expected = pd.DataFrame(
        [[0.15, np.nan, -0.05], [np.nan, 0.03, np.nan]],
        index=matrix.index,
        columns=matrix.columns,
    )
    pd.testing.assert_frame_equal(matrix, expected, check_names=False, atol=1e-12)
    counts = mode_mask_matrix(run.summary, LLM_AGENT, how="count")
    assert counts.to_numpy().tolist() == [[2, 0, 1], [0, 1, 0]]
    sharpe = mode_mask_matrix(run.summary, LLM_AGENT, "sharpe")
    s = run.summary.set_index("episode_id")["sharpe"]
    bright = [s[episode_id(LLM_AGENT, k, "memory_only", "bright")] for k in (0, 1)]
    assert sharpe.loc["memory_only", "bright"] == pytest.approx(np.mean(bright))


def test_rejection_counts_match_orders_files(run: RunData, run_dir: Path) -> None:
    table = rejection_counts(run).set_index("agent")
    done = run.summary[(run.summary["status"] == "done") & (run.summary["kind"] != "benchmark")]
    for agent, group in done.groupby("agent"):
        files = [run_dir / "episodes" / e / "orders.parquet" for e in group["episode_id"]]
        orders = pd.concat([pd.read_parquet(f) for f in files])
        assert table.loc[agent, "orders"] == len(orders)
        assert table.loc[agent, "rejected"] == (orders["status"] == "rejected").sum()
        for code, n in orders["reject_code"].dropna().value_counts().items():
            assert table.loc[agent, code] == n
        codes = [c for c in table.columns if c not in ("orders", "rejected", "partial")]
        assert table.loc[agent, codes].sum() == orders["reject_code"].notna().sum()
    n_llm = len([e for e in LLM_EPISODES])
    assert table.loc[LLM_AGENT, "T1_LOCKED"] == n_llm
    assert table.loc[LLM_AGENT, "orders"] == n_llm * len(LLM_ORDERS)
    assert "benchmark" not in table.index


def test_usage_totals_count_every_llm_episode(run: RunData) -> None:
    usage = usage_totals(run.summary).set_index("agent")
    llm = run.summary[run.summary["kind"] == "llm"]
    assert usage.loc[LLM_AGENT, "episodes"] == 6
    assert usage.loc[LLM_AGENT, "tokens_in"] == llm["tokens_in"].sum()
    assert usage.loc[LLM_AGENT, "cost_usd"] == pytest.approx(llm["cost_usd"].sum())


def test_equity_curves_average_seeds_on_common_dates(run: RunData, run_dir: Path) -> None:
    curves = equity_curves(run)
    assert "benchmark" not in set(curves["agent"])
    bright = curves[(curves["agent"] == LLM_AGENT) & (curves["mask"] == "bright")]
    navs = [
        pd.read_parquet(run_dir / "episodes" / e / "steps.parquet")["nav"].to_numpy() / 1e6
        for e in (episode_id(LLM_AGENT, k, "memory_only", "bright") for k in (0, 1))
    ]
    np.testing.assert_allclose(bright["mean"], np.mean(navs, axis=0))
    assert (bright["n_seeds"] == 2).all()
    assert bright["mean"].iloc[-1] == pytest.approx(1.15)


def test_benchmark_curve_is_the_benchmark_episode_nav(run: RunData, run_dir: Path) -> None:
    curve = benchmark_curves(run)
    steps = pd.read_parquet(run_dir / "episodes" / "benchmark_20210301-20210430" / "steps.parquet")
    np.testing.assert_allclose(curve["value"], steps["nav"] / 1e6, rtol=1e-12)


def test_rationale_sample_is_seeded_and_per_mask(run: RunData) -> None:
    sample = sample_rationales(run, per_mask=2, seed=7)
    assert sample.equals(sample_rationales(run, per_mask=2, seed=7))
    assert sample["mask"].value_counts().to_dict() == {
        "bright": 2,
        "stock_blind": 2,
        "blinded": 2,
        "n/a": 2,
    }
    llm = sample[sample["mask"] != "n/a"]
    assert (llm["reason"].str.len() > 0).all()
    assert llm.loc[llm["mask"] == "stock_blind", "stock_id"].str.startswith("asset_").all()
    baselines = sample[sample["mask"] == "n/a"]
    assert baselines["stock_id"].str.match(r"^S[HZ]\d{6}$").all()
    full = sample_rationales(run, per_mask=100, seed=0)
    assert (full["mask"] == "blinded").sum() == len(LLM_ORDERS)


def test_fault_totals_sum_per_cell_with_a_total_row() -> None:
    mem, research = "memory_only", "open_research"
    rows = [
        (mem, 0, {"faults_429": 2, "http_retries": 3, "retry_wait_s": 1.5}),
        (mem, 1, {"faults_429": 1, "http_retries": 1, "retry_wait_s": 0.5}),
        (research, 0, {"faults_429": 0, "http_retries": 0, "retry_wait_s": 0}),
        (research, 1, {}),  # recorded before faults were: null
    ]
    frame = pd.DataFrame(
        [
            {"episode_id": f"{m}_{s}", "agent": "gpt", "kind": "llm", "mode": m, "mask": "bright"}
            | v
            for m, s, v in rows
        ]
        + [{"episode_id": "ew", "agent": "ew", "kind": "baseline"}]
    )
    table = fault_totals(normalise_summary(frame)).set_index("cell")
    assert list(table.index) == [
        "gpt · memory_only · bright",
        "gpt · open_research · bright",
        "all cells",
    ]
    assert table.loc["gpt · memory_only · bright", "faults_429"] == 3
    assert table.loc["gpt · memory_only · bright", "retry_wait_s"] == pytest.approx(2.0)
    assert table.loc["gpt · open_research · bright", "http_retries"] == 0  # 0 + null
    assert table.loc["all cells", "http_retries"] == 4 and table.loc["all cells", "episodes"] == 4
    assert pd.isna(table.loc["all cells", "faults_5xx"])  # recorded nowhere
