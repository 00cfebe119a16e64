"""Comparing traces of two runs: everything but the wall-clock call latencies."""

from __future__ import annotations

from typing import Any


def without_latency(value: Any) -> Any:
    """The trace minus wall-clock latencies, the one field two runs cannot share."""
    if isinstance(value, dict):
        return {k: without_latency(v) for k, v in value.items() if k != "latency_s"}
    if isinstance(value, list):
        return [without_latency(v) for v in value]
    return value
