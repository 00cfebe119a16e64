"""Grid axes a benchmark declares, and a spec resolved against them.

A spec's `modes` and `masks` are axes of a benchmark's grid. Each benchmark declares the axes
it has (`Benchmark.axes`): the values it accepts and the values it runs when the spec omits
the axis. `resolve_axes` refuses a value the benchmark does not declare, with one line naming
the allowed ones, and fills an omitted axis with what will actually run, which is what the
resolved `spec.yaml` records. An axis the benchmark does not declare stays empty, and the
folder guard ignores it (`undeclared_axes`): it changes nothing the benchmark computes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tradebench.errors import ConfigError
from tradebench.masking import default_mask_levels, mask_levels

AxisKey = Literal["modes", "masks"]
AXIS_KEYS: tuple[AxisKey, ...] = ("modes", "masks")
"""The spec keys that are grid axes a benchmark may declare."""


@dataclass(frozen=True)
class Axis:
    """One grid axis of a benchmark: its spec key, what it accepts, what it runs by default."""

    key: AxisKey
    allowed: Callable[[], Sequence[str]]
    """The values a spec may name, in display order (read when asked: a table may grow)."""
    default: Callable[[], Sequence[str]]
    """The values run when the spec omits the axis, in display order."""

    def allowed_values(self) -> tuple[str, ...]:
        """The values a spec may name."""
        return tuple(self.allowed())

    def default_values(self) -> tuple[str, ...]:
        """The values run when the spec omits the axis."""
        return tuple(self.default())


def choice_axis(key: AxisKey, values: Sequence[str], default: Sequence[str] | None = None) -> Axis:
    """An axis over a fixed list of values; by default every value runs."""
    fixed, chosen = tuple(values), tuple(values if default is None else default)
    return Axis(key, lambda: fixed, lambda: chosen)


def mask_axis(levels: Sequence[str] | None = None, default: Sequence[str] | None = None) -> Axis:
    """The `masks` axis: `levels` (None: every level of the mask table, rows added later
    included) and `default` (None: the table's default-grid levels among them)."""

    def allowed() -> tuple[str, ...]:
        return tuple(levels) if levels is not None else mask_levels()

    def chosen() -> tuple[str, ...]:
        if default is not None:
            return tuple(default)
        return tuple(m for m in default_mask_levels() if m in allowed())

    return Axis("masks", allowed, chosen)


def declared_axes(benchmark: Any) -> dict[str, Axis]:
    """A benchmark's axes by spec key. A benchmark written before axes were declared (a
    `modes` tuple and no `axes`) has a `modes` axis over those modes, and no `masks` axis."""
    axes = getattr(benchmark, "axes", None)
    if axes is None:
        modes = tuple(getattr(benchmark, "modes", ()) or ())
        axes = (choice_axis("modes", modes),) if modes else ()
    return {axis.key: axis for axis in axes}


def undeclared_axes(benchmark: Any) -> tuple[str, ...]:
    """The spec's axis keys the benchmark does not declare (ignored by the folder guard)."""
    declared = declared_axes(benchmark)
    return tuple(key for key in AXIS_KEYS if key not in declared)


def resolve_axes(benchmark: Any, given: dict[str, list[str]]) -> dict[str, list[str]]:
    """Every axis key's resolved values: the spec's values when given (each checked), the
    axis's default when omitted, and empty for an axis the benchmark does not declare.

    Raises:
        ConfigError: A value the benchmark does not declare (one line naming the allowed
            ones), a repeated value, or values for an axis it does not have.
    """
    declared = declared_axes(benchmark)
    name = getattr(benchmark, "name", "?")
    out: dict[str, list[str]] = {}
    for key in AXIS_KEYS:
        values = list(given.get(key) or [])
        axis = declared.get(key)
        if axis is None:
            if values:
                raise ConfigError(
                    f"{key}: benchmark {name!r} has no {key} axis (allowed: none); "
                    f"remove `{key}: {values}` from the spec"
                )
            out[key] = []
            continue
        allowed = axis.allowed_values()
        unknown = [v for v in values if v not in allowed]
        if unknown:
            raise ConfigError(
                f"{key}: {', '.join(map(repr, unknown))} not declared by benchmark {name!r}; "
                f"allowed: {', '.join(allowed)}"
            )
        repeated = sorted({v for v in values if values.count(v) > 1})
        if repeated:
            raise ConfigError(f"{key}: {', '.join(map(repr, repeated))} given more than once")
        out[key] = values or list(axis.default_values())
    return out
