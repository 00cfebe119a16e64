"""`is_feasible` / `violations`: each constraint's quantity on hand-computed portfolios."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from tradebench.errors import DataError
from tradebench.risk import RiskConstraints, is_feasible, violations

SECTORS = {"A": "Tech", "B": "Tech", "C": "Energy", "D": "Energy"}


def _kinds(weights, c, previous=None, sectors=None, tol=1e-9) -> set[tuple[str, str | None]]:
    return {(v.constraint, v.subject) for v in violations(weights, c, previous, sectors, tol)}


def test_unconstrained_accepts_anything_finite() -> None:
    assert is_feasible({"A": -3.0, "B": 7.5}, RiskConstraints())


@pytest.mark.parametrize(
    ("fields", "weights", "expected"),
    [
        ({"long_only": True}, {"A": 0.5, "B": -0.1}, {("long_only", "B")}),
        ({"max_weight": 0.2}, {"A": 0.2, "B": -0.25}, {("max_weight", "B")}),
        ({"excluded": ["B"]}, {"A": 0.5, "B": 1e-6}, {("excluded", "B")}),
        ({"min_position": 0.05}, {"A": 0.5, "B": 0.01, "C": 0.0}, {("min_position", "B")}),
        ({"max_names": 2}, {"A": 0.3, "B": 0.3, "C": 0.3, "D": 0.0}, {("max_names", None)}),
        ({"min_names": 3}, {"A": 0.3, "B": 0.3, "C": 1e-12}, {("min_names", None)}),
        ({"cash_floor": 0.1}, {"A": 0.5, "B": 0.45}, {("cash_floor", None)}),
        ({"cash_ceiling": 0.1}, {"A": 0.5, "B": 0.35}, {("cash_ceiling", None)}),
        ({"max_gross": 1.0}, {"A": 0.8, "B": -0.3}, {("max_gross", None)}),
    ],
)
def test_each_constraint_is_checked(fields: dict, weights: dict, expected: set) -> None:
    c = RiskConstraints(**fields)
    assert _kinds(weights, c) == expected
    assert not is_feasible(weights, c)


def test_sector_exposure_sums_absolute_weights_and_named_caps_replace_the_general_one() -> None:
    c = RiskConstraints(max_sector_weight=0.3, sector_caps={"Energy": 0.5})
    # Tech: |0.2| + |-0.15| = 0.35 > 0.3; Energy 0.45 <= 0.5 (its own cap replaces 0.3)
    w = {"A": 0.2, "B": -0.15, "C": 0.25, "D": 0.2}
    found = violations(w, c, sectors=SECTORS)
    assert [(v.constraint, v.subject) for v in found] == [("sector_cap", "Tech")]
    assert found[0].value == pytest.approx(0.35) and found[0].bound == 0.3


def test_turnover_counts_names_not_cash_and_applies_only_with_previous() -> None:
    c = RiskConstraints(max_turnover=0.2)
    w = {"A": 0.5, "B": 0.1}
    previous = {"A": 0.4, "C": 0.05}  # |0.1| + |0.1| + |-0.05| = 0.25
    found = violations(w, c, previous=previous)
    assert found[0].constraint == "max_turnover" and found[0].value == pytest.approx(0.25)
    assert is_feasible(w, c)  # no previous: the first rebalance is free
    assert not is_feasible(w, c, previous={})  # from all cash: 0.6
    assert is_feasible({"A": 0.1, "B": 0.1}, c, previous={})


def test_tolerance_and_held_names() -> None:
    c = RiskConstraints(max_weight=0.1, max_names=1)
    assert is_feasible({"A": 0.1 + 5e-10, "B": 5e-10}, c)
    assert not is_feasible({"A": 0.1 + 5e-9}, c)
    assert not is_feasible({"A": 0.1, "B": 2e-9}, c)
    assert is_feasible({"A": 0.1, "B": 2e-9}, c, tol=1e-8)


def test_series_and_mappings_agree() -> None:
    c = RiskConstraints(long_only=True, max_weight=0.3, max_sector_weight=0.4)
    w = {"A": 0.3, "B": 0.2, "C": 0.1}
    series = pd.Series(w)
    assert violations(w, c, sectors=SECTORS) == violations(series, c, sectors=pd.Series(SECTORS))


def test_bad_inputs_are_data_errors() -> None:
    c = RiskConstraints(max_sector_weight=0.5)
    with pytest.raises(DataError, match="pass `sectors`"):
        is_feasible({"A": 0.1}, c)
    with pytest.raises(DataError, match=r"none given for \['Z'\]"):
        is_feasible({"A": 0.1, "Z": 0.1}, c, sectors=SECTORS)
    with pytest.raises(DataError, match="not finite"):
        is_feasible({"A": math.nan}, RiskConstraints())
    with pytest.raises(DataError, match="more than once"):
        is_feasible(pd.Series([0.1, 0.2], index=["A", "A"]), RiskConstraints())
