"""Hand-computed ledgers: short from flat, flips, holds; wealth and the time convention."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tradebench.benchmarks.single_stock.ledger import next_position, positions_from_actions, settle
from tradebench.errors import DataError

PRICES = [100.0, 110.0, 99.0, 99.0, 121.0]


def _settle(actions: list[str]):
    return settle(actions, PRICES[:-1][: len(actions)], PRICES[1:][: len(actions)])


def test_short_from_flat_then_flip_then_hold() -> None:
    ledger = _settle(["sell", "sell", "buy", "hold"])
    assert ledger.positions.tolist() == [-1, -1, 1, 1]
    expected = [
        -math.log(110 / 100),  # short from flat loses the rise
        -math.log(99 / 110),  # still short: earns the fall
        +math.log(99 / 99),  # flipped long over a flat day
        +math.log(121 / 99),  # hold keeps the long
    ]
    np.testing.assert_allclose(ledger.earned, expected, rtol=0, atol=1e-15)
    np.testing.assert_allclose(ledger.wealth, np.exp(np.cumsum(expected)), rtol=1e-15)
    # the path: 100 -> short -> 90.909..% of wealth, then back up by 110/99
    assert ledger.wealth[1] == pytest.approx(100 / 110 * 110 / 99)
    assert ledger.wealth[-1] == pytest.approx(100 / 110 * 110 / 99 * 121 / 99)


def test_holds_from_flat_earn_nothing_until_a_trade() -> None:
    ledger = _settle(["hold", "hold", "buy", "sell"])
    assert ledger.positions.tolist() == [0, 0, 1, -1]
    assert ledger.earned[0] == 0 and ledger.earned[1] == 0
    assert ledger.earned[2] == pytest.approx(0.0)
    assert ledger.earned[3] == pytest.approx(-math.log(121 / 99))


def test_repeated_buys_keep_one_unit() -> None:
    assert positions_from_actions(["buy", "buy", "buy"]).tolist() == [1, 1, 1]
    assert positions_from_actions(["sell", "hold", "buy", "hold", "sell"]).tolist() == [
        -1,
        -1,
        1,
        1,
        -1,
    ]
    assert next_position(-1, "hold") == -1


def test_buy_and_hold_equals_the_asset_log_return() -> None:
    ledger = _settle(["buy"] * 4)
    assert ledger.earned.sum() == pytest.approx(math.log(121 / 100))
    assert ledger.wealth[-1] == pytest.approx(1.21)


def test_bad_inputs_fail_loudly() -> None:
    with pytest.raises(DataError, match="unknown action"):
        positions_from_actions(["long"])
    with pytest.raises(DataError, match="positive"):
        settle(["buy"], [0.0], [1.0])
    with pytest.raises(DataError, match="actions for"):
        settle(["buy", "buy"], [1.0], [1.0])


def test_ledger_arrays_are_read_only() -> None:
    ledger = _settle(["buy"])
    with pytest.raises(ValueError):
        ledger.earned[0] = 1.0
