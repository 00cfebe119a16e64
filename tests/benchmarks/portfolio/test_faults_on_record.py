"""Endpoint faults are on record: a short portfolio run against a loopback server that
answers 429 and 503 on step 2 and drops the connection on step 3 shows them on exactly
those steps, in the episode's panel, in the summary and in the report; a resumed or
replayed run meets no fault and gets the same replies."""

from __future__ import annotations

import asyncio
import html
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.benchmarks.portfolio.conftest import spec_dict, trader
from tradebench.benchmarks import build_report, run_spec
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.metrics.reliability import FAULT_COLUMNS
from tradebench.runs.spec import RunSpec
from tradebench.runs.trace import trace_bytes, trace_lines

STEP = re.compile(r"Step (\d+) of (\d+)\.")
COUNTS = [c for c in FAULT_COLUMNS if not c.endswith("_s")]
CELL = "scripted · memory_only · blinded"


def _step(request: RecordedRequest) -> int:
    """The decision step a request belongs to, from its user message."""
    for message in (request.body or {}).get("messages", []):
        if message.get("role") == "user" and (found := STEP.search(message["content"])):
            return int(found.group(1))
    raise AssertionError("no step label in the request")


def faulty(faults: dict[int, list[Reply]]):
    """The scripted trader, except that step N's first requests get `faults[N]`."""
    pending = {step: list(replies) for step, replies in faults.items()}

    def respond(request: RecordedRequest) -> Reply:
        queue = pending.get(_step(request))
        return queue.pop(0) if queue else trader(request)

    return respond


FAULTS = {
    2: [Reply.error(429, retry_after=0.01), Reply.error(503, retry_after=0.02)],
    3: [Reply.drop()],
}


def _spec(dataset: Path, url: str) -> dict:
    spec = spec_dict(dataset, url, ["blinded"], ["memory_only"], end="2024-03-05")
    spec["agents"][0] |= {"timeout_s": 10, "max_attempts": 3}  # per-agent transport limits
    return spec


def _run(spec: dict, out: Path) -> pd.DataFrame:
    return pd.read_parquet(asyncio.run(run_spec(RunSpec.model_validate(spec), out)))


