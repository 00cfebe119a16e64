"""Agreement with empyrical-reloaded on seeded random return paths."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tradebench.metrics import max_drawdown, sharpe, simple_returns, total_return

empyrical = pytest.importorskip(
    "empyrical", reason="empyrical-reloaded not installed (pip install -e '.[test]')"
)

INITIAL = 1_000_000.0


def _navs() -> list[np.ndarray]:
    rng = np.random.default_rng(1337)
    out = []
    for length in (2, 3, 10, 60, 250, 1000):
        for vol in (0.005, 0.02, 0.06):
            out.append(INITIAL * np.cumprod(1 + rng.normal(0.0003, vol, length)))
    return out


def test_sharpe_matches_empyrical() -> None:
    for nav in _navs():
        r = simple_returns(nav, INITIAL)
        assert sharpe(r, 252) == pytest.approx(empyrical.sharpe_ratio(r, period="daily"))
        assert sharpe(r, 52) == pytest.approx(empyrical.sharpe_ratio(r, annualization=52))


def test_max_drawdown_matches_empyrical() -> None:
    for nav in _navs():
        r = simple_returns(nav, INITIAL)
        assert max_drawdown(nav, INITIAL) == pytest.approx(
            -empyrical.max_drawdown(r), rel=1e-9, abs=1e-12
        )


def test_total_return_matches_cum_returns_final() -> None:
    for nav in _navs():
        r = simple_returns(nav, INITIAL)
        assert total_return(nav, INITIAL) == pytest.approx(
            empyrical.cum_returns_final(r), rel=1e-9, abs=1e-12
        )


def test_too_short_and_constant_agree() -> None:
    one = simple_returns([INITIAL * 1.01], INITIAL)
    assert math.isnan(sharpe(one)) and math.isnan(empyrical.sharpe_ratio(one))
    flat = simple_returns([INITIAL] * 5, INITIAL)
    assert math.isnan(sharpe(flat)) and math.isnan(empyrical.sharpe_ratio(flat))
    empty = np.empty(0)
    assert math.isnan(max_drawdown(empty, INITIAL)) and math.isnan(empyrical.max_drawdown(empty))
