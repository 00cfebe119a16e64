"""Mining's building blocks: reply blocks, distractors, well-posedness, code failures."""

from __future__ import annotations

import asyncio
import random
import re

import pytest

from tradebench.benchmarks.mcq.mine.parse import (
    Blocks,
    MalformedReply,
    parse_blocks,
    question_sha256,
)
from tradebench.benchmarks.mcq.mine.verify import (
    Rejected,
    Verified,
    jitter_values,
    verify,
    well_posed,
)
from tradebench.sandbox import SandboxLimits

SHORT = SandboxLimits(timeout_s=1.5, cpu_s=5)


def test_blocks_are_read_with_fences_and_closing_markers():
    text = (
        "Sure!\n<<<QUESTION>>>\nHow many bars?\n<<<CODE>>>\n```python\nprint(3)\n```\n"
        "<<<RATIONALE>>>\nCounting needs the file.\n<<<END>>>\n"
    )
    assert parse_blocks(text) == Blocks("How many bars?", "print(3)\n", "Counting needs the file.")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("<<<QUESTION>>>\nq\n<<<RATIONALE>>>\nr", "missing <<<CODE>>> block"),
        ("no blocks at all", "missing <<<QUESTION>>>, <<<CODE>>>, <<<RATIONALE>>> block"),
        ("<<<QUESTION>>>\n\n<<<CODE>>>\nx\n<<<RATIONALE>>>\nr", "empty <<<QUESTION>>> block"),
        ("<<<QUESTION>>>a<<<QUESTION>>>b<<<CODE>>>c<<<RATIONALE>>>d", "more than once"),
    ],
)
def test_malformed_replies_say_why(text, reason):
    with pytest.raises(MalformedReply, match=reason.replace("<", r"\<").replace(">", r"\>")):
        parse_blocks(text)


def test_question_hash_ignores_whitespace_and_case():
    assert question_sha256("Mean  close?\n") == question_sha256("mean close?")
    assert question_sha256("mean close?") != question_sha256("median close?")


def test_jitter_keeps_the_answer_format_and_the_papers_band():
    """Multiplicative 0.7-1.3 with jitter: every value 7-33% from the answer, 20% on average."""
    grouped = jitter_values("1,234.50", random.Random(0))
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})*\.\d\d", v) for v in grouped)
    percent = jitter_values("12.5%", random.Random(1))
    assert percent and all(re.fullmatch(r"\d+\.\d%", v) for v in percent)
    assert jitter_values("2021-03-04", random.Random(3)) == []
    assert jitter_values("40", random.Random(2)) == jitter_values("40", random.Random(2))
    distances = [
        abs(float(v.replace(",", "")) - 1234.5) / 1234.5
        for seed in range(50)
        for v in jitter_values("1,234.50", random.Random(seed))
    ]
    assert len(distances) > 1000 and min(distances) >= 0.07 and max(distances) <= 0.33
    assert abs(sum(distances) / len(distances) - 0.20) < 0.01


def test_well_posedness():
    assert well_posed("q", ["1", "2", "3", "4"], "2") is None
    assert well_posed(" ", ["1", "2", "3", "4"], "2") == "empty question text"
    assert well_posed("q", ["1", "2", "2", "4"], "2") == "options are not distinct"
    assert well_posed("q", ["1", "", "3", "4"], "1") == "fewer than four non-empty options"
    assert well_posed("q", ["1", "2", "3", "4"], "5") == "not exactly one correct option"


def _verify(code: str, limits: SandboxLimits = SHORT) -> Verified | Rejected:
    return asyncio.run(verify(Blocks("q?", code, "r"), 7, {}, limits))


def test_distractors_from_reseeded_runs():
    result = _verify("import os\nprint(int(os.environ['MCQ_SEED']) % 1000)\n")
    assert isinstance(result, Verified) and result.source == "seeds"
    assert result.answer_value == "7" and result.options[result.answer] == "7"
    assert sorted(result.options.values()) == sorted(["7", "16", "25", "34"])  # 7 + 1009k
    assert [r.seed for r in result.runs] == [7, 1016, 2025, 3034]


def test_seed_independent_text_cannot_get_distractors():
    result = _verify("print('yes')\n")
    assert isinstance(result, Rejected) and result.outcome == "ill_posed"
    assert result.reason == "fewer than three distinct distractors (0 found)"
    assert len(result.runs) == 9


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("import sys\nsys.exit(3)\n", "exit code 3: no error output"),
        ("print('')\n", "printed nothing"),
        ("while True:\n    pass\n", "timed out after 1.5 s"),
    ],
)
def test_failing_code_is_rejected(code, reason):
    result = _verify(code)
    assert isinstance(result, Rejected) and result.outcome == "failed_code"
    assert result.reason.startswith(reason)
