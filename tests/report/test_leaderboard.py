"""The leaderboard: numbers against an independent computation, tie ranks on a hand-made
case, knowledge-cutoff split, MCQ tiers, and the board over the demo run."""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats
from typer.testing import CliRunner

from tradebench.benchmarks.mcq.eval.report import mcq_report
from tradebench.benchmarks.mcq.eval.run import EvalSummary
from tradebench.benchmarks.mcq.eval.summary import summarise
from tradebench.cli import app
from tradebench.demo import DemoOptions, run_demo
from tradebench.leaderboard.board import LeaderboardOptions, write_leaderboard
from tradebench.leaderboard.stats import tie_ranks
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.runs.spec import RunSpec

runner = CliRunner()
SEEDS = [0, 1, 2, 3, 4]
AFTER = ("2024-07-01", "2024-07-31")  # after the model's cutoff
BEFORE = ("2023-01-02", "2023-01-31")  # before it
CUTOFF = "2024-06-30"


def _episodes(rng: np.random.Generator) -> list[dict]:
    """Summary rows of a run: a model over 5 seeds, equal weight per seed, the index, on
    two windows; the model's seed 4 in the first window ran fewer days (unpaired with EW)."""
    rows = []
    for start, end in (AFTER, BEFORE):
        index_return = float(rng.normal(0, 0.02))
        span = f"{start}_{end}"
        base = {"window_start": start, "window_end": end, "status": "done"}
        rows.append(
            {
                **base,
                "episode_id": f"benchmark_{span}",
                "agent": "benchmark",
                "kind": "benchmark",
                "seed": None,
                "n_steps": 20,
                "total_return": index_return,
                "benchmark_total_return": index_return,
            }
        )
        for seed in SEEDS:
            ew = float(rng.normal(0.01, 0.01))
            rows.append(
                {
                    **base,
                    "episode_id": f"ew_s{seed}_{span}",
                    "agent": "ew",
                    "kind": "baseline",
                    "seed": seed,
                    "n_steps": 20,
                    "total_return": ew,
                    "benchmark_total_return": index_return,
                }
            )
            short = start == AFTER[0] and seed == 4
            rows.append(
                {
                    **base,
                    "episode_id": f"llm_memory_only_blinded_s{seed}_{span}",
                    "agent": "llm",
                    "kind": "llm",
                    "mode": "memory_only",
                    "mask": "blinded",
                    "seed": seed,
                    "n_steps": 12 if short else 20,
                    "total_return": float(rng.normal(0.02, 0.03)),
                    "benchmark_total_return": index_return + (0.001 if short else 0.0),
                }
            )
    return rows


@pytest.fixture
def hand_run(tmp_path: Path) -> Path:
    """A run folder of hand-made summary rows (the board reads spec.yaml and
    summary.parquet only)."""
    run = tmp_path / "hand"
    run.mkdir()
    pd.DataFrame(_episodes(np.random.default_rng(1337))).to_parquet(run / "summary.parquet")
    spec = {
        "benchmark": "portfolio",
        "dataset": "synthetic:cn:0",
        "agents": [
            {"name": "llm", "provider": "openai", "model": "m", "knowledge_cutoff": CUTOFF},
            {"name": "ew", "baseline": "equal_weight"},
        ],
    }
    (run / "spec.yaml").write_text(RunSpec.model_validate(spec).dump())  # as a run writes it
    return run


def _t_interval(x: np.ndarray) -> tuple[float, float]:
    return stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))


def _bootstrap(x: np.ndarray, resamples: int, seed: int) -> tuple[float, float]:
    """The documented percentile bootstrap, written out here."""
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), size=(resamples, len(x)))].mean(axis=1)
    return tuple(np.quantile(means, [0.025, 0.975]))


