"""`tradebench run` with `benchmark: single_stock` against the loopback server."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from tests.benchmarks.single_stock.conftest import spec_dict, trader
from tests.leak_scan import find_leaks
from tradebench.benchmarks import build_report, run_spec
from tradebench.benchmarks.single_stock.scoring import SingleStockScores
from tradebench.benchmarks.single_stock.store import rescore_folder
from tradebench.cli import app
from tradebench.data import load_dataset
from tradebench.llm.loopback import LoopbackServer
from tradebench.masking import MASK_LEVELS, hides_dates, hides_stocks
from tradebench.runs.spec import RunSpec
from tradebench.runs.trace import trace_bytes, trace_lines


def _same(a: SingleStockScores, b: SingleStockScores) -> bool:
    return a.model_dump_json() == b.model_dump_json()  # NaN-safe, exact floats


@pytest.fixture(scope="module")
def default_run(ss_dataset_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """The 4 x 3 default tasks (50 decisions each, blinded) for the model and a baseline."""
    root = tmp_path_factory.mktemp("ssrun")
    with LoopbackServer(responder=trader) as server:
        spec = root / "spec.yaml"
        spec.write_text(yaml.safe_dump(spec_dict(ss_dataset_dir, server.openai_url)))
        result = CliRunner().invoke(app, ["run", str(spec), "--out", str(root / "run")])
        requests = list(server.requests)
    assert result.exit_code == 0, result.output
    return root / "run", requests


def test_default_tasks_run_end_to_end(default_run) -> None:
    run_dir, requests = default_run
    summary = pd.read_parquet(run_dir / "summary.parquet")
    assert len(summary) == 24 and (summary["status"] == "done").all()
    assert (summary["n_steps"] == 50).all()
    llm = summary[summary["kind"] == "llm"]
    assert sorted(set(llm["mode"])) == ["adaptive", "risk_averse", "risk_seeking"]
    assert sorted(set(llm["cell"])) == ["amzn_main", "msft_main", "nflx_main", "tsla_main"]
    assert len(requests) == 12 * 50  # one forced call per decision, no nudges needed
    assert llm["tokens_in"].gt(0).all()
    spec = yaml.safe_load((run_dir / "spec.yaml").read_text())
    assert spec["options"]["cells"] is None and spec["options"]["symbols"] == []
    assert spec["options"]["episode_length"] == 50


def test_summary_ranks_tasks_without_opening_folders(default_run) -> None:
    run_dir, _ = default_run
    summary = pd.read_parquet(run_dir / "summary.parquet").set_index("episode_id")
    for eid, row in summary.iterrows():
        scores = json.loads((run_dir / "episodes" / eid / "metrics.json").read_text())["scores"]
        assert row["composite"] == scores["composite"]
        assert row["discipline"] == scores["components"]["discipline"]
        assert row["buy_and_hold_return"] == scores["buy_and_hold"]["cum_return"]
        assert row["volatility"] == scores["strategy"]["volatility"]
        assert row["symbol"] == row["cell"].split("_")[0].upper()
    assert summary["composite"].between(0, 1).all()


def test_episode_folders_hold_every_raw_quantity(default_run) -> None:
    run_dir, _ = default_run
    folder = run_dir / "episodes" / "scripted_adaptive_blinded_tsla_main_s0"
    meta = json.loads((folder / "episode.json").read_text())
    assert meta["status"] == "done" and meta["symbol"] == "TSLA" and meta["mode"] == "adaptive"
    assert meta["cell"] == "tsla_main" and len(meta["prompt_sha256"]) == 64
    # FinMem's test period starts 2022-10-06; 50 decisions end on its 50th trading day
    assert meta["decision_days"] == {"first": "2022-10-06", "last": "2022-12-15"}
    assert meta["window"] == {"start": "2022-10-06", "end": "2023-04-10"}
    series = pd.read_parquet(folder / "steps.parquet")
    assert len(series) == 50 and series["valid"].all()
    assert series["date"].iloc[0] == pd.Timestamp("2022-10-06")
    trace = trace_lines(folder)
    assert [t["step"] for t in trace] == list(range(50))
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["guards"]["steps"] == 50 and metrics["guards"]["nudges"] == 0
    assert metrics["total_return"] == metrics["scores"]["strategy"]["cum_return"]


def test_rescoring_from_stored_series_equals_the_live_scores(default_run) -> None:
    run_dir, _ = default_run
    folders = sorted((run_dir / "episodes").iterdir())
    assert len(folders) == 24
    for folder in folders:
        live = json.loads((folder / "metrics.json").read_text())["scores"]
        assert _same(rescore_folder(folder), SingleStockScores.model_validate(live))


def test_baselines_share_the_interface(default_run) -> None:
    run_dir, _ = default_run
    folder = run_dir / "episodes" / "mom_risk_seeking_nflx_main_s0"
    meta = json.loads((folder / "episode.json").read_text())
    assert meta["kind"] == "baseline" and meta["baseline"] == {"name": "momentum", "args": {}}
    series = pd.read_parquet(folder / "steps.parquet")
    assert (series["attempts"] == 0).all() and series["tokens_in"].isna().all()


def test_blinded_requests_carry_no_real_ticker_or_date(default_run, ss_dataset_dir) -> None:
    _, requests = default_run
    ds = load_dataset(ss_dataset_dir)
    symbols = [str(s) for s in ds.panel.symbols]
    text = "\n".join(json.dumps(r.body, ensure_ascii=False) for r in requests)
    assert find_leaks(text, symbols, ds.panel.dates, True, True) == []
    assert "asset_" in text and "day_+49" in text


def test_report_has_a_section_per_persona(default_run) -> None:
    run_dir, _ = default_run
    html = build_report(run_dir).read_text()
    for persona in ("risk_seeking", "risk_averse", "adaptive"):
        assert f"Single-stock persona · {persona}" in html


@pytest.mark.parametrize("level", MASK_LEVELS)
def test_every_mask_level_hides_what_it_promises(
    ss_dataset_dir: Path, tmp_path: Path, level: str
) -> None:
    """One run per level, so each request's level is known by construction."""
    ds = load_dataset(ss_dataset_dir)
    symbols = [str(s) for s in ds.panel.symbols]
    with LoopbackServer(responder=trader) as server:
        spec = spec_dict(
            ss_dataset_dir,
            server.openai_url,
            symbols=["NVDA"],
            personas=["adaptive"],
            episode_length=3,
        )
        spec["masks"] = [level]
        spec["agents"] = spec["agents"][:1]
        asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path / "run"))
        requests = list(server.requests)
    assert len(requests) == 3
    text = "\n".join(json.dumps(r.body, ensure_ascii=False) for r in requests)
    found = find_leaks(text, symbols, ds.panel.dates, hides_stocks(level), hides_dates(level))
    assert found == [], level
    shown = find_leaks(text, symbols, ds.panel.dates, True, True)
    assert bool({s for s in shown if s in symbols}) != hides_stocks(level)  # NVDA iff shown
    assert any(s not in symbols for s in shown) != hides_dates(level)  # real dates iff shown


