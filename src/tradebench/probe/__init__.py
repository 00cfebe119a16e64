"""De-anonymisation probe: do the masks hold against attackers?

`build_probe_set` draws (stock, date) pairs stratified over time windows and boards and
exports what a blinded agent sees through the real masked tools; `run_attack` lets an
LLM attacker or the data attacker (which holds the price database) guess the real ticker,
date, sector and board; `build_probe_report` writes the recovery rates with Wilson
intervals and random baselines. See `docs/probe.md`.

Exports are loaded lazily so `tradebench --help` stays fast.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "AttackConfig": "tradebench.probe.run",
    "AttackGuess": "tradebench.probe.types",
    "BuildConfig": "tradebench.probe.build",
    "ProbeSet": "tradebench.probe.store",
    "build_probe_report": "tradebench.probe.report",
    "build_probe_set": "tradebench.probe.build",
    "read_probe_set": "tradebench.probe.store",
    "run_attack": "tradebench.probe.run",
    "score_guess": "tradebench.probe.scoring",
    "summarise": "tradebench.probe.results",
    "write_probe_set": "tradebench.probe.store",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'tradebench.probe' has no attribute {name!r}")
