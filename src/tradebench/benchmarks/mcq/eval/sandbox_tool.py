"""The `run_python` tool of MCQ solvers: model code run in the sandbox, output made stable.

Every call gets a fresh temporary directory holding the question's files (`bars.csv`) and a
separate confined process (`tradebench.sandbox.run_python`), run in a worker thread so
concurrent questions do not block each other. The result the model sees holds only what the
code determines: exit code, stdout, stderr, whether it timed out. The sandbox directory's
random name is replaced by `.` and timings are left out, so the same code gives the same
tool result, the next request has the same cache key, and reruns are free.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from tradebench.agents.tools import Tool
from tradebench.llm.types import ToolSpec
from tradebench.sandbox import SandboxLimits, SandboxResult, run_python

TOOL_NAME = "run_python"
MAX_CODE_CHARS = 12_000
MAX_STDOUT_CHARS = 6_000
MAX_STDERR_CHARS = 3_000
_WORKDIR = re.compile(r"(?:/[^\s\"':]*)?/tb-sandbox-[A-Za-z0-9_]+")

SPEC = ToolSpec(
    name=TOOL_NAME,
    description=(
        "Run a complete Python 3 program in a fresh working directory holding the question's "
        "files; returns its exit code, stdout and stderr. numpy, pandas and backtrader are "
        "installed; no network; nothing persists between calls."
    ),
    parameters={
        "type": "object",
        "properties": {
            "code": {
                "type": "string",
                "maxLength": MAX_CODE_CHARS,
                "description": "The program; print what you want to see.",
            }
        },
        "required": ["code"],
        "additionalProperties": False,
    },
)


def limits_for(timeout_s: float, allow_weak: bool = False) -> SandboxLimits:
    """Sandbox limits with a wall-clock limit and the same CPU seconds (at least one);
    `allow_weak` runs code even where the kernel lacks a layer (`--allow-weak-sandbox`)."""
    return SandboxLimits(
        timeout_s=timeout_s, cpu_s=max(1, math.ceil(timeout_s)), allow_weak=allow_weak
    )


def scrub(text: str) -> str:
    """Replace the sandbox directory's random path with `.`."""
    return _WORKDIR.sub(".", text)


def _clip(text: str, limit: int, keep_tail: bool) -> str:
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    if keep_tail:
        return f"[... {cut} characters cut ...]\n" + text[-limit:]
    return text[:limit] + f"\n[... {cut} characters cut ...]"


def tool_result(result: SandboxResult) -> dict[str, Any]:
    """What the model sees of a sandbox run (deterministic for deterministic code)."""
    return {
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "stdout": _clip(scrub(result.stdout), MAX_STDOUT_CHARS, keep_tail=False),
        "stderr": _clip(scrub(result.stderr), MAX_STDERR_CHARS, keep_tail=True),
    }


async def run_in_thread(
    code: str,
    files: Mapping[str, bytes],
    limits: SandboxLimits,
    env: Mapping[str, str] | None = None,
) -> SandboxResult:
    """`run_python` in a worker thread, so the event loop keeps serving other questions."""
    return await asyncio.to_thread(run_python, code, dict(files), limits, env)


def python_tool(files: Mapping[str, bytes], limits: SandboxLimits) -> Tool:
    """A `run_python` tool whose every call runs in a fresh directory holding `files`."""
    frozen = MappingProxyType(dict(files))

    async def run(arguments: dict[str, Any]) -> dict[str, Any]:
        return tool_result(await run_in_thread(arguments["code"], frozen, limits))

    return Tool(spec=SPEC, fn=run)
