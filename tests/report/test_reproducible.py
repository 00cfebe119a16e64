"""The report is a function of the run's records: two builds are byte-identical, a replay
from the cache into another folder of the same name gives the same bytes, plot ids are
seeded, and every table sits in a horizontally scrolling wrapper."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from tests.report.conftest import ModelRun
from tradebench.benchmarks import build_report
from tradebench.report.html import CSS

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.fixture(scope="module")
def page(model_run: ModelRun) -> str:
    return build_report(model_run.live).read_text(encoding="utf-8")


def test_two_builds_are_byte_identical(model_run: ModelRun, tmp_path: Path) -> None:
    first = build_report(model_run.live).read_bytes()
    copy = tmp_path / "elsewhere" / model_run.live.name  # same name, another path
    shutil.copytree(model_run.live, copy)
    assert build_report(model_run.live).read_bytes() == first
    assert build_report(copy).read_bytes() == first
    assert str(model_run.live.parent).encode() not in first  # no absolute path


def test_a_replayed_run_reports_byte_identically(model_run: ModelRun) -> None:
    live, replay = (yaml.safe_load((d / "spec.yaml").read_text()) for d in model_run.paths)
    assert live != replay  # the replay's spec differs in transport: cache mode, endpoint
    assert live["cache"]["mode"] == "readwrite" and replay["cache"]["mode"] == "replay"
    original = build_report(model_run.live).read_bytes()
    assert build_report(model_run.replay).read_bytes() == original


def test_plot_ids_are_seeded_and_unique(page: str) -> None:
    assert not UUID.search(page)
    ids = re.findall(r'<div id="([^"]+)" class="plotly-graph-div"', page)
    assert len(ids) >= 3 and len(set(ids)) == len(ids)
    assert all(i.startswith("fig-") for i in ids)
    assert re.findall(r'Plotly\.newPlot\(\s*"([^"]+)"', page) == ids


def test_every_table_scrolls_horizontally(page: str) -> None:
    assert re.search(r"\.table-wrap\{[^}]*overflow-x:auto", CSS)
    assert CSS in page
    tables = page.count("<table>")
    assert tables > 10 and page.count('<div class="table-wrap"><table>') == tables
    # the widest one: the model-episode counts, 13 columns
    section = page[page.index('id="model-episodes"') :]
    head = re.search(r"<thead><tr>(.*?)</tr></thead>", section).group(1)
    assert head.count("<th>") == 13
