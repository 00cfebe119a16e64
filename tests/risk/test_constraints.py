"""`RiskConstraints`: bounds, contradictions, English rendering and the content hash."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from tradebench.risk import (
    RiskConstraints,
    compile_mandate,
    constraints_hash,
    render_constraints,
)
from tradebench.risk.constraints import contradictions, pct

SECTORS = [
    "Technology",
    "Information Technology",
    "Oil, Gas & Consumable Fuels",
    "Banks (Regional)",
    "Health Care",
    "Real-Estate",
    "Media/Telecom",
    "Int'l 2",
]
NAMES = ["TSLA", "COIN", "BRK.B", "SH600519", "600519.SS", "ETH-USD", "A", "X_1", "SZ000001"]


def test_defaults_constrain_nothing_and_render_as_such() -> None:
    c = RiskConstraints()
    assert c.schema_version == 1
    assert not c.long_only and c.max_weight is None and c.excluded == ()
    assert render_constraints(c) == "No constraints."


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"min_names": 10, "max_names": 5}, "min_names 10 > max_names 5"),
        ({"cash_floor": 0.2, "cash_ceiling": 0.1}, "cash_floor 20% > cash_ceiling 10%"),
        ({"min_position": 0.2, "max_weight": 0.1}, "min_position 20% > max_weight 10%"),
        ({"max_names": 3, "max_weight": 0.1, "cash_ceiling": 0.5}, "cannot invest the 50%"),
        ({"max_gross": 0.4, "cash_ceiling": 0.5}, "max_gross 40% cannot invest the 50%"),
        (
            {"long_only": True, "min_names": 10, "min_position": 0.1, "cash_floor": 0.05},
            "exceeds 1 - cash_floor = 95%",
        ),
        ({"min_names": 30, "min_position": 0.05, "max_gross": 1.0}, "exceeds max_gross = 100%"),
    ],
)
def test_contradictory_constraints_are_a_clear_error(fields: dict, needle: str) -> None:
    with pytest.raises(ValidationError, match="contradictory constraints") as info:
        RiskConstraints(**fields)
    assert needle in str(info.value)


def test_edge_combinations_that_are_feasible_are_accepted() -> None:
    RiskConstraints(max_names=10, max_weight=0.1, cash_ceiling=0.0)  # exactly reachable
    RiskConstraints(max_names=3, max_weight=0.1, cash_ceiling=0.7)  # 3 x 0.1 vs 1 - 0.7
    RiskConstraints(min_names=5, max_names=5, cash_floor=0.3, cash_ceiling=0.3)
    assert contradictions(RiskConstraints(min_names=20, min_position=0.05, long_only=True)) == []


@pytest.mark.parametrize(
    "fields",
    [
        {"max_weight": 0.0},
        {"max_weight": 1.5},
        {"cash_floor": -0.1},
        {"min_names": 0},
        {"max_gross": 6.0},
        {"excluded": ["TSLA."]},
        {"excluded": ["and"]},
        {"excluded": ["has space"]},
        {"sector_caps": {"Any": 0.2}},
        {"sector_caps": {"Tech  Hardware": 0.2}},
        {"sector_caps": {"Energy.": 0.2}},
        {"sector_caps": {"Energy": 1.2}},
        {"sector_caps": [{"sector": "Energy", "cap": 0.2}, {"sector": "Energy", "cap": 0.3}]},
        {"unknown_field": 1},
        {"schema_version": 2},
    ],
)
def test_out_of_range_fields_are_refused(fields: dict) -> None:
    with pytest.raises(ValidationError):
        RiskConstraints(**fields)


def test_lists_are_stored_canonically() -> None:
    a = RiskConstraints(excluded=["TSLA", "COIN", "TSLA"], sector_caps={"Beta": 0.2, "Alpha": 0.3})
    b = RiskConstraints(
        excluded=["COIN", "TSLA"],
        sector_caps=[{"sector": "Alpha", "cap": 0.3}, {"sector": "Beta", "cap": 0.2}],
    )
    assert a == b
    assert a.excluded == ("COIN", "TSLA")
    assert list(a.sector_cap_map) == ["Alpha", "Beta"]
    assert constraints_hash(a) == constraints_hash(b)
    assert hash(a) == hash(b)


def test_the_hash_is_stable_across_processes_and_pinned() -> None:
    c = compile_mandate("Long only. No more than 10% in any single name. Exclude TSLA, COIN.")
    code = (
        "from tradebench.risk import RiskConstraints, constraints_hash;"
        f"print(constraints_hash(RiskConstraints.model_validate_json({c.model_dump_json()!r})))"
    )
    other = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert other == constraints_hash(c)
    # pinned: a change here means stored hashes of earlier runs no longer match
    assert constraints_hash(c) == PINNED
    assert constraints_hash(c.model_copy(update={"max_weight": 0.11})) != PINNED


PINNED = "3b9c31ee73eeded6f146dac039a84a085a9dda9cc91b12685183142ee5a509b6"


def test_the_hash_changes_with_any_field() -> None:
    base = RiskConstraints()
    variants = [
        {"long_only": True},
        {"max_weight": 0.5},
        {"min_position": 0.01},
        {"min_names": 2},
        {"max_names": 9},
        {"max_sector_weight": 0.4},
        {"sector_caps": {"Energy": 0.1}},
        {"max_turnover": 0.3},
        {"cash_floor": 0.01},
        {"cash_ceiling": 0.9},
        {"max_gross": 1.0},
        {"excluded": ["TSLA"]},
    ]
    hashes = {constraints_hash(base)} | {constraints_hash(RiskConstraints(**v)) for v in variants}
    assert len(hashes) == len(variants) + 1


def test_pct_is_exact_both_ways() -> None:
    assert pct(0.1) == "10%" and pct(0.025) == "2.5%" and pct(1.0) == "100%"
    assert pct(1 / 3) == "33.33333333333333%"


def _fractions(low: float = 0.0) -> st.SearchStrategy[float]:
    return st.floats(min_value=low, max_value=1.0, allow_nan=False, exclude_min=low > 0.0) | (
        st.integers(1, 100).map(lambda k: k / 100)
    )


@st.composite
def constraints(draw: st.DrawFn) -> RiskConstraints:
    fields: dict = {"long_only": draw(st.booleans())}
    optional = {
        "max_weight": _fractions(1e-12).filter(lambda x: x > 0),
        "min_position": _fractions(1e-12).filter(lambda x: x > 0),
        "min_names": st.integers(1, 1000),
        "max_names": st.integers(1, 1000),
        "max_sector_weight": _fractions(),
        "max_turnover": st.floats(0.0, 4.0, allow_nan=False),
        "cash_floor": _fractions(),
        "cash_ceiling": _fractions(),
        "max_gross": st.floats(1e-9, 5.0, allow_nan=False),
    }
    for key, strategy in optional.items():
        if draw(st.booleans()):
            fields[key] = draw(strategy)
    fields["sector_caps"] = draw(
        st.dictionaries(st.sampled_from(SECTORS), _fractions(), max_size=4)
    )
    fields["excluded"] = draw(st.lists(st.sampled_from(NAMES), max_size=5))
    try:
        return RiskConstraints(**fields)
    except ValidationError:
        assume(False)
        raise


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(constraints())
def test_render_then_compile_gives_the_same_constraints(c: RiskConstraints) -> None:
    text = render_constraints(c)
    assert compile_mandate(text) == c
    assert constraints_hash(compile_mandate(text)) == constraints_hash(c)
    assert len(text.splitlines()) == len(set(text.splitlines()))


def test_the_json_schema_is_bounded() -> None:
    """Every string has a maxLength and a pattern, every array a maxItems, every object
    closed properties: nothing a grammar built from it can repeat without end."""
    schema = RiskConstraints.model_json_schema()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("type") == "string":
                assert "maxLength" in node and "pattern" in node, node
            if node.get("type") == "array":
                assert "maxItems" in node, node
            if node.get("type") == "object":
                assert node.get("additionalProperties") is False, node
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    json.dumps(schema)
