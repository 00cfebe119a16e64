"""The projection critic on hand-computed cases: the unchanged shortcut, each convex
constraint, the cardinality heuristic, the records and the errors."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from tradebench.errors import DataError, MandateError
from tradebench.risk import (
    MIN_HELD_WEIGHT,
    RiskConstraints,
    compile_mandate,
    constraints_hash,
    is_feasible,
    project,
)

pytest.importorskip("cvxpy", reason="needs cvxpy, the mandate extra: pip install -e '.[mandate]'")

SECTORS = {"A": "Tech", "B": "Tech", "C": "Energy", "D": "Energy", "E": "Utilities"}


def _binding(proj) -> set[tuple[str, str | None]]:
    return {(b.constraint, b.subject) for b in proj.binding}


def _close(weights: dict[str, float], expected: dict[str, float]) -> None:
    assert list(weights) == list(expected)
    for name, value in expected.items():
        assert weights[name] == pytest.approx(value, abs=1e-12), name


# --------------------------------------------------------------------- the shortcut


@pytest.mark.parametrize(
    "mandate",
    [
        "No constraints.",
        "Long only. No more than 40% in any single name. Keep at least 5% in cash.",
        "At most 50% per sector. Hold between 2 and 4 names. Gross exposure at most 100%.",
        "Turnover at most 30% per rebalance. Exclude E.",
    ],
)
def test_a_feasible_proposal_is_returned_unchanged(mandate: str) -> None:
    c = compile_mandate(mandate)
    proposed = {"A": 0.4, "B": 0.1 - 1 / 7e4, "C": 1 / 3, "D": 0.0, "E": 0.0}
    previous = {"A": 0.3, "B": 0.1, "C": 0.3}
    proj = project(proposed, c, previous=previous, sectors=SECTORS)
    assert proj.weights == proposed and list(proj.weights) == list(proposed)
    assert not proj.changed and proj.solver is None and proj.distance == 0.0
    assert proj.violated == [] and proj.cash == 1.0 - math.fsum(proposed.values())
    assert proj.cash == proj.proposed_cash
    assert proj.constraints_hash == constraints_hash(c)


def test_the_shortcut_still_reports_what_the_proposal_runs_at() -> None:
    c = RiskConstraints(long_only=True, max_weight=0.4, cash_floor=0.2)
    proj = project({"A": 0.4, "B": 0.4, "C": 0.0}, c)
    assert not proj.changed
    assert _binding(proj) == {("max_weight", "A"), ("max_weight", "B"), ("cash_floor", None)}
    assert all(b.proposed == b.projected for b in proj.binding)


def test_series_and_mappings_give_the_same_projection() -> None:
    c = RiskConstraints(long_only=True, max_weight=0.3, max_sector_weight=0.4, cash_floor=0.1)
    proposed = {"A": 0.5, "B": 0.3, "C": 0.2, "D": -0.1, "E": 0.1}
    a = project(proposed, c, sectors=SECTORS)
    b = project(pd.Series(proposed), c, sectors=pd.Series(SECTORS))
    assert a.model_dump_json() == b.model_dump_json()
    assert a.model_dump_json() == project(proposed, c, sectors=SECTORS).model_dump_json()


def test_projecting_a_projection_changes_nothing() -> None:
    c = compile_mandate(
        "Long only. No more than 30% in any single name. At most 45% per sector. "
        "Keep at least 5% in cash. Turnover at most 50% per rebalance."
    )
    previous = {"A": 0.2, "B": 0.2, "C": 0.2, "D": 0.2, "E": 0.1}
    first = project(
        {"A": 0.6, "B": 0.3, "C": 0.4, "E": -0.1}, c, previous=previous, sectors=SECTORS
    )
    second = project(first.weights, c, previous=previous, sectors=SECTORS)
    assert first.changed and not second.changed and second.weights == first.weights


# ---------------------------------------------------------- convex constraints, by hand


def test_long_only_and_exclusions_zero_their_names() -> None:
    c = RiskConstraints(long_only=True, excluded=["C"])
    proj = project({"A": 0.5, "B": -0.2, "C": 0.3}, c)
    _close(proj.weights, {"A": 0.5, "B": 0.0, "C": 0.0})
    assert _binding(proj) == {("long_only", "B"), ("excluded", "C")}
    assert {(v.constraint, v.subject) for v in proj.violated} == _binding(proj)
    assert proj.distance == pytest.approx(math.hypot(0.2, 0.3), abs=1e-12)
    assert proj.solver == "CLARABEL"


def test_a_cash_floor_takes_the_same_amount_from_every_name() -> None:
    proj = project({"A": 0.5, "B": 0.5}, RiskConstraints(long_only=True, cash_floor=0.1))
    _close(proj.weights, {"A": 0.45, "B": 0.45})
    assert proj.cash == pytest.approx(0.1, abs=1e-15) and proj.cash >= 0.1 - 1e-12
    (b,) = proj.binding
    assert (b.constraint, b.bound, b.proposed) == ("cash_floor", 0.1, 0.0)


def test_a_capped_name_hands_its_excess_to_the_others_when_fully_invested() -> None:
    c = RiskConstraints(long_only=True, max_weight=0.4, cash_ceiling=0.0)
    proj = project({"A": 0.7, "B": 0.2, "C": 0.1}, c)
    _close(proj.weights, {"A": 0.4, "B": 0.35, "C": 0.25})
    assert _binding(proj) == {("max_weight", "A"), ("cash_ceiling", None)}


def test_a_sector_cap_shrinks_its_names_evenly() -> None:
    c = RiskConstraints(long_only=True, sector_caps={"Tech": 0.3})
    proj = project({"A": 0.3, "B": 0.2, "C": 0.1}, c, sectors=SECTORS)
    _close(proj.weights, {"A": 0.2, "B": 0.1, "C": 0.1})
    assert _binding(proj) == {("sector_cap", "Tech")}


def test_turnover_is_an_l1_ball_around_the_previous_weights() -> None:
    c = RiskConstraints(max_turnover=0.4)
    proj = project({"A": 0.0, "B": 0.0, "C": 1.0}, c, previous={"A": 0.5, "B": 0.5})
    _close(proj.weights, {"A": 0.5, "B": 0.5, "C": 0.4})  # soft threshold at 0.6
    (b,) = proj.binding
    assert b.constraint == "max_turnover" and b.proposed == pytest.approx(2.0)


def test_a_name_only_in_previous_keeps_the_weight_turnover_cannot_sell() -> None:
    c = RiskConstraints(long_only=True, max_turnover=0.2)
    proj = project({"A": 0.5, "B": 0.3}, c, previous={"A": 0.5, "X": 0.3})
    _close(proj.weights, {"A": 0.5, "B": 0.1, "X": 0.2})


def test_gross_exposure_caps_long_and_short_together() -> None:
    proj = project({"A": 0.8, "B": -0.6}, RiskConstraints(max_gross=1.0))
    _close(proj.weights, {"A": 0.6, "B": -0.4})
    assert _binding(proj) == {("max_gross", None)}


# ------------------------------------------------------------------------ cardinality


def test_max_names_keeps_the_largest_proposed_names_ties_by_name() -> None:
    proposed = {"F": 0.05, "A": 0.3, "B": 0.25, "C": 0.2, "E": 0.1, "D": 0.1}
    proj = project(proposed, RiskConstraints(max_names=4))
    _close(proj.weights, {"F": 0.0, "A": 0.3, "B": 0.25, "C": 0.2, "E": 0.0, "D": 0.1})
    assert proj.support_heuristic and proj.dropped == ["F", "E"] and proj.added == []
    assert ("max_names", None) in _binding(proj)


def test_the_convex_projection_is_kept_when_it_already_meets_the_name_counts() -> None:
    c = RiskConstraints(long_only=True, max_names=3, max_weight=0.4)
    proj = project({"A": 0.6, "B": 0.2, "C": 0.1, "D": 0.0}, c)
    assert not proj.support_heuristic
    _close(proj.weights, {"A": 0.4, "B": 0.2, "C": 0.1, "D": 0.0})


def test_min_names_adds_names_at_the_minimum_position() -> None:
    c = RiskConstraints(long_only=True, min_names=4, min_position=0.05, cash_floor=0.0)
    proposed = {"A": 0.6, "B": 0.4, "C": 0.0, "D": 0.0, "E": 0.0}
    proj = project(proposed, c)
    _close(proj.weights, {"A": 0.55, "B": 0.35, "C": 0.05, "D": 0.05, "E": 0.0})
    assert proj.added == ["C", "D"] and proj.dropped == []
    # a name held before ranks ahead of the others proposed at zero
    again = project(proposed, c, previous={"E": 0.1})
    assert again.added == ["C", "E"]
    assert is_feasible(again.weights, c, previous={"E": 0.1})


def test_min_names_without_a_minimum_position_uses_the_smallest_held_weight() -> None:
    c = RiskConstraints(long_only=True, min_names=3)
    proj = project({"A": 0.5, "B": 0.5, "C": 0.0, "D": 0.0}, c)
    assert proj.weights["C"] == pytest.approx(MIN_HELD_WEIGHT, abs=1e-15)
    assert proj.weights["D"] == 0.0 and proj.added == ["C"]


def test_min_position_rounds_each_small_name_to_zero_or_the_minimum() -> None:
    proj = project({"A": 0.5, "B": 0.03, "C": 0.01}, RiskConstraints(min_position=0.05))
    _close(proj.weights, {"A": 0.5, "B": 0.05, "C": 0.0})
    assert proj.dropped == ["C"]


def test_short_names_keep_their_side_under_the_heuristic() -> None:
    c = RiskConstraints(max_names=2, min_position=0.1)
    proj = project({"A": 0.5, "B": -0.3, "C": 0.05, "D": -0.02}, c)
    _close(proj.weights, {"A": 0.5, "B": -0.3, "C": 0.0, "D": 0.0})
    proj = project({"A": 0.5, "B": -0.06}, RiskConstraints(min_position=0.1))
    _close(proj.weights, {"A": 0.5, "B": -0.1})


def test_a_support_the_turnover_cap_cannot_reach_falls_back_to_the_previous_names() -> None:
    old = {n: 0.2 for n in "ABCDE"}
    new = {n: 0.2 for n in "FGHIJ"}
    c = RiskConstraints(long_only=True, max_names=5, max_turnover=0.3)
    proj = project(new, c, previous=old)
    assert proj.support_heuristic
    assert is_feasible(proj.weights, c, previous=old)
    assert {n for n, w in proj.weights.items() if w > 0} == set("ABCDE")
    for name in "ABCDE":
        assert proj.weights[name] == pytest.approx(0.14, abs=1e-12)


def test_every_heuristic_result_is_feasible_on_random_pools() -> None:
    rng = np.random.default_rng(1337)
    names = [f"N{i:02d}" for i in range(20)]
    sectors = {n: f"S{i % 3}" for i, n in enumerate(names)}
    c = RiskConstraints(
        long_only=True,
        max_weight=0.2,
        min_position=0.02,
        min_names=5,
        max_names=8,
        max_sector_weight=0.5,
        cash_floor=0.02,
    )
    for _ in range(30):
        raw = rng.dirichlet(np.full(20, 0.3)) * rng.uniform(0.8, 1.3)
        proposed = dict(zip(names, raw.tolist(), strict=True))
        proj = project(proposed, c, sectors=sectors)
        assert is_feasible(proj.weights, c, sectors=sectors)
        held = sum(abs(w) > 1e-9 for w in proj.weights.values())
        assert 5 <= held <= 8


# ---------------------------------------------------------------------------- errors


def test_constraints_no_portfolio_meets_are_a_mandate_error() -> None:
    c = RiskConstraints(long_only=True, cash_ceiling=0.5, excluded=["A", "B"])
    with pytest.raises(MandateError, match="admit no portfolio"):
        project({"A": 0.5, "B": 0.5}, c)


def test_selling_an_excluded_name_beyond_the_turnover_cap_is_a_mandate_error() -> None:
    c = RiskConstraints(max_turnover=0.2, excluded=["A"])
    with pytest.raises(MandateError, match="turnover"):
        project({"A": 0.5, "B": 0.1}, c, previous={"A": 0.5})


def test_too_few_names_for_min_names_is_a_mandate_error() -> None:
    c = RiskConstraints(min_names=4, min_position=0.01)
    with pytest.raises(MandateError, match="only 3 are available"):
        project({"A": 0.5, "B": 0.3, "C": 0.0}, c)


def test_sector_caps_need_sectors() -> None:
    with pytest.raises(DataError, match="pass `sectors`"):
        project({"A": 0.5}, RiskConstraints(max_sector_weight=0.3))