@pytest.mark.parametrize("method", ["t", "bootstrap"])
def test_intervals_and_paired_differences_match_an_independent_computation(
    hand_run: Path, tmp_path: Path, method: str
):
    out = tmp_path / "board"
    args = ["leaderboard", str(hand_run), "-o", str(out), "--interval", method]
    result = runner.invoke(app, [*args, "--resamples", "4000", "--seed", "7"])
    assert result.exit_code == 0, result.output
    board = pd.read_parquet(out / "leaderboard.parquet")
    summary = pd.read_parquet(hand_run / "summary.parquet")
    for start in (AFTER[0], BEFORE[0]):
        win = summary[summary["window_start"] == start]
        llm = win[win["agent"] == "llm"].set_index("seed")
        ew = win[win["agent"] == "ew"].set_index("seed")
        row = board[(board["agent"] == "llm") & (board["window_start"] == start)].iloc[0]
        x = llm["total_return"].to_numpy()
        paired = [s for s in SEEDS if llm.loc[s, "n_steps"] == ew.loc[s, "n_steps"]]
        d_ew = np.array([llm.loc[s, "total_return"] - ew.loc[s, "total_return"] for s in paired])
        d_ix = (llm["total_return"] - llm["benchmark_total_return"]).to_numpy()
        # below 30 seeds the percentile bootstrap undercovers: `bootstrap` falls back to t
        want = [_t_interval(v) for v in (x, d_ew, d_ix)]
        got = [
            (row["low"], row["high"]),
            (row["vs_equal_weight_low"], row["vs_equal_weight_high"]),
            (row["vs_index_low"], row["vs_index_high"]),
        ]
        np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-12, atol=1e-15)
        assert row["mean"] == pytest.approx(x.mean(), rel=1e-12)
        assert row["vs_equal_weight"] == pytest.approx(d_ew.mean(), rel=1e-12)
        assert row["vs_index"] == pytest.approx(d_ix.mean(), rel=1e-12)
        assert row["vs_equal_weight_n"] == (4 if start == AFTER[0] else 5)
        assert row["equal_weight"] == pytest.approx(ew["total_return"].mean())
        assert row["index"] == pytest.approx(
            win.loc[win["kind"] == "benchmark", "total_return"].iloc[0]
        )


def test_tie_ranks_treat_overlapping_intervals_as_ties():
    #            A            B            C            D           E (no value)
    low = [0.10, 0.15, 0.00, 0.21, np.nan]
    high = [0.20, 0.25, 0.05, 0.30, np.nan]
    mean = [0.15, 0.20, 0.02, 0.25, np.nan]
    ranks = tie_ranks(low, high, mean)
    # D and B overlap (tie at 1); A overlaps B but lies wholly under D (2); C under A, B, D
    assert ranks[:4].tolist() == [2.0, 1.0, 4.0, 1.0] and math.isnan(ranks[4])
    # points without an interval compare as points: equal means tie
    assert tie_ranks([np.nan] * 3, [np.nan] * 3, [0.1, 0.1, 0.0]).tolist() == [1.0, 1.0, 3.0]


def test_knowledge_cutoff_splits_the_board(hand_run: Path, tmp_path: Path):
    board_dir = tmp_path / "board"
    write_leaderboard([hand_run], board_dir, LeaderboardOptions())
    board = pd.read_parquet(board_dir / "leaderboard.parquet").set_index(["agent", "window_start"])
    assert board.loc[("llm", AFTER[0]), "period"] == "after cutoff"
    assert board.loc[("llm", BEFORE[0]), "period"] == "before cutoff"
    assert board.loc[("llm", AFTER[0]), "knowledge_cutoff"] == CUTOFF
    assert (board.loc[["ew", "benchmark"], "period"] == "no cutoff").all()
    page = (board_dir / "leaderboard.html").read_text()
    section = page[page.index('id="knowledge-cutoffs"') :]
    section = section[: section.index("</section>")]
    assert "<h3>after cutoff</h3>" in section and "<h3>before cutoff</h3>" in section
    # a cutoff given on the command line wins over the spec's: now both windows span/precede
    result = runner.invoke(
        app, ["leaderboard", str(hand_run), "-o", str(board_dir), "--cutoff", "llm=2024-07-15"]
    )
    assert result.exit_code == 0, result.output
    moved = pd.read_parquet(board_dir / "leaderboard.parquet").set_index(["agent", "window_start"])
    assert moved.loc[("llm", AFTER[0]), "period"] == "spans cutoff"


def _mcq_folder(root: Path) -> tuple[Path, pd.DataFrame]:
    """An MCQ evaluation folder: summary.json from hand-made result rows (keys mostly B)."""
    rng = np.random.default_rng(3)
    rows = []
    for model in ("openai:a", "openai:b"):
        for q in range(24):
            tier = ("easy", "medium", "hard")[q % 3]
            answer = "B" if q % 4 else "D"
            correct = bool(rng.random() < (0.8 if model == "openai:a" else 0.3))
            rows.append(
                {
                    "model": model,
                    "mode": "no_tools",
                    "run": 0,
                    "question_id": f"q{q}",
                    "tier": tier,
                    "answer": answer,
                    "correct": correct,
                    "parsed": True,
                    "refused_tool_call": False,
                    "input_tokens": 10,
                    "output_tokens": 1,
                    "latency_s": 0.1,
                    "tool_calls": 0,
                    "temperature": 0.0,
                }
            )
    frame = pd.DataFrame(rows)
    summary = EvalSummary(
        questions_file="q.jsonl",
        questions_sha256="0" * 64,
        questions=24,
        solver={"name": "no_tools", "args": {}},
        prompts_sha256="1" * 64,
        sampling="one run",
        models=summarise(frame),
    )
    folder = root / "mcq"
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps(summary.model_dump(mode="json")))
    frame.to_parquet(folder / "results.parquet", index=False)
    return folder, frame


