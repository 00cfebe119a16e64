"""The leaderboard over real runs, through `tradebench run` and `tradebench leaderboard`:
baselines on the real CSI300 data from two run folders (the same agent under two names
is one row), and a masked model grid against the loopback server (the memory gap).

Oracles are computed here from the run folders' own files (summary.parquet, each
episode's steps.parquet) with formulas written out in this file."""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats
from typer.testing import CliRunner

from tradebench.cli import app
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.report.html import fmt

runner = CliRunner()
WINDOW = {"start": "2024-03-01", "end": "2024-04-12"}
SEEDS = [0, 1, 2]
IDS = re.compile(r"Identifiers: ([^\n]+)")
STEP = re.compile(r"Step (\d+) of \d+\.")


def _run(spec: dict, tmp_path: Path, name: str) -> Path:
    spec_file = tmp_path / f"{name}.yaml"
    spec_file.write_text(yaml.safe_dump(spec))
    out = tmp_path / name
    result = runner.invoke(app, ["run", str(spec_file), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def _daily(run: Path, episode_id: str) -> np.ndarray:
    """Daily returns from the episode's NAV and its start capital (written out here)."""
    folder = run / "episodes" / episode_id
    nav = pd.read_parquet(folder / "steps.parquet")["nav"].to_numpy(dtype=float)
    record = yaml.safe_load((folder / "run.json").read_text())
    start = float(record.get("initial_cash") or 1_000_000)
    path = np.concatenate([[start], nav])
    return path[1:] / path[:-1] - 1


def _holm(p: np.ndarray) -> np.ndarray:
    """Holm's adjustment, written out: p_(i) (m - i + 1), running maximum, capped at 1."""
    m = len(p)
    order = np.argsort(p)
    out = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, p[i] * (m - rank))
        out[i] = min(1.0, running)
    return out


def _dsr(returns: np.ndarray, trials: int, variance: float) -> float:
    """Bailey & Lopez de Prado's deflated Sharpe ratio, written out."""
    sr = returns.mean() / returns.std(ddof=1)
    gamma = 0.5772156649015329
    z = stats.norm.ppf
    best = math.sqrt(variance) * (
        (1 - gamma) * z(1 - 1 / trials) + gamma * z(1 - 1 / (trials * math.e))
    )
    g3, g4 = stats.skew(returns), stats.kurtosis(returns, fisher=False)
    denom = math.sqrt(1 - g3 * sr + (g4 - 1) / 4 * sr**2)
    return float(stats.norm.cdf((sr - best) * math.sqrt(len(returns) - 1) / denom))


def test_board_over_two_real_baseline_runs(cn_dataset_dir: Path, tmp_path: Path):
    base = {"dataset": str(cn_dataset_dir), "windows": [WINDOW], "seeds": SEEDS}
    first = _run(
        {
            **base,
            "agents": [
                {"name": "ew", "baseline": "equal_weight"},
                {"name": "mom", "baseline": "momentum_topk", "args": {"k": 20}},
            ],
        },
        tmp_path,
        "first",
    )
    second = _run(
        {
            **base,
            "agents": [
                {"name": "equal", "baseline": "equal_weight"},  # the same agent, renamed
                {"name": "cash", "baseline": "cash"},
            ],
        },
        tmp_path,
        "second",
    )
    out = tmp_path / "board"
    result = runner.invoke(app, ["leaderboard", str(first), str(second), "-o", str(out)])
    assert result.exit_code == 0, result.output
    board = pd.read_parquet(out / "leaderboard.parquet")
    pairs = pd.read_parquet(out / "comparisons.parquet")

    # equal weight from both runs is one row, its seeds averaged, not doubled
    ew = board[board["agent"] == "equal/ew"]
    assert len(ew) == 1 and ew.iloc[0]["runs"] == "first, second"
    assert ew.iloc[0]["seeds"] == len(SEEDS)
    assert sorted(board["agent"]) == ["benchmark", "cash", "equal/ew", "mom"]

    summary = pd.read_parquet(first / "summary.parquet").set_index(["agent", "seed"])
    tr = {a: np.array([summary.loc[(a, s), "total_return"] for s in SEEDS]) for a in ("ew", "mom")}
    # rules ignore the seed: no spread over seeds, so the uncertainty shown is over days
    assert (board.loc[board["kind"] == "baseline", "interval"] == "days").all()
    mom = board[board["agent"] == "mom"].iloc[0]
    assert mom["mean"] == pytest.approx(tr["mom"].mean())
    assert mom["days_low"] < mom["mean"] < mom["days_high"]

    # mom vs equal weight: the paired difference over days, its p-value Holm-adjusted
    i_mom = int(board.index[board["agent"] == "mom"][0])
    i_ew = int(board.index[board["agent"] == "equal/ew"][0])
    row = pairs[
        ((pairs["a"] == i_mom) & (pairs["b"] == i_ew))
        | ((pairs["a"] == i_ew) & (pairs["b"] == i_mom))
    ].iloc[0]
    sign = 1 if row["a"] == i_mom else -1
    assert sign * row["difference"] == pytest.approx((tr["mom"] - tr["ew"]).mean())
    assert row["source"] == "days" and row["pairs"] == len(SEEDS)
    assert row["low"] < row["difference"] < row["high"]
    np.testing.assert_allclose(pairs["p_holm"], _holm(pairs["p"].to_numpy()), rtol=1e-12)
    assert mom["vs_equal_weight"] == pytest.approx((tr["mom"] - tr["ew"]).mean())
    assert mom["vs_equal_weight_p"] == pytest.approx(row["p_holm"])

    # deflated Sharpe: every non-index row, N = 3 rows, V their Sharpe ratios' variance
    ids = {
        "mom": pd.read_parquet(first / "summary.parquet").query("agent == 'mom'")["episode_id"],
        "equal/ew": pd.read_parquet(first / "summary.parquet").query("agent == 'ew'")["episode_id"],
        "cash": pd.read_parquet(second / "summary.parquet").query("agent == 'cash'")["episode_id"],
    }
    seed_mean = {
        a: np.mean([_daily(first if a != "cash" else second, i) for i in e], axis=0)
        for a, e in ids.items()
    }
    ratios = {a: r.mean() / r.std(ddof=1) for a, r in seed_mean.items() if r.std() > 0}
    variance = float(np.var(list(ratios.values()), ddof=1))
    for agent in ratios:
        got = board.loc[board["agent"] == agent, "dsr"].iloc[0]
        assert got == pytest.approx(_dsr(seed_mean[agent], len(ratios), variance), abs=1e-9)
    assert math.isnan(board.loc[board["agent"] == "cash", "dsr"].iloc[0])  # no spread: no SR

    page = (out / "leaderboard.html").read_text()
    for text in ("Paired comparisons", "Holm p", "DSR", "over days"):
        assert text in page

    # the information ratio: resampled on active returns against the index's own days;
    # the index's IR against itself is undefined, so it has no interval at all
    ir_out = tmp_path / "ir"
    args = ["leaderboard", str(first), "-o", str(ir_out), "--metric", "information_ratio"]
    assert runner.invoke(app, args).exit_code == 0
    ir = pd.read_parquet(ir_out / "leaderboard.parquet").set_index("agent")
    want = summary.xs("mom")["information_ratio"].mean()
    assert ir.loc["mom", "mean"] == pytest.approx(want)
    assert ir.loc["mom", "days_low"] < want < ir.loc["mom", "days_high"]
    assert ir.loc["benchmark", "interval"] == "none" and math.isnan(ir.loc["benchmark", "low"])


def _trader(req: RecordedRequest) -> Reply:
    """Buys one listed name a step, picked by a digest of everything it was shown: what it
    buys depends on what the mask lets it see (names, dates, their order)."""
    text = "\n".join(str(m.get("content") or "") for m in (req.body or {}).get("messages", []))
    step = int(STEP.search(text).group(1))
    names = [n.strip() for n in IDS.search(text).group(1).split(",")]
    pick = names[int(hashlib.sha256(text.encode()).hexdigest(), 16) % len(names)]
    return Reply.tool(
        "submit_action",
        {
            "orders": [
                {
                    "stock_id": pick,
                    "side": "BUY",
                    "target_weight": 0.2,
                    "confidence": 0.5,
                    "reason": f"add {pick}: the listing's pick for this step",
                }
            ],
            "overall_reason": f"step {step}: one new position, the rest stays as it is",
        },
    )


def test_memory_gap_of_a_masked_model_grid(cn_dataset_dir: Path, tmp_path: Path):
    with LoopbackServer(responder=_trader) as server:
        run = _run(
            {
                "dataset": str(cn_dataset_dir),
                "windows": [{"start": "2024-03-01", "end": "2024-03-15"}],
                "modes": ["memory_only"],
                "masks": ["bright", "blinded", "stock_blind", "date_blind"],
                "seeds": SEEDS,
                "agents": [
                    {
                        "name": "trader",
                        "provider": "openai",
                        "model": "test-model",
                        "base_url": server.openai_url,
                        "max_tokens": 256,
                        "temperature": 0.7,
                    },
                    {"name": "ew", "baseline": "equal_weight"},
                ],
                "concurrency": 4,
            },
            tmp_path,
            "grid",
        )
    out = tmp_path / "board"
    result = runner.invoke(app, ["leaderboard", str(run), "-o", str(out)])
    assert result.exit_code == 0, result.output
    gaps = pd.read_parquet(out / "memory_gap.parquet")
    assert sorted(gaps["level"]) == ["blinded", "date_blind", "stock_blind"]
    summary = pd.read_parquet(run / "summary.parquet")
    model = summary[summary["agent"] == "trader"].set_index(["mask", "seed"])
    for gap in gaps.itertuples():
        want = np.array(
            [
                model.loc[("bright", s), "total_return"] - model.loc[(gap.level, s), "total_return"]
                for s in SEEDS
            ]
        )
        assert gap.difference == pytest.approx(want.mean())
        assert gap.pairs == len(SEEDS)
        if want.std() > 0:  # seeds differ: the paired t interval over seeds
            lo, hi = stats.t.interval(0.95, len(want) - 1, loc=want.mean(), scale=stats.sem(want))
            assert gap.source == "seeds"
            assert (gap.low, gap.high) == pytest.approx((lo, hi))
            assert math.isfinite(gap.p_holm)
        assert gap.days_low <= gap.days_difference <= gap.days_high
    assert (gaps["source"] == "seeds").any()  # blinded aliases differ by seed
    assert (gaps["days_low"] < gaps["days_high"]).all()
    page = (out / "leaderboard.html").read_text()
    assert "Memory gap" in page and "bright" in page
    # the run's own report shows the same gaps with the same intervals
    assert runner.invoke(app, ["report", str(run)]).exit_code == 0
    report = (run / "report.html").read_text()
    section = report[report.index('id="memory-gap"') :]
    for gap in gaps.itertuples():
        shown = f"{fmt(gap.difference)} [{fmt(gap.low)}, {fmt(gap.high)}] ({gap.source})"
        assert shown in section, shown
