"""Fixtures of the harness tests."""

from __future__ import annotations

import pytest

from tradebench.masking import MASK_TABLE, MaskLevelRow


@pytest.fixture
def fifth_level(monkeypatch: pytest.MonkeyPatch) -> MaskLevelRow:
    """A fifth mask level, one row added to the table: aliases, real dates, raw prices."""
    row = MaskLevelRow(
        name="alias_raw",
        hides_stocks=True,
        hides_dates=False,
        rebases_prices=False,
        in_default_grid=False,
        description="aliases, real dates, raw prices",
    )
    monkeypatch.setitem(MASK_TABLE, row.name, row)
    return row
