"""Crash-safe progress of one episode: one JSON line per completed step.

After every step the loop appends the step's rows and the account state to
`progress.jsonl` (flushed and fsynced). A rerun reads the complete lines back (a torn last
line is ignored), restores the account and continues with the next day, so a killed run
ends with the same files as an uninterrupted one. The trace is rewritten to match.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tradebench.market.ledger import Account, Holding
from tradebench.market.orders import OrderRecord, RejectCode

PROGRESS = "progress.jsonl"
TRACE = "trace.jsonl"


def _plain(value: Any) -> Any:
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return None if not np.isfinite(value) else float(value)
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


@dataclass
class Restored:
    """What a rerun continues from."""

    steps_done: int = 0
    steps: list[list] = field(default_factory=list)
    positions: list[list] = field(default_factory=list)
    orders: list[list] = field(default_factory=list)
    account: Account | None = None
    previous: tuple[OrderRecord, ...] = ()


def _record_to_json(r: OrderRecord) -> dict[str, Any]:
    return {
        "symbol": r.symbol,
        "side": r.side,
        "requested_shares": r.requested_shares,
        "target_weight": r.target_weight,
        "status": r.status,
        "filled_shares": r.filled_shares,
        "fill_price": r.fill_price,
        "cost": r.cost,
        "reject_code": r.reject_code.value if r.reject_code else None,
        "message": r.message,
        "confidence": r.confidence,
        "reason": r.reason,
    }


def _record_from_json(d: dict[str, Any]) -> OrderRecord:
    code = d.get("reject_code")
    return OrderRecord(**{**d, "reject_code": RejectCode(code) if code else None})


class Checkpoint:
    """Append-only progress and trace files of one episode folder."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)

    def restore(self) -> Restored:
        """Read the completed steps back; an absent file means a fresh start."""
        path = self.folder / PROGRESS
        if not path.exists():
            (self.folder / TRACE).unlink(missing_ok=True)
            return Restored()
        lines = []
        for raw in path.read_text(encoding="utf-8").splitlines():
            try:
                lines.append(json.loads(raw))
            except json.JSONDecodeError:
                break  # a torn last line from a kill mid-write
        out = Restored(steps_done=len(lines))
        for line in lines:
            out.steps.append([pd.Timestamp(line["step"][0]), *line["step"][1:]])
            out.positions += [[pd.Timestamp(r[0]), *r[1:]] for r in line["positions"]]
            out.orders += [[pd.Timestamp(r[0]), *r[1:]] for r in line["orders"]]
        if lines:
            state = lines[-1]["account"]
            account = Account(state["cash"])
            account.holdings = {s: Holding(int(n), int(a)) for s, n, a in state["holdings"]}
            out.account = account
            out.previous = tuple(_record_from_json(d) for d in lines[-1]["records"])
        self._rewrite(path, lines)
        self._trim_trace(len(lines))
        return out

    def append(
        self,
        step: list,
        positions: list[list],
        orders: list[list],
        account: Account,
        records: list[OrderRecord],
        trace: dict[str, Any] | None,
        index: int,
    ) -> None:
        """Persist one completed step (trace first, then progress, both fsynced)."""
        if trace is not None:
            self._append(TRACE, {"step": index, **trace})
        line = {
            "step": [_plain(v) for v in step],
            "positions": [[_plain(v) for v in row] for row in positions],
            "orders": [[_plain(v) for v in row] for row in orders],
            "account": {
                "cash": account.cash,
                "holdings": [
                    [s, h.shares, h.available] for s, h in sorted(account.holdings.items())
                ],
            },
            "records": [_record_to_json(r) for r in records],
        }
        self._append(PROGRESS, line)

    def _append(self, name: str, payload: dict[str, Any]) -> None:
        with (self.folder / name).open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(payload, ensure_ascii=False, sort_keys=True) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def _rewrite(self, path: Path, lines: list[dict[str, Any]]) -> None:
        text = "".join(json.dumps(x, ensure_ascii=False, sort_keys=True) + "\n" for x in lines)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)

    def _trim_trace(self, steps_done: int) -> None:
        path = self.folder / TRACE
        if not path.exists():
            return
        kept = []
        for raw in path.read_text(encoding="utf-8").splitlines():
            try:
                if json.loads(raw)["step"] < steps_done:
                    kept.append(raw + "\n")
            except (json.JSONDecodeError, KeyError):
                break
        path.write_text("".join(kept), encoding="utf-8")