def test_a_killed_episode_resumes_identically(ss_dataset_dir: Path, tmp_path: Path) -> None:
    with LoopbackServer(responder=trader) as server:
        spec = spec_dict(
            ss_dataset_dir,
            server.openai_url,
            symbols=["TSLA"],
            personas=["adaptive"],
            episode_length=10,
        )
        spec["agents"] = spec["agents"][:1]
        asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path / "a"))
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    folder_a = next((tmp_path / "a" / "episodes").iterdir())
    folder_b = tmp_path / "b" / "episodes" / folder_a.name
    _kill_after(folder_b, steps=4)
    spec["cache"] = {"mode": "replay"}  # resumed steps must ask exactly what the first run asked
    with LoopbackServer(responder=trader) as server:
        spec["agents"][0]["base_url"] = server.openai_url
        asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path / "b"))
        assert server.requests == []
    for name in ("steps.parquet", "metrics.json", "trace.jsonl.zst", "progress.jsonl"):
        assert (folder_a / name).read_bytes() == (folder_b / name).read_bytes(), name


def _kill_after(folder: Path, steps: int) -> None:
    """Leave the folder as a kill during step `steps` would: a torn progress line."""
    progress = (folder / "progress.jsonl").read_text().splitlines(keepends=True)
    (folder / "progress.jsonl").write_text("".join(progress[:steps]) + progress[steps][:40])
    trace = trace_bytes(folder).decode().splitlines(keepends=True)
    (folder / "trace.jsonl").write_text("".join(trace[: steps + 1]))
    for name in ("steps.parquet", "metrics.json"):
        (folder / name).unlink()
    meta = json.loads((folder / "episode.json").read_text())
    (folder / "episode.json").write_text(json.dumps({**meta, "status": "running"}))
