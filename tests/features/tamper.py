"""Replace a panel's data from one row on with garbage, for no-look-ahead tests."""

from __future__ import annotations

import dataclasses

import numpy as np

from tradebench.data.panel import Panel


def tampered(panel: Panel, row: int, seed: int = 1337) -> Panel:
    """A copy of `panel` whose bars on rows >= `row` are random (prices, volumes, amount,
    factors, suspensions); calendar, symbols and membership are unchanged."""
    rng = np.random.RandomState(seed)
    shape = panel.fields["close"][row:].shape
    fields = {k: v.copy() for k, v in panel.fields.items()}
    for name in ("open", "high", "low", "close"):
        fields[name][row:] = rng.uniform(1.0, 500.0, shape)
    fields["volume"][row:] = rng.uniform(0.0, 1e9, shape)
    fields["amount"][row:] = rng.uniform(0.0, 1e11, shape)
    fields["adj_factor"][row:] = rng.uniform(0.5, 20.0, shape)
    suspended = panel.suspended.copy()
    suspended[row:] = rng.random_sample(shape) < 0.3
    adjusted = {
        f"adj_{n}": fields[n] * fields["adj_factor"] for n in ("open", "high", "low", "close")
    }
    return dataclasses.replace(panel, fields=fields, adjusted=adjusted, suspended=suspended)
