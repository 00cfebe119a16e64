"""Agents: the `Agent` protocol, rule baselines, and the LLM tool loop every benchmark shares.

The tool-loop names below are imported lazily, so importing a baseline does not pull in
the model layer.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "ArgumentError": "tradebench.agents.tools",
    "SubmitTool": "tradebench.agents.tools",
    "Tool": "tradebench.agents.tools",
    "LoopBudgetExceeded": "tradebench.agents.loop_types",
    "LoopConfig": "tradebench.agents.loop_types",
    "LoopResult": "tradebench.agents.loop_types",
    "ModelCallRecord": "tradebench.agents.loop_types",
    "ToolCallRecord": "tradebench.agents.loop_types",
    "run_tool_loop": "tradebench.agents.tool_loop",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    """Import a tool-loop name on first access."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tradebench.agents' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
