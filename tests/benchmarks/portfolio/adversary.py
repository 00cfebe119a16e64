"""A scripted adversarial model for the loopback server: it tries every channel a masked
agent has to learn a real ticker, date or price level.

Each attack is sent as a pair of calls in one reply: the call with the attack string `X`
(a real ticker in any written form, a real date in any written form, an alias or day label
out of range) and the same call with a neutral string of the same length (`neutral(X)`).
Feedback built from structure reads the same for both; feedback that quotes or re-masks
what was sent does not. Every tool argument and every submission field gets each `X`;
then come malformed JSON, an unreadable body, and at last a valid trade (so the next step
shows holdings, fills and costs; the second step only reads the account and trades).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from tradebench.llm.loopback import RecordedRequest, Reply

NEUTRAL = "Q"
LISTED_RE = re.compile(r"(?:Identifiers|Preview): ([^\n]+)")
TABLE_RE = re.compile(r"^\| (\S+) \| \w+ \|", re.MULTILINE)
HELD_RE = re.compile(r"^- (\S+): [\d,.]+ shares", re.MULTILINE)
SUBMIT = "submit_action"
PAD = " is the reason written in this order field"


def neutral(x: str) -> str:
    """A string of `x`'s length that names nothing."""
    return NEUTRAL * len(x)


def is_neutral(value: Any) -> bool:
    """Whether a call's arguments carry a neutral twin string somewhere."""
    return NEUTRAL * 4 in json.dumps(value)


@dataclass(frozen=True)
class Adversary:
    """The attack strings and the responder that sends them."""

    attacks: tuple[str, ...]
    """Real tickers (every form), real dates (every form), ids and labels out of range."""

    def research(self, x: str, ident: str) -> list[tuple[str, dict[str, Any]]]:
        """One attack string in every research tool argument (and as a tool name, a key)."""
        order = {"stock_id": ident, "side": "BUY", "shares": 1000}
        return [
            ("get_stock_snapshot", {"stock_id": x}),
            ("get_stock_snapshot", {"stock_id": ident, "lookback": x}),
            ("compare_candidates", {"stock_ids": [x, ident]}),
            ("screen_candidates", {"feature": x}),
            ("screen_candidates", {"feature": "ret_20d", "board": x}),
            ("risk_check", {"orders": [{**order, "stock_id": x}]}),
            ("risk_check", {"orders": [{**order, "side": x}]}),
            ("risk_check", {"orders": [{**order, "shares": x}]}),
            ("get_market_context", {x: 1}),
            (x, {"stock_id": x}),
        ]

    def submissions(self, x: str, ident: str) -> list[dict[str, Any]]:
        """One attack string in every submission field. Each submission also holds an order
        on an id no episode has, so that none is accepted whatever the field reads."""
        good = {
            "stock_id": ident,
            "side": "BUY",
            "target_weight": 0.1,
            "confidence": 0.5,
            "reason": "a reason long enough to pass",
        }
        unknown = {**good, "stock_id": "asset_99999"}

        def with_order(**change: Any) -> dict[str, Any]:
            order = {k: v for k, v in {**good, **change}.items() if v is not None}
            return {"orders": [order, unknown], "overall_reason": "an overall reason to pass"}

        return [
            with_order(stock_id=x),
            with_order(side=x),
            with_order(reason=x + PAD),
            with_order(reason=x),
            with_order(confidence=x),
            with_order(target_weight=x),
            with_order(target_weight=None, shares=x),
            with_order(**{x: 1}),
            {**with_order(), "overall_reason": x},
            {**with_order(), "overall_reason": x + PAD},
            {**with_order(), x: "extra"},
        ]

    def research_script(self, ident: str, step: int) -> list[Reply]:
        """Every attack in every research argument, malformed JSON, an unreadable body
        (on the first step), then the honest research calls that show the account."""
        replies = []
        for x in self.attacks if step == 0 else ():
            calls: list[tuple[str, dict[str, Any]]] = []
            for name, args in self.research(x, ident):
                twin = json.loads(json.dumps(args).replace(json.dumps(x)[1:-1], neutral(x)))
                calls += [(name, args), (name if name != x else neutral(x), twin)]
            replies.append(Reply.tools(*calls))
        first = self.attacks[0]
        if step == 0:
            replies += [
                Reply.truncated("get_stock_snapshot", {"stock_id": first, "lookback": 5}),
                Reply.garbage(f"<html>{' '.join(self.attacks)}</html>"),
            ]
        replies += [
            Reply.tools(
                ("get_portfolio_state", {}),
                ("get_stock_snapshot", {"stock_id": ident, "lookback": 30}),
                ("risk_check", {"orders": [{"stock_id": ident, "side": "BUY", "shares": 2000}]}),
            ),
            Reply.say("research done"),
        ]
        return replies

    def submission_script(self, ident: str, step: int, held: str | None) -> list[Reply]:
        """Every attack in every submission field, malformed JSON, an unreadable body (on
        the first step), and a valid decision: buy `ident` on the first step, trim the
        holding `held` on the next (or hold when nothing was bought)."""
        replies = []
        for x in self.attacks if step == 0 else ():
            calls = []
            for args in self.submissions(x, ident):
                twin = json.loads(json.dumps(args).replace(json.dumps(x)[1:-1], neutral(x)))
                calls += [(SUBMIT, args), (SUBMIT, twin)]
            replies.append(Reply.tools(*calls))
        side, weight = ("BUY", 0.3) if step == 0 else ("SELL", 0.1)
        target = ident if step == 0 else held
        order = {
            "stock_id": target,
            "side": side,
            "target_weight": weight,
            "confidence": 0.6,
            "reason": "the first listed name, sized on purpose",
        }
        valid = {
            "orders": [order] if target else [],
            "overall_reason": "one position in the first listed name, nothing else",
        }
        if step == 0:
            replies += [
                Reply.truncated(SUBMIT, {"orders": [{"stock_id": self.attacks[0]}]}),
                Reply.garbage(f"<html>{' '.join(self.attacks)}</html>"),
            ]
        return [*replies, Reply.tool(SUBMIT, valid)]

    def __call__(self, req: RecordedRequest) -> Reply:
        """The next reply of the conversation `req` carries."""
        messages = (req.body or {}).get("messages") or []
        user = messages[1]["content"]
        ident = _first_id(user)
        step = 0 if "Step 1 of" in user else 1
        held = HELD_RE.search(user)
        script = (
            self.submission_script(ident, step, held.group(1) if held else None)
            if req.forced_tool() == SUBMIT
            else self.research_script(ident, step)
        )
        return script[min(_turn(messages), len(script) - 1)]


def _first_id(user: str) -> str:
    """The first id of the candidate table, else of the universe listing."""
    table = [t for t in TABLE_RE.findall(user) if t not in ("id", "---")]
    if table:
        return table[0]
    listed = LISTED_RE.search(user)
    assert listed, user[:300]
    return listed.group(1).split(", ")[0]


def _turn(messages: list[dict[str, Any]]) -> int:
    """Replies so far in this phase: assistant turns and complaints after the phase's
    opening user message (the step's message, or the loop's call to submit)."""
    opening = max(
        i
        for i, m in enumerate(messages)
        if m["role"] == "user" and not str(m.get("content") or "").startswith('{"error"')
    )
    return sum(1 for m in messages[opening + 1 :] if m["role"] in ("assistant", "user"))
