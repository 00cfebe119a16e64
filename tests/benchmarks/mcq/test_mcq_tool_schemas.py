"""The MCQ tools' schemas compile into grammars a grammar-based server accepts: no length
bound anywhere (llama.cpp refused, and crashed on, a 12,000-character `maxLength`); the
tools enforce the lengths themselves and tell the model."""

from __future__ import annotations

from typing import Any

import pytest

from tradebench.benchmarks.mcq.eval.sandbox_tool import (
    MAX_CODE_CHARS,
    PIP_SPEC,
    PIP_TOOL_NAME,
    SPEC,
    TOOL_NAME,
    check_lengths,
)
from tradebench.errors import ToolError


def _bounds(schema: Any) -> list[tuple[str, Any]]:
    """Every length bound in a JSON schema, recursively."""
    if isinstance(schema, dict):
        found = [(k, v) for k, v in schema.items() if k in ("maxLength", "minLength", "pattern")]
        found = [f for f in found if f[0] != "minLength" or f[1] > 1]
        return found + [b for v in schema.values() for b in _bounds(v)]
    if isinstance(schema, list):
        return [b for v in schema for b in _bounds(v)]
    return []


def test_schemas_carry_no_length_bounds() -> None:
    assert _bounds(SPEC.parameters) == [] and _bounds(PIP_SPEC.parameters) == []
    assert f"{MAX_CODE_CHARS:,} characters" in SPEC.description


def test_the_tools_refuse_what_the_schemas_no_longer_bound() -> None:
    check_lengths(TOOL_NAME, {"code": "x" * MAX_CODE_CHARS})
    with pytest.raises(ToolError, match=f"at most {MAX_CODE_CHARS:,}"):
        check_lengths(TOOL_NAME, {"code": "x" * (MAX_CODE_CHARS + 1)})
    check_lengths(PIP_TOOL_NAME, {"packages": ["ta==0.11"]})
    with pytest.raises(ToolError, match="over 200 characters"):
        check_lengths(PIP_TOOL_NAME, {"packages": ["ta", "y" * 201]})