@pytest.fixture(scope="module")
def live(cn_dataset_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("faults")
    with LoopbackServer(responder=faulty(FAULTS)) as server:
        spec = _spec(cn_dataset_dir, server.openai_url)
        summary = _run(spec, root / "run")
        requests = list(server.requests)
    return root, spec, summary, requests


def _folder(run: Path, prefix: str) -> Path:
    return next((run / "episodes").glob(f"{prefix}_*"))


def _trace(folder: Path) -> list[dict]:
    return trace_lines(folder)


def _faults_table(page: str) -> tuple[list[str], dict[str, list[str]]]:
    """Headers and rows (by first cell) of the report's endpoint-faults table."""
    section = re.search(r'<section id="endpoint-faults">(.*?)</section>', page, re.S)
    assert section, "the report has no endpoint-faults section"
    body = section.group(1)
    heads = [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", body)]
    rows = {}
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S):
        cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        if cells:
            rows[cells[0]] = cells
    return heads, rows


def test_faults_land_on_exactly_the_steps_that_met_them(live) -> None:
    root, _, _, requests = live
    assert [_step(r) for r in requests] == [1, 2, 2, 2, 3, 3]
    replies = ["tool_calls", "error", "error", "tool_calls", "drop", "tool_calls"]
    assert [r.reply for r in requests] == replies
    steps = pd.read_parquet(_folder(root / "run", "scripted") / "steps.parquet")
    assert len(steps) == 3
    assert list(steps["faults_429"]) == [0, 1, 0]
    assert list(steps["faults_5xx"]) == [0, 1, 0]
    assert list(steps["faults_connection"]) == [0, 0, 1]
    assert list(steps["faults_timeout"]) == [0, 0, 0]
    assert list(steps["faults_other"]) == [0, 0, 0]
    assert list(steps["http_retries"]) == [0, 2, 1]
    assert list(steps["retries"]) == [0, 0, 0]  # submission retries: a different thing
    wait = steps["retry_wait_s"].to_numpy()
    assert wait[0] == 0.0 and wait[1] >= 0.01 + 0.02 and wait[2] >= 0.5  # default backoff
    assert wait[1] == pytest.approx(0.03)  # exactly the Retry-Afters honoured
    lost = steps["failed_attempt_s"].to_numpy()
    assert lost[0] == 0.0 and lost[1] > 0 and lost[2] > 0
    for col in COUNTS:
        assert steps[col].dtype == "int64", col
    # a rule agent has no endpoint: null, not zero
    rule = pd.read_parquet(_folder(root / "run", "ew") / "steps.parquet")
    assert rule[list(FAULT_COLUMNS)].isna().all().all()
    # the trace says which call met them
    trace = _trace(_folder(root / "run", "scripted"))
    per_call = [[c["faults"]["http_429"] for c in t["model_calls"]] for t in trace]
    assert per_call == [[0], [1], [0]]


def test_episode_summary_and_report_totals_are_the_step_sums(live) -> None:
    root, _, summary, _ = live
    folder = _folder(root / "run", "scripted")
    steps = pd.read_parquet(folder / "steps.parquet")
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["schema_version"] == 3
    for col in FAULT_COLUMNS:
        assert metrics[col] == pytest.approx(steps[col].sum()), col
    assert (metrics["faults_429"], metrics["faults_5xx"], metrics["faults_connection"]) == (1, 1, 1)
    assert metrics["http_retries"] == 3 and metrics["faults_timeout"] == 0
    row = summary[summary["kind"] == "llm"].iloc[0]
    for col in FAULT_COLUMNS:
        assert row[col] == pytest.approx(metrics[col]), col
    rule = summary[summary["kind"] != "llm"]
    assert rule[list(FAULT_COLUMNS)].isna().all().all()
    assert (
        json.loads((_folder(root / "run", "ew") / "metrics.json").read_text())["faults_429"] is None
    )

    copy = root / "report_copy"
    shutil.copytree(root / "run", copy)
    page = build_report(copy).read_text()
    heads, rows = _faults_table(page)
    cells = dict(zip(heads, rows[CELL], strict=True))
    assert cells["faults_429"] == "1" and cells["faults_5xx"] == "1"
    assert cells["faults_connection"] == "1" and cells["faults_timeout"] == "0"
    assert cells["http_retries"] == "3" and cells["episodes"] == "1"
    assert float(cells["retry_wait_s"]) >= 0.5 + 0.03
    assert "ew" not in {r.split(" ")[0] for r in rows}  # rule agents are not endpoint cells


def _kill_after(folder: Path, steps: int) -> None:
    """Leave the folder as a kill during step `steps + 1` would: a torn progress line."""
    progress = (folder / "progress.jsonl").read_text().splitlines(keepends=True)
    (folder / "progress.jsonl").write_text("".join(progress[:steps]) + progress[steps][:40])
    trace = trace_bytes(folder).decode().splitlines(keepends=True)
    (folder / "trace.jsonl").write_text("".join(trace[: steps + 1]))
    meta = json.loads((folder / "episode.json").read_text())
    (folder / "episode.json").write_text(json.dumps({**meta, "status": "running"}))


def _replay(spec: dict, cache: Path) -> dict:
    out = json.loads(json.dumps(spec))
    out["cache"] = {"mode": "replay", "path": str(cache)}
    out["agents"][0]["base_url"] = "http://127.0.0.1:9/v1"  # nothing listens there
    return out


def _same_replies(a: Path, b: Path) -> None:
    """Same conversations, orders and book: the replies did not change."""
    assert [t["messages"] for t in _trace(a)] == [t["messages"] for t in _trace(b)]
    for name in ("orders.parquet", "positions.parquet"):
        pd.testing.assert_frame_equal(pd.read_parquet(a / name), pd.read_parquet(b / name))
    steps_a, steps_b = (pd.read_parquet(f / "steps.parquet") for f in (a, b))
    rest = [c for c in steps_a.columns if c not in FAULT_COLUMNS]
    pd.testing.assert_frame_equal(steps_a[rest], steps_b[rest])


def test_a_resumed_run_keeps_recorded_faults_and_replayed_calls_meet_none(
    live, tmp_path: Path
) -> None:
    root, spec, _, _ = live
    shutil.copytree(root / "run", tmp_path / "run")
    folder = _folder(tmp_path / "run", "scripted")
    _kill_after(folder, steps=2)  # steps 1-2 journaled, step 3 to redo
    _run(_replay(spec, root / "run" / "cache.sqlite"), tmp_path / "run")
    steps = pd.read_parquet(folder / "steps.parquet")
    assert list(steps["faults_429"]) == [0, 1, 0] and list(steps["faults_5xx"]) == [0, 1, 0]
    assert list(steps["faults_connection"]) == [0, 0, 0]  # step 3 came from the cache
    assert list(steps["http_retries"]) == [0, 2, 0] and steps["retry_wait_s"].iloc[2] == 0.0
    _same_replies(_folder(root / "run", "scripted"), folder)


def test_a_replayed_run_has_zero_faults_and_the_same_replies(live, tmp_path: Path) -> None:
    root, spec, _, _ = live
    summary = _run(_replay(spec, root / "run" / "cache.sqlite"), tmp_path / "replay")
    folder = _folder(tmp_path / "replay", "scripted")
    steps = pd.read_parquet(folder / "steps.parquet")
    assert (steps[list(FAULT_COLUMNS)] == 0).all().all()
    assert all(c["faults"]["retries"] == 0 for t in _trace(folder) for c in t["model_calls"])
    row = summary[summary["kind"] == "llm"].iloc[0]
    assert row["http_retries"] == 0 and row["faults_429"] == 0 and row["retry_wait_s"] == 0.0
    _same_replies(_folder(root / "run", "scripted"), folder)
