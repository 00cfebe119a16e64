"""The `run_python` and `pip_install` tools of MCQ solvers: model code run in the sandbox.

A question gets one workspace (`tradebench.sandbox.workspace.Workspace`): every call is a
separate confined process, run in a worker thread so concurrent questions do not block each
other, in a directory that starts with the question's files (`bars.csv`) plus whatever the
question's earlier calls left there. `pip_install` (offered when a wheel directory is given)
installs packages from that directory only. The result the model sees holds only what the
code determines: exit code, stdout, stderr, whether it timed out. The sandbox directory's
random name is replaced by `.` and timings are left out, so the same calls give the same
tool results, the next request has the same cache key, and reruns are free.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Mapping
from typing import Any

from tradebench.agents.tools import Tool
from tradebench.errors import ToolError
from tradebench.llm.types import ToolSpec
from tradebench.sandbox import SandboxLimits, SandboxResult, run_python
from tradebench.sandbox.workspace import BudgetExhausted, Workspace

TOOL_NAME = "run_python"
PIP_TOOL_NAME = "pip_install"
MAX_CODE_CHARS = 12_000
MAX_STDOUT_CHARS = 6_000
MAX_STDERR_CHARS = 3_000
_WORKDIR = re.compile(r"(?:/[^\s\"':]*)?/tb-sandbox-[A-Za-z0-9_]+")

MAX_PACKAGE_CHARS = 200
"""Longest pip requirement string accepted."""

# The schemas carry no length bounds: a grammar-based server (llama.cpp) compiles a
# `maxLength` of thousands into a grammar it refuses, and crashed on this one. The tools
# check the lengths themselves and answer an over-long argument with an error the model
# reads (`check_lengths`).
SPEC = ToolSpec(
    name=TOOL_NAME,
    description=(
        "Run a complete Python 3 program as main.py in the question's working directory; "
        "returns its exit code, stdout and stderr. Files written there persist for later "
        "calls; variables do not. numpy, pandas and backtrader are installed; no network. "
        f"At most {MAX_CODE_CHARS:,} characters of code."
    ),
    parameters={
        "type": "object",
        "properties": {
            "code": {
                "type": "string",
                "description": "The program; print what you want to see.",
            }
        },
        "required": ["code"],
        "additionalProperties": False,
    },
)


PIP_SPEC = ToolSpec(
    name=PIP_TOOL_NAME,
    description=(
        "Install Python packages (pip requirement strings such as 'ta' or 'ta==0.11') from "
        "the local wheel directory into the question's working directory; later run_python "
        "calls import them. Only packages in that directory can be installed."
    ),
    parameters={
        "type": "object",
        "properties": {
            "packages": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "minItems": 1,
                "maxItems": 20,
            }
        },
        "required": ["packages"],
        "additionalProperties": False,
    },
)


def check_lengths(name: str, arguments: dict[str, Any]) -> None:
    """Refuse an over-long argument of `run_python` or `pip_install` (the bounds the
    schemas leave out).

    Raises:
        ToolError: The code or a requirement string is too long.
    """
    if name == TOOL_NAME and len(arguments.get("code") or "") > MAX_CODE_CHARS:
        raise ToolError(
            f"code is {len(arguments['code']):,} characters; at most {MAX_CODE_CHARS:,}: "
            "send a shorter program (write helpers to files in one call, run them in the next)"
        )
    if name == PIP_TOOL_NAME:
        long = [p for p in arguments.get("packages") or [] if len(p) > MAX_PACKAGE_CHARS]
        if long:
            raise ToolError(
                f"requirement strings over {MAX_PACKAGE_CHARS} characters: {long[0][:40]}..."
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


def workspace_tools(workspace: Workspace, packages: bool) -> list[Tool]:
    """`run_python` in the question's persistent workspace, and `pip_install` when the
    workspace has a wheel directory (`packages`). A spent budget is an error the model sees."""

    async def run(arguments: dict[str, Any]) -> dict[str, Any]:
        check_lengths(TOOL_NAME, arguments)
        try:
            return tool_result(await asyncio.to_thread(workspace.run, arguments["code"]))
        except BudgetExhausted as exc:
            raise ToolError(str(exc)) from None

    async def install(arguments: dict[str, Any]) -> dict[str, Any]:
        check_lengths(PIP_TOOL_NAME, arguments)
        try:
            result = await asyncio.to_thread(workspace.install, arguments["packages"])
        except (BudgetExhausted, ValueError) as exc:
            raise ToolError(str(exc)) from None
        return tool_result(result)

    tools = [Tool(spec=SPEC, fn=run)]
    return [*tools, Tool(spec=PIP_SPEC, fn=install)] if packages else tools