def test_mcq_accuracy_per_tier_with_its_baselines(hand_run: Path, tmp_path: Path):
    folder, frame = _mcq_folder(tmp_path)
    out = tmp_path / "board"
    result = runner.invoke(
        app, ["leaderboard", str(hand_run), "--mcq", str(folder), "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    mcq = pd.read_parquet(out / "leaderboard_mcq.parquet").set_index(["model", "tier"])
    for (model, tier), rows in frame.groupby(["model", "tier"]):
        got = mcq.loc[(model, tier)]
        keys = rows.drop_duplicates("question_id")["answer"]
        top = keys.value_counts().sort_index().idxmax()
        assert got["accuracy"] == pytest.approx(rows["correct"].mean())
        assert got["constant_letter"] == top
        assert got["constant_letter_accuracy"] == pytest.approx((keys == top).mean())
        assert got["chance"] == 0.25 and got["questions"] == rows["question_id"].nunique()
    assert "MCQ accuracy by tier" in (out / "leaderboard.html").read_text()
    # the two models paired on the same questions: McNemar's exact test on the discordant
    pairs = pd.read_parquet(out / "leaderboard_mcq_pairs.parquet")
    assert len(pairs) == 1
    right = frame.pivot_table(index="question_id", columns="model", values="correct")
    a, b = right["openai:a"].astype(bool), right["openai:b"].astype(bool)
    only_a, only_b = int((a & ~b).sum()), int((b & ~a).sum())
    got = pairs.iloc[0]
    assert (got["only_a"], got["only_b"]) == (only_a, only_b)
    want = stats.binomtest(only_a, only_a + only_b, 0.5).pvalue
    assert got["p_value"] == pytest.approx(want, rel=1e-12)
    assert "McNemar" in (out / "leaderboard.html").read_text()
    page = mcq_report(folder / "results.parquet", tmp_path / "mcq.html").read_text()
    assert "Models compared on the same questions" in page and f"{want:.3f}" in page


def test_missing_run_folder_is_one_line(tmp_path: Path):
    result = runner.invoke(app, ["leaderboard", str(tmp_path / "nope"), "-o", str(tmp_path / "b")])
    assert result.exit_code == 1
    assert result.output.strip().count("\n") == 0 and "does not exist" in result.output


def _hold(req: RecordedRequest) -> Reply:
    return Reply.tool(
        "submit_action",
        {"orders": [], "overall_reason": "hold cash: nothing stands out over this window"},
    )


def test_board_over_the_demo_run_renders(tmp_path: Path):
    with LoopbackServer(responder=_hold) as server:
        opts = DemoOptions(
            out=tmp_path / "demo",
            model="openai:demo-model",
            base_url=server.openai_url,
            local_model=False,
        )
        demo = run_demo(opts)
    out = tmp_path / "board"
    result = runner.invoke(
        app, ["leaderboard", str(demo.run_dir), "-o", str(out), "--cutoff", "demo-model=2021-12-31"]
    )
    assert result.exit_code == 0, result.output
    board = pd.read_parquet(out / "leaderboard.parquet")
    summary = demo.summary
    assert len(board) == len(summary)  # one episode per cell: one seed, one window
    by_agent = board[board["kind"] != "llm"].set_index("agent")
    base = summary[summary["kind"] != "llm"].set_index("agent")
    cash = base.loc["cash"]
    assert by_agent.loc["cash", "vs_index"] == pytest.approx(
        cash["total_return"] - cash["benchmark_total_return"]
    )
    assert math.isnan(by_agent.loc["equal_weight", "vs_equal_weight"])
    assert by_agent.loc["momentum_top20", "vs_equal_weight"] == pytest.approx(
        base.loc["momentum_top20", "total_return"] - base.loc["equal_weight", "total_return"]
    )
    models = board[board["kind"] == "llm"]
    assert sorted(models["mode"]) == ["fixed_candidate", "open_research"]
    assert (models["period"] == "after cutoff").all()
    # the model ran 2 of the window's days: never paired with 21-day equal weight, but
    # compared with the index over its own 2 days
    assert (models["vs_equal_weight_n"] == 0).all() and models["vs_equal_weight"].isna().all()
    llm = summary[summary["kind"] == "llm"].set_index("mode")
    for row in models.itertuples():
        own = llm.loc[row.mode]
        assert row.steps == "2" and own["n_steps"] == 2
        assert row.vs_index == pytest.approx(own["total_return"] - own["benchmark_total_return"])
    assert board["rank"].min() == 1
    page = (out / "leaderboard.html").read_text()
    assert page.count('class="plotly-graph-div"') == 1 and "How to read this board" in page
    assert "<h3>after cutoff</h3>" in page and "have no interval" in page
    # one seed never gives a point interval: the 21-day baselines carry the interval over
    # days, the 2-day model episodes (too short to resample) none
    baselines = board[board["kind"] == "baseline"]
    assert (baselines["interval"] == "days").all()
    trading = baselines[baselines["agent"] != "cash"]  # cash: every day 0, no spread at all
    assert (trading["low"] < trading["mean"]).all() and (trading["mean"] < trading["high"]).all()
    assert (models["interval"] == "none").all() and models["low"].isna().all()
    assert "n=1: no interval" in page


@pytest.mark.skipif(
    importlib.util.find_spec("sklearn") is None,
    reason="needs scikit-learn, the ml extra: pip install 'tradebench[ml]'",
)
def test_board_over_a_factor_model_run_with_selection_alpha(cn_dataset_dir: Path, tmp_path: Path):
    spec = {
        "dataset": str(cn_dataset_dir),
        "windows": [{"start": "2024-07-01", "end": "2024-07-05"}],
        "seeds": [0],
        "agents": [
            {
                "name": "ridge",
                "baseline": "ridge",
                "args": {"train_days": 60, "valid_days": 20, "topk": 30},
            },
            {"name": "ew", "baseline": "equal_weight"},
        ],
    }
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(yaml.safe_dump(spec))
    run = tmp_path / "run"
    assert runner.invoke(app, ["run", str(spec_file), "--out", str(run)]).exit_code == 0
    attributed = runner.invoke(app, ["attribute", str(run), "--calibration-days", "40"])
    assert attributed.exit_code == 0, attributed.output
    out = tmp_path / "board"
    result = runner.invoke(app, ["leaderboard", str(run), "-o", str(out)])
    assert result.exit_code == 0, result.output
    board = pd.read_parquet(out / "leaderboard.parquet").set_index("agent")
    selection = pd.read_parquet(run / "attribution_summary.parquet").set_index("agent")
    for agent in ("ridge", "ew"):
        assert board.loc[agent, "selection_alpha"] == pytest.approx(
            selection.loc[agent, "selection"]
        )
    assert math.isnan(board.loc["benchmark", "selection_alpha"])
    summary = pd.read_parquet(run / "summary.parquet").set_index("agent")
    assert board.loc["ridge", "vs_equal_weight"] == pytest.approx(
        summary.loc["ridge", "total_return"] - summary.loc["ew", "total_return"]
    )
    assert "ridge" in (out / "leaderboard.html").read_text()


def test_the_same_agent_from_two_runs_is_one_row(hand_run: Path, tmp_path: Path):
    twin = tmp_path / "second" / hand_run.name  # same folder name: labels keep them apart
    shutil.copytree(hand_run, twin)
    write_leaderboard([hand_run], tmp_path / "one")
    write_leaderboard([hand_run, twin], tmp_path / "board")
    one = pd.read_parquet(tmp_path / "one" / "leaderboard.parquet")
    board = pd.read_parquet(tmp_path / "board" / "leaderboard.parquet")
    assert len(board) == len(one)  # one row per agent and window, not one per run
    labels = sorted([f"{hand_run.parent.name}/hand", "second/hand"])
    assert set(board["runs"]) == {", ".join(labels)}
    # the twin's seeds are the same seeds: averaged, never counted twice
    cols = ["seeds", "mean", "low", "high", "vs_equal_weight", "vs_index_low"]
    key = ["window_start", "agent"]
    pd.testing.assert_frame_equal(
        board.set_index(key)[cols].sort_index(), one.set_index(key)[cols].sort_index()
    )


def test_plan_reads_the_spread_of_a_previous_run(hand_run: Path, tmp_path: Path):
    summary = pd.read_parquet(hand_run / "summary.parquet")
    # seed sd: pooled over the cells whose seeds differ (here the model's two windows)
    variances = [
        rows["total_return"].var(ddof=1)
        for _, rows in summary.groupby(["agent", "window_start"])
        if rows["total_return"].nunique() > 1
    ]
    seed_sd = math.sqrt(np.mean(variances))
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "dataset": "synthetic:cn",
                "windows": [{"start": "2024-07-01", "end": "2024-07-31"}],
                "seeds": SEEDS,
                "agents": [{"name": "ew", "baseline": "equal_weight"}],
            }
        )
    )
    result = runner.invoke(app, ["plan", str(spec), "--from", str(hand_run)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert f"measured in {hand_run}" in text and f"seed sd {seed_sd:.4g}" in text
    # no daily returns in this folder: the stated daily sd stays
    assert "daily difference sd 0.01" in text
