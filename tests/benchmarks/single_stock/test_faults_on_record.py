"""Endpoint faults are on record in a single-stock run: a timeout (the agent's own
`timeout_s`) on decision 2, a 502 and a 429 on decision 3, shown on exactly those steps of
the series, in the episode totals, the summary and the report; a resumed run keeps the
recorded faults and its replayed calls meet none."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.benchmarks.single_stock.conftest import spec_dict, trader
from tradebench.benchmarks import build_report, run_spec
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.metrics.reliability import FAULT_COLUMNS
from tradebench.runs.spec import RunSpec
from tradebench.runs.trace import trace_lines

DECISION = re.compile(r"decision (\d+) of (\d+)")
TIMEOUT_S = 1.5


def _step(request: RecordedRequest) -> int:
    for message in (request.body or {}).get("messages", []):
        if message.get("role") == "user" and (found := DECISION.search(message["content"])):
            return int(found.group(1))
    raise AssertionError("no decision label in the request")


def faulty(faults: dict[int, list[Reply]]):
    """The scripted trader, except that decision N's first requests get `faults[N]`."""
    pending = {step: list(replies) for step, replies in faults.items()}

    def respond(request: RecordedRequest) -> Reply:
        queue = pending.get(_step(request))
        return queue.pop(0) if queue else trader(request)

    return respond


FAULTS = {
    2: [Reply.slow(Reply.say("too late"), TIMEOUT_S + 1.0)],
    3: [Reply.error(502, retry_after=0.01), Reply.error(429, retry_after=0.01)],
}


def _spec(dataset: Path, url: str) -> dict:
    spec = spec_dict(dataset, url, symbols=["TSLA"], personas=["adaptive"], episode_length=3)
    spec["agents"][0] |= {"timeout_s": TIMEOUT_S, "max_attempts": 3}
    return spec


def _run(spec: dict, out: Path) -> pd.DataFrame:
    return pd.read_parquet(asyncio.run(run_spec(RunSpec.model_validate(spec), out)))


def _folder(run: Path, prefix: str) -> Path:
    return next((run / "episodes").glob(f"{prefix}_*"))


def _trace(folder: Path) -> list[dict]:
    return trace_lines(folder)


def test_single_stock_faults_on_record_and_a_resume_meets_none(
    ss_dataset_dir: Path, tmp_path: Path
) -> None:
    with LoopbackServer(responder=faulty(FAULTS)) as server:
        spec = _spec(ss_dataset_dir, server.openai_url)
        summary = _run(spec, tmp_path / "run")
        requests = list(server.requests)
    assert [_step(r) for r in requests] == [1, 2, 2, 3, 3, 3]
    folder = _folder(tmp_path / "run", "scripted")
    series = pd.read_parquet(folder / "steps.parquet")
    assert list(series["faults_timeout"]) == [0, 1, 0]
    assert list(series["faults_5xx"]) == [0, 0, 1] and list(series["faults_429"]) == [0, 0, 1]
    assert list(series["faults_connection"]) == [0, 0, 0]
    assert list(series["faults_other"]) == [0, 0, 0]
    assert list(series["http_retries"]) == [0, 1, 2]
    assert list(series["nudges"]) == [0, 0, 0]  # format nudges: a different thing
    assert str(series["http_retries"].dtype) == "Int64"
    lost, wait = series["failed_attempt_s"].to_numpy(), series["retry_wait_s"].to_numpy()
    assert lost[0] == 0.0 and lost[1] >= TIMEOUT_S  # waited out the agent's timeout
    assert wait[1] >= 0.5 and wait[2] == pytest.approx(0.02) and wait[2] >= 0.02
    rule = pd.read_parquet(_folder(tmp_path / "run", "mom") / "steps.parquet")
    assert rule[list(FAULT_COLUMNS)].isna().all().all()

    metrics = json.loads((folder / "metrics.json").read_text())
    for col in FAULT_COLUMNS:
        assert metrics[col] == pytest.approx(series[col].sum()), col
    assert metrics["faults_timeout"] == 1 and metrics["http_retries"] == 3
    row = summary[summary["kind"] == "llm"].iloc[0]
    for col in FAULT_COLUMNS:
        assert row[col] == pytest.approx(metrics[col]), col
    assert summary[summary["kind"] != "llm"][list(FAULT_COLUMNS)].isna().all().all()

    shutil.copytree(tmp_path / "run", tmp_path / "report")
    page = build_report(tmp_path / "report").read_text()
    section = re.search(r'<section id="endpoint-faults">(.*?)</section>', page, re.S)
    assert section and "scripted · adaptive · blinded" in section.group(1)
    cells = re.findall(r'<td class="num">([^<]*)</td>', section.group(1))
    assert cells[:7] == ["1", "1", "1", "1", "0", "0", "3"]  # episodes, 429, 5xx, timeout, ...

    # a kill during decision 3, resumed from the cache: decision 2's timeout stays on
    # record, decision 3 is replayed and meets no endpoint; no reply changes
    progress = (folder / "progress.jsonl").read_text().splitlines(keepends=True)
    (folder / "progress.jsonl").write_text("".join(progress[:2]))
    meta = json.loads((folder / "episode.json").read_text())
    (folder / "episode.json").write_text(json.dumps({**meta, "status": "running"}))
    live_trace = _trace(folder)
    spec["cache"] = {"mode": "replay"}
    spec["agents"][0]["base_url"] = "http://127.0.0.1:9/v1"  # nothing listens there
    _run(spec, tmp_path / "run")
    resumed = pd.read_parquet(folder / "steps.parquet")
    assert list(resumed["faults_timeout"]) == [0, 1, 0]
    assert list(resumed["http_retries"]) == [0, 1, 0] and resumed["retry_wait_s"].iloc[2] == 0
    rest = [c for c in series.columns if c not in FAULT_COLUMNS]
    pd.testing.assert_frame_equal(resumed[rest], series[rest])
    assert [t["messages"] for t in _trace(folder)] == [t["messages"] for t in live_trace]
