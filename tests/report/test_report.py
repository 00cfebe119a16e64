"""`build_report`: one self-contained page, escaped text, every section present."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from plotly.offline import get_plotlyjs

from tests.report.run_folder import SCRIPT_REASON
from tradebench.errors import ConfigError
from tradebench.report import (
    DEFAULT_SECTIONS,
    ReportOptions,
    RunData,
    Section,
    build_report,
    load_run,
    render_report,
)


@pytest.fixture(scope="module")
def page(run_dir: Path) -> str:
    path = build_report(run_dir)
    assert path == run_dir / "report.html"
    return path.read_text(encoding="utf-8")


def test_plotly_is_inline_once_and_nothing_is_fetched(page: str) -> None:
    js = get_plotlyjs()
    assert page.count(js) == 1
    assert "<script src=" not in page.lower()
    assert not re.search(r"(src|href)=\"https?:", page.replace(js, ""))
    assert page.count("Plotly.newPlot(") >= 4  # equity x 2 modes, heatmap, rejections


def test_model_text_is_escaped(page: str) -> None:
    assert "<script>alert(1)" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; buy the dip &amp; hold" in page
    assert SCRIPT_REASON not in page
    assert "<h1>report &lt;test&gt; run</h1>" in page


def test_every_section_is_rendered(page: str) -> None:
    for title in (
        "Run overview",
        "Equity curves",
        "Metric panel",
        "Mode × mask matrix",
        "Rejected orders",
        "Tokens and cost",
        "Sampled order rationales",
    ):
        assert f"<h2>{title}</h2>" in page
    assert page.count("<table>") >= 9


def test_benchmark_row_rank_in_the_page(page: str, run_dir: Path) -> None:
    row = re.search(r'<tr class="benchmark"><td class="num">(\d+)</td><td>benchmark index', page)
    assert row is not None
    panel = page[page.index('id="metric-panel"') : page.index('id="mode-mask-matrix"')]
    # rank, agent, mode, mask, steps, n, flags, then the mean return; n of a
    # temperature-0 model with several seeds says so
    cells = re.findall(
        r'<tr[^>]*><td class="num">(\d+)</td>(?:<td>[^<]*</td>){3}<td class="num">[\d, –]+</td>'
        r'<td class="num">\d+(?: \(T=0\))?</td><td>[^<]*</td><td class="num">(-?[\d.]+)',
        panel,
    )
    assert "2 (T=0)" in panel  # the fixture's model ran two seeds at temperature 0
    ranks = [int(r) for r, _ in cells]
    rank = int(row.group(1))
    assert ranks == sorted(ranks)  # by rank, then by mean return within a rank
    for k in set(ranks):
        returns = [float(v) for r, v in cells if int(r) == k]
        assert returns == sorted(returns, reverse=True)
    # the episode folders' own metrics, not the page: the index ranks no worse than its
    # return-implied place (a rank only drops for a significant difference)
    summary = pd.read_parquet(run_dir / "summary.parquet")
    done = summary[summary["status"] == "done"]
    groups = done[done["kind"] != "benchmark"].groupby(["agent", "kind", "mode", "mask"])
    means = groups["total_return"].mean()
    index = done.loc[done["kind"] == "benchmark", "total_return"].mean()
    assert len(cells) == len(means) + 1 and 1 <= rank <= 1 + int((means > index).sum())


def test_report_without_summary_parquet_matches(
    raw_run_dir: Path, run_dir: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "run"
    shutil.copytree(raw_run_dir, copy)
    assert not (copy / "summary.parquet").exists()
    options = ReportOptions(samples_per_mask=3, sample_seed=1)
    without = render_report(load_run(copy), options)
    with_summary = render_report(load_run(run_dir), options)
    assert without == with_summary  # same folder name, seeded plot ids: the same bytes


def test_extra_sections_plug_in(run_dir: Path) -> None:
    def probe(run: RunData, options: ReportOptions) -> Section:
        return Section("Probe <x>", f"<p>{len(run.summary)} episodes</p>")

    def skipped(run: RunData, options: ReportOptions) -> None:
        return None

    page = render_report(load_run(run_dir), sections=(*DEFAULT_SECTIONS, probe, skipped))
    assert '<section id="probe-x"><h2>Probe &lt;x&gt;</h2><p>11 episodes</p></section>' in page


def test_missing_or_empty_run_folder(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        build_report(tmp_path / "missing")
    with pytest.raises(ConfigError, match="no episodes"):
        build_report(tmp_path)


def _subset(raw_run_dir: Path, out: Path, keep: tuple[str, ...]) -> Path:
    (out / "episodes").mkdir(parents=True)
    for folder in (raw_run_dir / "episodes").iterdir():
        if folder.name.startswith(keep):
            shutil.copytree(folder, out / "episodes" / folder.name)
    return out


def test_run_without_llm_or_orders_renders(raw_run_dir: Path, tmp_path: Path) -> None:
    run = _subset(raw_run_dir, tmp_path / "run", ("benchmark", "cash"))
    page = build_report(run).read_text(encoding="utf-8")
    assert "No finished LLM episodes in this run." in page
    assert "No LLM episodes in this run." in page
    assert "No orders yet." in page
    assert "No spec.yaml in the run folder." in page


def test_run_with_only_unfinished_episodes_renders(raw_run_dir: Path, tmp_path: Path) -> None:
    run = _subset(
        raw_run_dir,
        tmp_path / "run",
        ("llm-a_memory_only_bright_s2", "llm-a_memory_only_bright_s3"),
    )
    page = build_report(run).read_text(encoding="utf-8")
    assert page.count("No finished episodes yet.") == 3
    assert '<td>llm-a</td><td class="num">2</td><td class="num">5</td>' in page
