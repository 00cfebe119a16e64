"""The strict answer-letter parser of no-tools replies (forms documented in eval_parse)."""

from __future__ import annotations

import pytest

from tradebench.benchmarks.mcq.eval.parse import parse_letter


@pytest.mark.parametrize(
    ("reply", "letter"),
    [
        ("Answer: B", "B"),
        ("Let me count the crossings.\n\nThere are 7.\nAnswer: D", "D"),
        ("answer: c", "C"),
        ("**Answer:** B", "B"),
        ("### Final answer: A", "A"),
        ("The answer is (C)", "C"),
        ("Answer = [A]", "A"),
        ("Answer: B) 1,234.57", "B"),
        ("Answer: B - 12.5%", "B"),
        ("Answer: C.", "C"),
        ("B", "B"),
        ("(B)", "B"),
        ("  B.  ", "B"),
        ("**D**", "D"),
    ],
)
def test_accepted_forms(reply, letter):
    assert parse_letter(reply) == letter


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "I think it is B",  # no answer line
        "Answer: B\nbecause the cash was lower",  # the final line decides
        "Answer: A or B",  # two letters
        "Answer: Buy",  # a letter glued to a word
        "Answer: E",  # not an option
        "b",  # a lower-case lone letter is also a word
        "B\nC",  # two lone letters
        "\\boxed{B}",
    ],
)
def test_refused_forms(reply):
    assert parse_letter(reply) is None
