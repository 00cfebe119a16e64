"""Fingerprint what the model reads in portfolio steps: SHA-256 of every text.

On the real CSI300 data (2023-2024), for four level/price-mode pairs (bright raw, blinded
raw, blinded rebased, stock-blind rebased), 22 days (some with too little history for every
feature) and two accounts (empty, and `portfolio_step.realistic_book`'s 50 holdings), it
captures the user message of each mode, the JSON text of about 40 research-tool calls
(every screen feature both ways, snapshots of members and holdings, comparisons, dry
runs, refusals) and a valid and a refused submission, and prints the count and the
SHA-256 of all of them. Run it before and after a change to the step's code: equal hashes
mean byte-identical outputs (`--out FILE` keeps the texts, one `key<TAB>json` a line, to
diff). Run: `python perf/portfolio_outputs.py [--out FILE]`.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from _common import import_real_cn
from portfolio_step import realistic_book, step_orders

from tradebench.agents.tool_loop import to_json
from tradebench.agents.tools import ArgumentError, Tool
from tradebench.benchmarks.portfolio.agent import rebase_close
from tradebench.benchmarks.portfolio.context import StepContext
from tradebench.benchmarks.portfolio.observation import StepInfo, user_message
from tradebench.benchmarks.portfolio.prompt_files import load_prompts
from tradebench.benchmarks.portfolio.tools import research_tools, submit_tool
from tradebench.data import load_dataset
from tradebench.data.dataset import Dataset
from tradebench.errors import ToolError
from tradebench.features.technical import FEATURES
from tradebench.market.ledger import Account
from tradebench.market.rules import MarketRules
from tradebench.masking import Masker, build_masker
from tradebench.view import MarketView

PAIRS = (("bright", "raw"), ("blinded", "raw"), ("blinded", "rebased"), ("stock_blind", "rebased"))
MODES = ("open_research", "fixed_candidate", "memory_only")


async def _call(tool: Tool, arguments: dict[str, Any]) -> str:
    try:
        return to_json(await tool.run(arguments))
    except (ToolError, ArgumentError) as exc:
        return f"ERR {exc}"


def _calls(ids: list[str], orders: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    calls: list[tuple[str, dict[str, Any]]] = [("get_market_context", {})]
    calls.append(("get_portfolio_state", {}))
    for f in FEATURES:
        calls.append(("screen_candidates", {"feature": f, "top_k": 30}))
        args = {"feature": f, "top_k": 7, "ascending": True, "board": "chinext"}
        calls.append(("screen_candidates", args))
    calls += [("get_stock_snapshot", {"stock_id": i, "lookback": 30}) for i in ids]
    calls.append(("get_stock_snapshot", {"stock_id": ids[0]}))
    for group in (ids[:10], ids[10:13] + ids[:1], [ids[0], ids[0]], ["asset_9999", ids[0]]):
        calls.append(("compare_candidates", {"stock_ids": group}))
    calls.append(("risk_check", {"orders": orders}))
    sized = [
        {"stock_id": ids[2], "side": "BUY", "target_weight": 0.3},
        {"stock_id": ids[3], "side": "BUY", "shares": 3},
    ]
    calls.append(("risk_check", {"orders": sized}))
    return calls


async def _step(ds: Dataset, day: Any, masker: Masker, mode: str, account: Account, key: str):
    view = MarketView(ds, day)
    snap = account.snapshot(view.last("close"), view.column_map)
    first = masker.calendar[masker.origin]
    base = rebase_close(view, first) if mode == "rebased" else None
    ctx = StepContext(view, snap, MarketRules.cn(), mode, base)
    info = StepInfo(2, 20, (), 0.01, -0.02)
    out = [(f"{key}/msg/{m}", user_message(ctx, masker, load_prompts(), m, info)) for m in MODES]
    tools = {t.name: t for t in research_tools(ctx, masker)}
    picks = list(view.members())[::37][:10] + list(snap.symbols)[:3] + [str(view.symbols[0])]
    ids = [masker.symbol_label(s) for s in picks]
    orders = step_orders(account, ids, masker.symbol_label)
    for n, (name, arguments) in enumerate(_calls(ids, orders)):
        out.append((f"{key}/{n}/{name}", await _call(tools[name], arguments)))
    submit = submit_tool(ctx, masker)
    good = [{**o, "confidence": 0.5, "reason": "a fingerprinted order"} for o in orders]
    bad = [{"stock_id": ids[4], "side": "SELL", "shares": 100, "confidence": 2, "reason": "x" * 10}]
    for tag, sent in (("good", good), ("bad", bad)):
        try:
            text = repr(submit.accept({"orders": sent, "overall_reason": "a step to fingerprint"}))
        except (ToolError, ArgumentError) as exc:
            text = f"ERR {exc}"
        out.append((f"{key}/submit/{tag}", text))
    out.append((f"{key}/schema", json.dumps(submit.spec.parameters, sort_keys=True)))
    return out


async def capture(ds: Dataset) -> list[tuple[str, str]]:
    """(key, text) of every text the steps show, in a fixed order."""
    dates = ds.panel.dates
    window = dates[dates >= np.datetime64("2024-03-01")][:40:3]
    days = [*dates[3:6], *dates[40:42], *window, *dates[-3:]]
    out: list[tuple[str, str]] = []
    for level, mode in PAIRS:
        masker = build_masker(level, ds.panel.symbols, dates, days[0], 0, "fingerprint")
        for day in days:
            view = MarketView(ds, day)
            for label, account in (("empty", Account(1_000_000)), ("book", realistic_book(view))):
                out += await _step(ds, day, masker, mode, account, f"{level}/{mode}/{day}/{label}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the texts here (key<TAB>json a line)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = import_real_cn(Path(tmp) / "cn", start="2023-01-01", end="2024-12-31")
        texts = asyncio.run(capture(load_dataset(data)))
    body = "".join(f"{k}\t{json.dumps(v, ensure_ascii=False)}\n" for k, v in texts).encode()
    if args.out:
        args.out.write_bytes(body)
    print(f"{len(texts)} texts, sha256 {hashlib.sha256(body).hexdigest()}")


if __name__ == "__main__":
    main()
