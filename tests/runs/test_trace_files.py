"""Traces: fsynced JSONL while an episode runs, one lossless zstd file once it is done.

Oracles are independent of the code under test: the JSONL bytes the journal wrote, a
second zstd implementation (the `zstandard` package or the `zstd` binary, where present) to
decompress,
a clean run to compare a killed-and-resumed one with, and the report of the same run in the
old layout (`trace.jsonl` only).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import yaml

from tests.benchmarks.portfolio.conftest import spec_dict, trader
from tests.runs.traces import without_latency
from tradebench.benchmarks import build_report, run_spec
from tradebench.errors import DataError
from tradebench.llm.loopback import LoopbackServer
from tradebench.runs.journal import Journal
from tradebench.runs.records import TRACE_FILE, TRACE_ZST_FILE
from tradebench.runs.spec import RunSpec
from tradebench.runs.trace import compact_trace, trace_bytes, trace_lines

PROMPT = "Du bist Portfoliomanager. 规则: T+1, lots of 100 — ±9.5% limits. " * 40


def _unzstd(path: Path) -> bytes:
    """Decompress with an implementation other than the writer's: the `zstandard` package
    or the `zstd` binary when present, else pyarrow's streaming decoder."""
    try:
        import zstandard
    except ImportError:
        zstd = shutil.which("zstd")
        if zstd is None:
            with pa.input_stream(str(path), compression="zstd") as stream:
                return stream.read()
        return subprocess.run([zstd, "-dc", str(path)], capture_output=True, check=True).stdout
    with path.open("rb") as fh:
        return zstandard.ZstdDecompressor().stream_reader(fh).read()


def _journal(folder: Path, steps: int, seed: int = 1337) -> Journal:
    """A journal with `steps` realistic steps: a long repeated prompt, varied numbers."""
    rng = np.random.default_rng(seed)
    journal = Journal(folder)
    for i in range(steps):
        trace = {
            "messages": [
                {"role": "system", "content": PROMPT},
                {
                    "role": "user",
                    "content": f"Step {i + 1}: "
                    + ", ".join(
                        f"asset_{int(a):04d} {x:.4f}"
                        for a, x in zip(
                            rng.integers(0, 300, 40), rng.normal(0, 0.02, 40), strict=True
                        )
                    ),
                },
            ],
            "model_calls": [{"latency_s": float(rng.uniform(0, 1)), "usage": {"in": int(i)}}],
        }
        journal.append(i, {"step": i, "nav": float(1e6 + i)}, trace)
    return journal


def test_compaction_is_lossless_and_small(tmp_path: Path) -> None:
    journal = _journal(tmp_path, 60)
    original = journal.trace_path.read_bytes()
    packed = compact_trace(tmp_path)
    assert packed == tmp_path / TRACE_ZST_FILE
    assert not (tmp_path / TRACE_FILE).exists()
    assert _unzstd(packed) == original
    assert trace_bytes(tmp_path) == original
    assert trace_lines(tmp_path) == [json.loads(x) for x in original.decode().splitlines()]
    assert packed.stat().st_size * 5 < len(original)
    assert compact_trace(tmp_path) == packed  # idempotent: nothing left to compact


def test_resume_after_compaction_continues_the_same_journal(tmp_path: Path) -> None:
    journal = _journal(tmp_path, 6)
    original = journal.trace_path.read_bytes()
    compact_trace(tmp_path)  # done, then killed before the record said so
    lines = Journal(tmp_path).restore()
    assert [x["step"] for x in lines] == list(range(6))
    assert (tmp_path / TRACE_FILE).read_bytes() == original
    assert not (tmp_path / TRACE_ZST_FILE).exists()
    Journal(tmp_path).append(6, {"step": 6}, {"messages": []})
    after = (tmp_path / TRACE_FILE).read_bytes().decode().splitlines()
    assert after[:6] == original.decode().splitlines() and json.loads(after[6])["step"] == 6


def test_kill_during_compaction_keeps_the_journal(tmp_path: Path) -> None:
    journal = _journal(tmp_path, 4)
    original = journal.trace_path.read_bytes()
    shutil.copy(compact_trace(tmp_path), tmp_path / "kept.zst")
    journal.trace_path.write_bytes(original)  # both files: killed between rename and unlink
    (tmp_path / "kept.zst").rename(tmp_path / TRACE_ZST_FILE)
    (tmp_path / f".{TRACE_ZST_FILE}.tmp").write_bytes(b"\x28\xb5torn")  # an abandoned write
    assert len(Journal(tmp_path).restore()) == 4
    assert (tmp_path / TRACE_FILE).read_bytes() == original
    assert not (tmp_path / TRACE_ZST_FILE).exists()
    assert _unzstd(compact_trace(tmp_path)) == original


