"""A deterministic scripted trader for the loopback server, and run-spec helpers."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tradebench.llm.loopback import RecordedRequest, Reply

ID_RE = re.compile(r"\|\s*(asset_\d{4,}|S[HZ]\d{6})\s*\|")


def _messages(req: RecordedRequest) -> list[dict[str, Any]]:
    return list((req.body or {}).get("messages") or [])


def _first_id(req: RecordedRequest) -> str | None:
    """First identifier in a screen result or a candidate table of the conversation."""
    for msg in _messages(req):
        content = msg.get("content") or ""
        if msg.get("role") == "tool":
            try:
                data = json.loads(content)
            except json.JSONDecodeError:
                continue
            rows = data.get("rows") if isinstance(data, dict) else None
            if rows:
                return str(rows[0]["stock_id"])
        elif isinstance(content, str) and (m := ID_RE.search(content)):
            return m.group(1)
    return None


def trader(req: RecordedRequest) -> Reply:
    """Research twice when tools are offered, then buy the first name it saw (or hold)."""
    forced = req.forced_tool()
    if forced == "submit_action":
        ident = _first_id(req)
        if ident is None:
            return Reply.tool(
                "submit_action", {"orders": [], "overall_reason": "nothing researched, hold"}
            )
        return Reply.tool(
            "submit_action",
            {
                "orders": [
                    {
                        "stock_id": ident,
                        "side": "BUY",
                        "target_weight": 0.05,
                        "confidence": 0.6,
                        "reason": "first name on the screen",
                    }
                ],
                "overall_reason": "buy the top screened name with a small weight",
            },
        )
    tools = set(req.tool_schemas())
    done = sum(1 for m in _messages(req) if m.get("role") == "tool")
    if "screen_candidates" in tools and done == 0:
        return Reply.tool("get_market_context", {})
    if "screen_candidates" in tools and done == 1:
        return Reply.tool("screen_candidates", {"feature": "ret_20d", "top_k": 5})
    return Reply.say("research done")


def spec_dict(
    dataset: Path,
    url: str,
    masks: list[str],
    modes: list[str] | None = None,
    seeds: list[int] | None = None,
    end: str = "2024-03-07",
) -> dict[str, Any]:
    """A small portfolio grid against the loopback server plus an equal-weight baseline."""
    return {
        "dataset": str(dataset),
        "windows": [{"start": "2024-03-01", "end": end}],
        "modes": modes or ["memory_only", "fixed_candidate", "open_research"],
        "masks": masks,
        "seeds": seeds or [0],
        "agents": [
            {
                "name": "scripted",
                "provider": "openai",
                "model": "test-model",
                "base_url": url,
                "max_tokens": 256,
            },
            {"name": "ew", "baseline": "equal_weight"},
        ],
        "concurrency": 4,
        "options": {"max_tool_calls": 3},
    }
