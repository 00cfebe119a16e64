"""The report's model-episode section on a real run: attempts, rejections with their codes
and the feedback the model was given, fallbacks, HTTP retries, sampled reasons; and in a
blinded episode's block nothing real (own patterns, not the masker's)."""

from __future__ import annotations

import html
import json
import re
from datetime import date
from pathlib import Path

import numpy as np
import pytest

from tests.report.conftest import ModelRun
from tests.report.model_run import AGENT, BUY_REASON, run, scripted, spec_dict
from tradebench.benchmarks import build_report
from tradebench.data import load_dataset
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.report.episodes import evenly_spaced

BLINDED = f"{AGENT} · memory_only · blinded · seed 0"
BRIGHT = f"{AGENT} · memory_only · bright · seed 0"
CODES = re.compile(r"(?<![A-Za-z0-9])(?:[A-Z]{2}\d{6}|\d{6}\.[A-Z]{2})(?![A-Za-z0-9])")
"""Exchange-prefixed or -suffixed six-digit codes (SH600000, 600000.SH)."""
DATES = (
    re.compile(r"(?<!\d)(\d{4})-(\d{1,2})-(\d{1,2})(?!\d)"),
    re.compile(r"(?<!\d)(\d{4})/(\d{1,2})/(\d{1,2})(?!\d)"),
    re.compile(r"(?<!\d)(\d{4})\.(\d{1,2})\.(\d{1,2})(?!\d)"),
    re.compile(r"(?<!\d)(\d{4})(\d{2})(\d{2})(?!\d)"),
)


def real_things(text: str, symbols: set[str], calendar: set[date]) -> list[str]:
    """Real symbols and real trading days written in `text` (any code-shaped token that is
    a dataset symbol, any date-shaped token that is a calendar day)."""
    found = [m for m in CODES.findall(text) if m in symbols or _as_prefixed(m) in symbols]
    found += [s for s in symbols if s in text]
    for pattern in DATES:
        for m in pattern.finditer(text):
            try:
                day = date(*(int(g) for g in m.groups()))
            except ValueError:
                continue
            if day in calendar:
                found.append(m.group(0))
    return found


def _as_prefixed(code: str) -> str:
    return f"{code[7:]}{code[:6]}" if "." in code else code


@pytest.fixture(scope="module")
def page(model_run: ModelRun) -> str:
    return build_report(model_run.live).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def known(model_run: ModelRun) -> tuple[set[str], set[date]]:
    ds = load_dataset(model_run.dataset)
    days = {np.datetime64(d, "D").item() for d in ds.panel.dates}
    return {str(s) for s in ds.panel.symbols}, days


def block(page: str, label: str) -> str:
    """One episode's collapsible block, by its label."""
    found = re.search(
        rf'<details class="episode" id="episode-\d+"><summary>{re.escape(html.escape(label))} '
        r"— .*?</details>",
        page,
        re.S,
    )
    assert found is not None, label
    return found.group(0)


def _episode_requests(model_run: ModelRun, masked: bool) -> list[RecordedRequest]:
    """The requests of one of the two episodes (told apart by the identifiers shown)."""
    out = []
    for req in model_run.requests:
        text = json.dumps(req.body)
        if ("Identifiers: asset_" in text) == masked:
            out.append(req)
    return out


def _feedback_sent(requests: list[RecordedRequest]) -> set[str]:
    """Every error message the model was sent (tool results and complaints)."""
    sent = set()
    for req in requests:
        for m in req.body["messages"]:
            content = str(m.get("content") or "")
            if content.startswith('{"error"'):
                sent.add(content)
    return sent


def test_blinded_episode_shows_attempts_rejections_feedback_and_reasons(
    page: str, model_run: ModelRun
) -> None:
    text = block(page, BLINDED)
    requests = _episode_requests(model_run, masked=True)
    assert len(requests) == 7  # 2 + 4 + 1 forced submissions: every one an attempt
    assert "submission attempts 7 · rejected 5 · fallbacks 1 · HTTP retries 0" in text
    for code in ("NOT_HELD", "SCHEMA", "MALFORMED_JSON", "NO_SUBMISSION"):
        assert f"<td>{code}</td>" in text
    feedback = _feedback_sent(requests)
    assert len(feedback) == 4  # over the wire; the last step-2 reply ended the loop
    for sent in feedback:
        assert html.escape(sent) in text  # shown exactly as the model was sent it
    row = r'<tr><td class="num">(\d)</td><td class="num">(\d)</td><td>[a-z_]+'
    rejected = re.findall(row, text)
    assert rejected == [("1", "1"), ("2", "1"), ("2", "2"), ("2", "3"), ("2", "4")]  # step, try
    assert "&quot;attempts_left&quot;:0}}" in text  # the fifth, from the trace
    assert "[NOT_HELD] you hold no such stock to sell" in text
    assert html.escape(BUY_REASON) in text and BUY_REASON not in text  # escaped
    rows = re.findall(r'<tr><td class="num">(\d)</td><td class="reason">step \d: start', text)
    assert rows == ["1", "3"]  # step 2 fell back: reasons of steps 1 and 3
    assert re.search(r"step 3: start a small position in asset_\d{4} and keep", text)


def test_blinded_block_holds_no_real_symbol_or_date(
    page: str, known: tuple[set[str], set[date]]
) -> None:
    symbols, calendar = known
    assert real_things(block(page, BLINDED), symbols, calendar) == []
    # the scan does find real things: the bright block names real codes, the page real days
    assert real_things(block(page, BRIGHT), symbols, calendar)
    assert any(re.match(r"\d{4}-", t) for t in real_things(page, symbols, calendar))


def test_summary_table_row_per_episode(page: str) -> None:
    section = page[page.index('id="model-episodes"') :]
    section = section[: section.index("</section>")]
    table = section[: section.index("<details")]
    rows = re.findall(r"<tr><td>([^<]+)</td>((?:<td[^>]*>[^<]*</td>)+)</tr>", table)
    assert [html.unescape(r[0]) for r in rows] == [BLINDED, BRIGHT]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", rows[0][1])
    # steps, attempts, rejected, fallbacks, fallback steps, unreadable, HTTP retries
    assert cells[:7] == ["3", "7", "5", "1", "2", "2", "0"]


def test_http_retries_are_shown(synth_dataset_dir: Path, tmp_path: Path) -> None:
    with LoopbackServer(responder=scripted) as server:
        server.push(Reply.error(429, retry_after=0.01))  # the first request, retried
        spec = spec_dict(synth_dataset_dir, server.openai_url)
        spec["masks"], spec["agents"] = ["blinded"], spec["agents"][:1]
        page = build_report(run(spec, tmp_path / "run")).read_text(encoding="utf-8")
    assert "fallbacks 1 · HTTP retries 1</summary>" in block(page, BLINDED)


def test_evenly_spaced_picks_first_last_and_between() -> None:
    assert evenly_spaced(0, 3) == [] and evenly_spaced(5, 0) == []
    assert evenly_spaced(1, 3) == [0] and evenly_spaced(2, 3) == [0, 1]
    assert evenly_spaced(10, 3) == [0, 4, 9] and evenly_spaced(10, 1) == [0]
    for n in range(1, 30):
        for k in range(1, 6):
            picks = evenly_spaced(n, k)
            assert picks == sorted(set(picks)) and len(picks) == min(n, k)
            assert picks[0] == 0 and (k == 1 or picks[-1] == n - 1)
