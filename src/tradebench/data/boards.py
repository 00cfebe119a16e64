"""Board classification of A-share codes and each board's daily price-limit rules.

The board follows from the code: `SH60xxxx`/`SZ00xxxx` main board (limit ±10%),
`SZ30xxxx` ChiNext and `SH688xxx` STAR (±20%), `BJ8xxxxx`/`BJ4xxxxx` Beijing (±30%).
US symbols have no board limits (`board="us"`, limit 0 = none).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

Board = Literal["main_sh", "main_sz", "chinext", "star", "beijing", "other", "us"]


@dataclass(frozen=True)
class BoardRule:
    """Daily price-limit rule of one board.

    Attributes:
        board: board name.
        limit_pct: the exchange's nominal daily limit as a fraction (0.10 = ±10%); 0 = none.
        engine_threshold: the fraction at which the broker treats an open as limit-locked
            (slightly inside the nominal limit, so rounding to the tick still counts).
    """

    board: Board
    limit_pct: float
    engine_threshold: float


BOARD_RULES: dict[str, BoardRule] = {
    "main_sh": BoardRule("main_sh", 0.10, 0.095),
    "main_sz": BoardRule("main_sz", 0.10, 0.095),
    "chinext": BoardRule("chinext", 0.20, 0.195),
    "star": BoardRule("star", 0.20, 0.195),
    "beijing": BoardRule("beijing", 0.30, 0.295),
    "other": BoardRule("other", 0.10, 0.095),
    "us": BoardRule("us", 0.0, 0.0),
}


def board_of(symbol: str, market: str = "cn") -> Board:
    """Return the board of a symbol from its code (`SH688001` -> `star`)."""
    if market != "cn":
        return "us"
    code = symbol.upper()
    exch, num = code[:2], code[2:]
    if exch == "SH":
        if num.startswith("688"):
            return "star"
        if num.startswith("60"):
            return "main_sh"
    elif exch == "SZ":
        if num.startswith("30"):
            return "chinext"
        if num.startswith("00"):
            return "main_sz"
    elif exch == "BJ" and num[:1] in {"8", "4", "9"}:
        return "beijing"
    return "other"


def board_rule(symbol: str, market: str = "cn") -> BoardRule:
    """Return the price-limit rule that applies to a symbol."""
    return BOARD_RULES[board_of(symbol, market)]


def limit_arrays(symbols: np.ndarray, market: str = "cn") -> tuple[np.ndarray, np.ndarray]:
    """Vectorised nominal limits and engine thresholds for an array of symbols."""
    rules = [board_rule(str(s), market) for s in symbols]
    return (
        np.array([r.limit_pct for r in rules], dtype=np.float64),
        np.array([r.engine_threshold for r in rules], dtype=np.float64),
    )
