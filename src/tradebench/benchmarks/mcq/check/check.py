"""Independent check of a question file: re-run each config, re-derive, compare with the key.

A record passes when its id matches its text and options, the checker's own derivation of
the answer matches the option under the answer letter, and no other option matches. A
number matches an option when it lies within half a unit of the option's last decimal
(plus 1e-9 relative slack for float noise); integers, dates and choices must be equal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from tradebench.benchmarks.mcq.bars import load_bars
from tradebench.benchmarks.mcq.check import derive_risk  # noqa: F401  (registers)
from tradebench.benchmarks.mcq.check.derive import DERIVERS, Value
from tradebench.benchmarks.mcq.check.simulate import Simulation, simulate
from tradebench.benchmarks.mcq.config import DataRef
from tradebench.benchmarks.mcq.records import MCQRecord, question_id


@dataclass(frozen=True)
class Verdict:
    """The outcome for one record: pass/fail, the keyed option, the re-derived value."""

    id: str
    template: str
    strategy: str
    ok: bool
    keyed: str
    derived: str
    detail: str = ""


@dataclass(frozen=True)
class CheckReport:
    """All verdicts in file order and how many distinct backtests were re-run."""

    verdicts: tuple[Verdict, ...]
    backtests: int

    @property
    def failures(self) -> tuple[Verdict, ...]:
        """The verdicts that failed."""
        return tuple(v for v in self.verdicts if not v.ok)

    @property
    def ok(self) -> bool:
        """True when every record passed (and there was at least one)."""
        return bool(self.verdicts) and not self.failures


def _number(text: str) -> tuple[float, int]:
    body = text.rstrip("%").replace(",", "")
    decimals = len(body.split(".")[1]) if "." in body else 0
    return float(body), decimals


def option_matches(kind: str, text: str, value: Value) -> bool:
    """Does one option's text denote the re-derived value (see the module rule)?"""
    if kind == "number":
        shown, decimals = _number(text)
        slack = 0.5 * 10.0**-decimals + 1e-9 * max(1.0, abs(float(value)))
        return abs(shown - float(value)) <= slack
    if kind == "integer":
        return int(text.replace(",", "")) == int(value)
    return text == str(value)


def judge(record: MCQRecord, value: Value) -> Verdict:
    """Compare a re-derived value with the record's options and answer letter."""
    keyed = record.options[record.answer]
    hits = [
        k for k, text in record.options.items() if option_matches(record.answer_kind, text, value)
    ]
    detail = ""
    if question_id(record.question, record.options) != record.id:
        detail = "id does not match the question text and options"
    elif hits != [record.answer]:
        detail = f"options matching the re-derived value: {hits or 'none'}"
    return Verdict(
        record.id, record.template, record.strategy, not detail, keyed, str(value), detail
    )


def _verdict(record: MCQRecord, sim: Simulation) -> Verdict:
    derive = DERIVERS.get(record.template)
    if derive is None:
        return Verdict(
            record.id,
            record.template,
            record.strategy,
            False,
            record.options[record.answer],
            "",
            "unknown template",
        )
    try:
        value = derive(sim, record.params)
    except (ValueError, IndexError, KeyError, StopIteration, ZeroDivisionError) as exc:
        return Verdict(
            record.id,
            record.template,
            record.strategy,
            False,
            record.options[record.answer],
            "",
            f"re-derivation failed: {exc!r}",
        )
    return judge(record, value)


Loader = Callable[[DataRef], pd.DataFrame]


def check_records(
    records: Sequence[MCQRecord],
    loader: Loader = load_bars,
    tick: Callable[[], None] = lambda: None,
) -> CheckReport:
    """Re-run every distinct config once (from the record alone) and judge every record."""
    bars: dict[str, pd.DataFrame] = {}
    sims: dict[str, Simulation] = {}
    verdicts = []
    for record in records:
        cfg = record.config
        data_key = cfg.data.model_dump_json()
        if data_key not in bars:
            bars[data_key] = loader(cfg.data)
        if cfg.key() not in sims:
            sims[cfg.key()] = simulate(cfg, bars[data_key])
        verdicts.append(_verdict(record, sims[cfg.key()]))
        tick()
    return CheckReport(tuple(verdicts), len(sims))
