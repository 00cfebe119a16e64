"""The deterministic mandate compiler: every phrase of the documented grammar, and the
errors for everything else."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tradebench.errors import ConfigError, MandateError
from tradebench.risk import RiskConstraints, compile_mandate, render_constraints
from tradebench.risk.grammar import split_sentences

DOCS = Path(__file__).resolve().parents[2] / "docs"
TABLE_MARK = "<!-- mandate-grammar -->"

PHRASES = [
    ("Long only.", {"long_only": True}),
    ("long-only", {"long_only": True}),
    ("No short selling.", {"long_only": True}),
    ("No shorting", {"long_only": True}),
    ("Short positions allowed.", {"long_only": False}),
    ("Long/short.", {"long_only": False}),
    ("No more than 10% in any single name.", {"max_weight": 0.1}),
    ("At most 7.5 percent per stock.", {"max_weight": 0.075}),
    ("Up to 5% in each position", {"max_weight": 0.05}),
    ("A maximum of 12% per holding.", {"max_weight": 0.12}),
    ("Each name at most 8%.", {"max_weight": 0.08}),
    ("At least 2% in each name held.", {"min_position": 0.02}),
    ("Minimum of 1% per position", {"min_position": 0.01}),
    ("At most 30% per sector.", {"max_sector_weight": 0.3}),
    ("No more than 25% in any sector", {"max_sector_weight": 0.25}),
    (
        "At most 40% in the Information Technology sector.",
        {"sector_caps": {"Information Technology": 0.4}},
    ),
    ("no more than 5% in Energy sector", {"sector_caps": {"Energy": 0.05}}),
    ("Hold between 5 and 15 names.", {"min_names": 5, "max_names": 15}),
    ("Hold exactly 10 stocks.", {"min_names": 10, "max_names": 10}),
    ("Hold at least 20 names.", {"min_names": 20}),
    ("At most 30 positions.", {"max_names": 30}),
    ("Hold at most 1 name.", {"max_names": 1}),
    ("Keep at least 5% in cash.", {"cash_floor": 0.05}),
    ("Keep at most 20% in cash", {"cash_ceiling": 0.2}),
    ("Cash at least 2%.", {"cash_floor": 0.02}),
    ("Keep between 5% and 20% in cash.", {"cash_floor": 0.05, "cash_ceiling": 0.2}),
    ("Cash between 0% and 10%.", {"cash_floor": 0.0, "cash_ceiling": 0.1}),
    ("Turnover at most 40% per rebalance.", {"max_turnover": 0.4}),
    ("Turnover of no more than 25%", {"max_turnover": 0.25}),
    ("At most 50% turnover each rebalance.", {"max_turnover": 0.5}),
    ("Gross exposure at most 100%.", {"max_gross": 1.0}),
    ("At most 150% gross exposure.", {"max_gross": 1.5}),
    ("No leverage.", {"max_gross": 1.0}),
    ("Exclude TSLA, COIN.", {"excluded": ["COIN", "TSLA"]}),
    ("Exclude TSLA and COIN", {"excluded": ["COIN", "TSLA"]}),
    (
        "Do not hold BRK.B, SH600519, and 600519.SS.",
        {"excluded": ["600519.SS", "BRK.B", "SH600519"]},
    ),
    ("Never hold GME or AMC.", {"excluded": ["AMC", "GME"]}),
    ("No positions in XOM.", {"excluded": ["XOM"]}),
    ("No constraints.", {}),
]


@pytest.mark.parametrize(("sentence", "fields"), PHRASES)
def test_each_phrase_compiles_to_its_field(sentence: str, fields: dict) -> None:
    assert compile_mandate(sentence) == RiskConstraints(**fields)


def test_a_full_mandate_compiles_and_reads_back() -> None:
    text = """
        Long only; no more than 10% in any single name. At most 30% per sector.
        At most 40% in the Information Technology sector.
        Hold between 5 and 15 names. Keep at least 5% in cash.
        Turnover at most 40% per rebalance. Gross exposure at most 100%.
        Exclude TSLA, COIN.
    """
    c = compile_mandate(text)
    assert c == RiskConstraints(
        long_only=True,
        max_weight=0.1,
        max_sector_weight=0.3,
        sector_caps={"Information Technology": 0.4},
        min_names=5,
        max_names=15,
        cash_floor=0.05,
        max_turnover=0.4,
        max_gross=1.0,
        excluded=["TSLA", "COIN"],
    )
    assert render_constraints(c).splitlines() == [
        "Long only.",
        "No more than 10% in any single name.",
        "At most 30% in any sector.",
        "At most 40% in the Information Technology sector.",
        "Hold between 5 and 15 names.",
        "Keep at least 5% in cash.",
        "Turnover at most 40% per rebalance.",
        "Gross exposure at most 100%.",
        "Exclude COIN, TSLA.",
    ]
    assert compile_mandate(render_constraints(c)) == c


def test_sentences_split_on_periods_that_end_them_only() -> None:
    assert split_sentences("Exclude BRK.B. At most 2.5% per name.\nLong only;;") == [
        "Exclude BRK.B",
        "At most 2.5% per name",
        "Long only",
    ]


def test_every_unreadable_sentence_is_named() -> None:
    with pytest.raises(MandateError) as info:
        compile_mandate("Long only. Buy the dip. At most 10% per name. Be careful")
    message = str(info.value)
    assert "'Buy the dip'" in message and "'Be careful'" in message
    assert "'Long only'" not in message
    assert "docs/risk.md" in message
    assert isinstance(info.value, ConfigError)


@pytest.mark.parametrize(
    "text",
    [
        "At most 10 per name.",  # a weight needs a percent sign
        "Hold between 5% and 15% names.",  # counts are whole numbers
        "At most ten names.",
        "Long only and no more than 10% per name.",  # one constraint per sentence
    ],
)
def test_near_misses_are_refused(text: str) -> None:
    with pytest.raises(MandateError, match="cannot read mandate sentence"):
        compile_mandate(text)


def test_the_empty_mandate_is_an_error() -> None:
    with pytest.raises(MandateError, match="No constraints"):
        compile_mandate("  \n ")


def test_a_field_set_twice_names_both_sentences() -> None:
    with pytest.raises(MandateError, match="max_weight twice: 'At most 10% per name' and"):
        compile_mandate("At most 10% per name. No more than 5% in any single name.")
    with pytest.raises(MandateError, match="Energy sector twice"):
        compile_mandate("At most 10% in the Energy sector. At most 20% in the Energy sector.")
    same = compile_mandate("At most 10% per name. No more than 10% in any single name.")
    assert same.max_weight == 0.1


def test_exclusions_accumulate_across_sentences() -> None:
    assert compile_mandate("Exclude TSLA. Never hold COIN, TSLA.").excluded == ("COIN", "TSLA")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("No more than 150% in any single name.", "'No more than 150% in any single name'"),
        ("Hold between 9 and 3 names.", "min_names 9 > max_names 3"),
        ("Keep at least 50% in cash. Keep at most 10% in cash.", "cash_floor 50% > cash_ceiling"),
        ("At most 20% in the each sector.", "not usable"),
        ("Exclude TSLA, and.", "'Exclude TSLA, and'"),
    ],
)
def test_invalid_values_name_the_sentence_or_the_contradiction(text: str, needle: str) -> None:
    with pytest.raises(MandateError, match="invalid mandate") as info:
        compile_mandate(text)
    assert needle in str(info.value)


def test_the_grammar_table_in_the_docs_lists_the_phrases_tested_here() -> None:
    """The grammar table of the docs (after its marker comment, in docs/risk.md or wherever
    it was moved) gives an example of every field; each example compiles."""
    pages = [p.read_text() for p in sorted(DOCS.glob("*.md")) if TABLE_MARK in p.read_text()]
    assert pages, f"no page of docs/ holds the grammar table (marked {TABLE_MARK})"
    default = RiskConstraints()
    for page in pages:
        table = page.split(TABLE_MARK, 1)[1].split("\n\n", 2)[1]
        rows = re.findall(r"^\| `([^`]+)` \|", table, flags=re.MULTILINE)
        assert len(rows) >= 12
        fields = set()
        for example in rows:
            c = compile_mandate(example)
            fields |= {k for k in type(c).model_fields if getattr(c, k) != getattr(default, k)}
        assert fields == set(RiskConstraints.model_fields) - {"schema_version"}
