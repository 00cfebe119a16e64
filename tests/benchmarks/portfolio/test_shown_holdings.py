"""`PriceScale.holdings` (the account's holdings converted in array passes) gives exactly the
numbers the field-by-field converters give, bit for bit, in both price modes: including
unknown columns, stocks with no rebase close, zero holdings and values off every grid."""

from __future__ import annotations

import numpy as np
import pytest

from tradebench.benchmarks.portfolio.shown import PriceScale


@pytest.mark.parametrize("mode", ["raw", "rebased"])
@pytest.mark.parametrize("capital", [1e6, 1e9])
def test_holdings_equal_the_field_by_field_numbers(mode: str, capital: float) -> None:
    rng = np.random.default_rng(7)
    base = rng.uniform(1.5, 1800.0, 300)
    base[[3, 17]] = np.nan  # no rebase close
    base[29] = 0.0
    cols = [*rng.choice(300, 60, replace=False).tolist(), 3, 17, 29, -1]
    shares = (rng.integers(0, 400, len(cols)) * 100).tolist()
    available = [s - 100 * int(rng.integers(0, 3)) if s >= 200 else s for s in shares]
    weights = rng.uniform(0.0, 0.2, len(cols)).tolist()
    closes = (base[np.maximum(cols, 0)] * rng.uniform(0.5, 2.0, len(cols))).tolist()
    closes[-1], weights[-2] = float("nan"), float("nan")
    scale = PriceScale(mode, base if mode == "rebased" else None, capital)  # type: ignore[arg-type]
    expected = [
        (
            PriceScale(mode, scale.base, capital).quantity(c, s),  # type: ignore[arg-type]
            PriceScale(mode, scale.base, capital).quantity(c, a),  # type: ignore[arg-type]
            scale.weight(w),
            scale.price(c, x),
        )
        for c, s, a, w, x in zip(cols, shares, available, weights, closes, strict=True)
    ]
    got = scale.holdings(cols, shares, available, weights, closes)
    assert [tuple(map(repr, row)) for row in got] == [tuple(map(repr, r)) for r in expected]
    assert any(row[0] is None for row in got) == (mode == "rebased")
