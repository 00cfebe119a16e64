"""Strategy parameters: their names, kinds and bounds, validation and `--param` overrides.

Shared by the builder and the checker (a record's parameters are validated when it is read),
so it imports neither backtrader nor the builder. Every strategy has a fixed set of named
parameters; a value is an integer window (`int`), a fraction (`float`) or a threshold that
may be either (`number`, stored as an int when integral so that 30 and 30.0 are one config).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from tradebench.errors import ConfigError

ParamKind = Literal["int", "float", "number"]
Value = float | int


@dataclass(frozen=True)
class ParamSpec:
    """One strategy parameter: name, kind and the inclusive bounds of its value."""

    name: str
    kind: ParamKind
    low: float
    high: float


def _window(name: str, low: int = 1) -> ParamSpec:
    return ParamSpec(name, "int", low, 10_000)


_PAIR = (_window("fast"), _window("slow", 2))
STRATEGY_PARAMS: dict[str, tuple[ParamSpec, ...]] = {
    "sma_cross": _PAIR,
    "rolling_mean": (_window("window"),),
    "ewma": _PAIR,
    "rsi": (
        _window("period", 2),
        ParamSpec("lower", "number", 0, 100),
        ParamSpec("upper", "number", 0, 100),
    ),
    "macd_cross": (*_PAIR, _window("signal")),
    "mean_reversion": (_window("window"), ParamSpec("band", "float", 0, 0.99)),
    "ewma_cross": _PAIR,
}
"""Parameters of every strategy name (legacy ones included), in their display order."""

# (smaller, larger) pairs that must be strictly ordered.
ORDERED: dict[str, tuple[str, str]] = {
    "sma_cross": ("fast", "slow"),
    "ewma": ("fast", "slow"),
    "ewma_cross": ("fast", "slow"),
    "macd_cross": ("fast", "slow"),
    "rsi": ("lower", "upper"),
}


def _known(strategy: str) -> str:
    return ", ".join(p.name for p in STRATEGY_PARAMS[strategy])


def coerce(strategy: str, spec: ParamSpec, value: object) -> Value:
    """Check one value against its parameter's kind and bounds; return it normalised."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{strategy}: {spec.name} must be a finite number, got {value!r}")
    if spec.kind == "int" or (spec.kind == "number" and float(value).is_integer()):
        if not float(value).is_integer():
            raise ConfigError(f"{strategy}: {spec.name} must be an integer, got {value!r}")
        value = int(value)
    else:
        value = float(value)
    if not spec.low <= value <= spec.high:
        raise ConfigError(
            f"{strategy}: {spec.name} must be in [{spec.low:g}, {spec.high:g}], got {value!r}"
        )
    return value


def validate_params(strategy: str, params: Mapping[str, object]) -> dict[str, Value]:
    """Exactly the strategy's parameters, each valid, ordered pairs ordered; else ConfigError.

    Why: a record or a `--param` must name a backtest both engines can run unambiguously.
    """
    if strategy not in STRATEGY_PARAMS:
        raise ConfigError(f"unknown strategy {strategy!r}; choose from {list(STRATEGY_PARAMS)}")
    specs = {p.name: p for p in STRATEGY_PARAMS[strategy]}
    unknown = sorted(set(params) - set(specs))
    if unknown:
        raise ConfigError(
            f"{strategy} has no parameter {unknown[0]!r}; its parameters: {_known(strategy)}"
        )
    missing = [name for name in specs if name not in params]
    if missing:
        raise ConfigError(f"{strategy} needs parameter {missing[0]!r} ({_known(strategy)})")
    out = {name: coerce(strategy, spec, params[name]) for name, spec in specs.items()}
    if strategy in ORDERED:
        small, large = ORDERED[strategy]
        if not out[small] < out[large]:
            raise ConfigError(
                f"{strategy}: {small} ({out[small]}) must be below {large} ({out[large]})"
            )
    return out


def describe_params(params: Mapping[str, Value]) -> str:
    """`fast = 20, slow = 100`: a parameter set in words, in its stored order."""
    return ", ".join(f"{name} = {value:g}" for name, value in params.items())


def _parse_value(item: str, strategy: str, spec: ParamSpec, text: str) -> Value:
    try:
        number = float(text)
    except ValueError:
        raise ConfigError(f"--param {item}: {text!r} is not a number") from None
    if spec.kind == "int" and not text.lstrip("+-").isdigit():
        raise ConfigError(f"--param {item}: {strategy}.{spec.name} takes an integer")
    try:
        return coerce(strategy, spec, number)
    except ConfigError as exc:
        raise ConfigError(f"--param {item}: {exc}") from None


def parse_overrides(items: Sequence[str], strategies: Sequence[str]) -> dict[str, dict[str, Value]]:
    """Turn `--param NAME=VALUE` / `--param STRATEGY.NAME=VALUE` items into overrides.

    An unqualified NAME applies to every selected strategy that has that parameter; a name
    no selected strategy has, a strategy not being built or a bad value is a one-line
    ConfigError. Why: every strategy parameter is settable without editing code.
    """
    out: dict[str, dict[str, Value]] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip() or not text.strip():
            raise ConfigError(f"--param takes NAME=VALUE or STRATEGY.NAME=VALUE, got {item!r}")
        owner, dot, name = key.strip().rpartition(".")
        if dot and owner not in strategies:
            raise ConfigError(
                f"--param {item}: strategy {owner!r} is not being built ({', '.join(strategies)})"
            )
        targets = [owner] if dot else [s for s in strategies if name in _names(s)]
        if not targets or name not in _names(targets[0]):
            known = "; ".join(f"{s}: {_known(s)}" for s in (targets or strategies))
            raise ConfigError(f"--param {item}: no parameter {name!r} ({known})")
        for strategy in targets:
            spec = next(p for p in STRATEGY_PARAMS[strategy] if p.name == name)
            out.setdefault(strategy, {})[name] = _parse_value(item, strategy, spec, text.strip())
    return out


def _names(strategy: str) -> set[str]:
    return {p.name for p in STRATEGY_PARAMS[strategy]}
