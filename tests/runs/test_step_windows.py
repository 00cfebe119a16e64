"""A model worker's steps reach the driver in windows (`ray.worker.merged`): the driver's
copy of the journal, built from the merged deltas, is byte for byte the worker's journal,
and counts every step once. No cluster: the worker's tail, the merge and the driver's
append are the functions the Ray executor runs on each side."""

from __future__ import annotations

import json
from pathlib import Path

from tradebench.runs.ray.executor import append_delta
from tradebench.runs.ray.worker import JOURNAL_FILES, JournalTail, StepDelta, merged
from tradebench.runs.records import PROGRESS_FILE, TRACE_FILE


def _step(folder: Path, i: int, traced: bool) -> None:
    """What a step appends: a trace line (model steps) and then its progress line."""
    if traced:
        with open(folder / TRACE_FILE, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"step": i, "messages": [f"step {i} text"]}) + "\n")
    with open(folder / PROGRESS_FILE, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"step": i, "traced": traced}) + "\n")


def test_windows_of_steps_rebuild_the_journal_exactly(tmp_path: Path) -> None:
    worker, driver = tmp_path / "worker", tmp_path / "driver"
    worker.mkdir()
    driver.mkdir()
    _step(worker, 0, True)  # the checkpoint the attempt starts from, which the driver holds
    for name in JOURNAL_FILES:
        (driver / name).write_bytes((worker / name).read_bytes())
    tail = JournalTail(worker)
    windows = [[1, 2, 3], [4], [5, 6]]  # steps completed within each window
    counted = 0
    for window in windows:
        deltas: list[StepDelta] = []
        for i in window:
            _step(worker, i, traced=i != 5)  # a step without a trace line in a window
            deltas.append(tail.delta())
        message = merged(deltas)
        append_delta(driver, message)
        counted += message.steps
    assert counted == 6
    for name in JOURNAL_FILES:
        assert (driver / name).read_bytes() == (worker / name).read_bytes(), name
    lines = (driver / PROGRESS_FILE).read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["step"] for line in lines] == list(range(7))