def test_restore_keeps_the_steps_both_files_hold(tmp_path: Path) -> None:
    """After a power loss either file may lack its newest lines (they are not fsynced per
    step) or end in zeros; the episode resumes from the steps both hold."""
    lost_trace, lost_progress, untraced = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    journal = _journal(lost_trace, 5)
    trace = journal.trace_path.read_bytes().splitlines(keepends=True)
    journal.trace_path.write_bytes(b"".join(trace[:3]) + b"\0" * 64)
    assert [x["step"] for x in Journal(lost_trace).restore()] == [0, 1, 2]
    assert journal.progress_path.read_bytes().count(b"\n") == 3
    assert journal.trace_path.read_bytes() == b"".join(trace[:3])

    journal = _journal(lost_progress, 5)
    progress = journal.progress_path.read_bytes().splitlines(keepends=True)
    journal.progress_path.write_bytes(b"".join(progress[:2]))
    assert [x["step"] for x in Journal(lost_progress).restore()] == [0, 1]
    assert journal.trace_path.read_bytes() == b"".join(trace[:2])

    journal = Journal(untraced)  # a rule-based episode writes no trace
    for i in range(4):
        journal.append(i, {"step": i}, None)
    assert [x["step"] for x in Journal(untraced).restore()] == [0, 1, 2, 3]

    journal = Journal(tmp_path / "d")  # a model that decides once, on the first day
    for i in range(4):
        journal.append(i, {"step": i}, {"messages": []} if i == 0 else None)
    assert [x["step"] for x in Journal(tmp_path / "d").restore()] == [0, 1, 2, 3]
    journal.trace_path.write_bytes(b"")  # its one trace line lost
    assert Journal(tmp_path / "d").restore() == []


def test_a_fresh_start_removes_both_forms(tmp_path: Path) -> None:
    journal = _journal(tmp_path, 3)
    compact_trace(tmp_path)
    journal.progress_path.unlink()
    assert Journal(tmp_path).restore() == []
    assert not (tmp_path / TRACE_FILE).exists() and not (tmp_path / TRACE_ZST_FILE).exists()


def test_a_corrupt_compressed_trace_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / TRACE_ZST_FILE).write_bytes(b"not zstd at all")
    with pytest.raises(DataError, match="not readable zstd"):
        trace_lines(tmp_path)


def _model_lines(run: Path) -> int:
    return sum(
        len(p.read_text().splitlines())
        for p in (run / "episodes").glob("scripted_*/progress.jsonl")
    )


@pytest.fixture(scope="module")
def killed_and_clean(cn_dataset_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """One model episode killed with SIGKILL mid-run and resumed, and the same run clean."""
    tmp = tmp_path_factory.mktemp("traces")
    with LoopbackServer(responder=trader, latency_s=0.1) as server:
        spec = spec_dict(cn_dataset_dir, server.openai_url, ["blinded"], ["open_research"])
        spec_file = tmp / "spec.yaml"
        spec_file.write_text(yaml.safe_dump(spec))
        killed = tmp / "killed"
        proc = subprocess.Popen(
            [sys.executable, "-m", "tradebench.cli", "run", str(spec_file), "-o", str(killed)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        while _model_lines(killed) < 2:  # bounded by the run itself, not a clock
            assert proc.poll() is None, "the run ended before it could be killed"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        loaded = RunSpec.model_validate(spec)
        asyncio.run(run_spec(loaded, killed))
        asyncio.run(run_spec(loaded, tmp / "clean"))
    return killed, tmp / "clean"


def test_killed_run_resumes_to_the_same_compressed_trace(killed_and_clean) -> None:
    killed, clean = killed_and_clean
    folders = sorted((clean / "episodes").glob("scripted_*"))
    assert len(folders) == 1
    for folder in folders:
        resumed = killed / "episodes" / folder.name
        for ep in (folder, resumed):
            assert (ep / TRACE_ZST_FILE).exists() and not (ep / TRACE_FILE).exists()
        a = [json.loads(x) for x in _unzstd(resumed / TRACE_ZST_FILE).decode().splitlines()]
        b = [json.loads(x) for x in _unzstd(folder / TRACE_ZST_FILE).decode().splitlines()]
        assert [x["step"] for x in a] == list(range(5))
        assert without_latency(a) == without_latency(b)


def test_report_reads_the_compressed_trace_as_it_read_the_old_layout(killed_and_clean) -> None:
    _, clean = killed_and_clean
    compressed = build_report(clean).read_text()
    assert "buy the top screened name" in compressed  # stated reasons come from the trace
    for folder in (clean / "episodes").glob("scripted_*"):
        data = _unzstd(folder / TRACE_ZST_FILE)
        (folder / TRACE_ZST_FILE).unlink()
        (folder / TRACE_FILE).write_bytes(data)  # a folder written before compaction
    assert build_report(clean).read_text() == compressed
