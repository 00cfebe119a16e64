"""KTD-Fin's limit filter on candidates: names at their upper price limit are not BUY
candidates, names at their lower limit are not SELL candidates.

What is knowable before T's open is T-1's close: a name is *limit-up* (*limit-down*) when its
adjusted close on T-1 moved at or beyond the engine's limit threshold (`view.limit_threshold`,
9.5% on a 10% board) up (down) from its adjusted close on T-2, both days traded. T's own open
is not known when the decision is made; an order that meets a limit at T's open is still
refused at the fill. Markets without limits (threshold 0) filter nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tradebench.agents.tools import SubmitTool
from tradebench.benchmarks.portfolio.context import StepContext
from tradebench.errors import ToolError
from tradebench.masking import Masker
from tradebench.view import MarketView

LIMIT_DOWN = "LIMIT_DOWN"
"""Refusal code of a SELL of a name left out of the SELL candidates."""


def limit_moves(view: MarketView) -> tuple[np.ndarray, np.ndarray]:
    """(limit-up, limit-down) masks over columns, from T-1's move against T-2's close."""
    n = len(view.symbols)
    close = view.window("adj_close", 2)
    halted = view.window("suspended", 2)
    if close.shape[0] < 2:
        return np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        move = close[1] / close[0] - 1.0
    threshold = np.asarray(view.limit_threshold, dtype=np.float64)
    ok = np.isfinite(move) & (threshold > 0) & ~halted.astype(bool).any(axis=0)
    return ok & (move >= threshold), ok & (move <= -threshold)


def buy_candidates(ctx: StepContext) -> np.ndarray:
    """Universe columns that are BUY candidates: the universe less its limit-up names."""
    up, _ = limit_moves(ctx.view)
    return ctx.universe[~up[ctx.universe]]


def limit_down_symbols(ctx: StepContext) -> frozenset[str]:
    """Symbols whose T-1 close sat at the lower limit (not SELL candidates)."""
    _, down = limit_moves(ctx.view)
    return frozenset(ctx.view.symbols[down].tolist())


def refuse_limit_down_sells(submit: SubmitTool, ctx: StepContext, masker: Masker) -> SubmitTool:
    """`submit` with SELL orders of limit-down names refused (coded, masked), after its own
    checks passed."""
    down = limit_down_symbols(ctx)
    if not down:
        return submit

    def validate(arguments: dict[str, Any]) -> Any:
        submission = submit.validate_fn(arguments)
        # worded from structure (the order's index and the rule), never naming the stock
        problems = [
            f"orders/{i}: [{LIMIT_DOWN}] this stock closed at its lower price limit on the "
            "previous day; it is not a SELL candidate today"
            for i, o in enumerate(submission.action.orders)
            if o.side == "SELL" and o.stock_id in down
        ]
        if problems:
            raise ToolError("; ".join(problems))
        return submission

    return submit.model_copy(update={"validate_fn": validate})
