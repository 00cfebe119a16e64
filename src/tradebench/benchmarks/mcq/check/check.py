"""Independent check of a question file: re-run each config, re-derive, compare with the key.

A record passes when its id matches its text and options, the checker's own derivation of
the answer matches the option under the answer letter, and no other option matches. A
number matches an option when it lies within half a unit of the option's last decimal
(plus 1e-9 relative slack for float noise); integers, dates and choices must be equal.
A comparative record also re-runs its `alternative` config, which must differ from its
`config` in the strategy parameters only; schema-1 records use the schema-1 definitions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tradebench.benchmarks.mcq.check import (  # noqa: F401  (they register derivers)
    derive_compare,
    derive_legacy,
    derive_risk,
)
from tradebench.benchmarks.mcq.check.derive import COMPARATIVE, DERIVERS, DERIVERS_V1, Value
from tradebench.benchmarks.mcq.check.derive_composite import COMPOSITE as COMPOSITE_PARTS
from tradebench.benchmarks.mcq.check.series import Bars, load_series
from tradebench.benchmarks.mcq.check.simulate import Simulation, simulate
from tradebench.benchmarks.mcq.config import BacktestConfig, DataRef
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


def _parts(form: str, text: str) -> list[str] | None:
    """An option's text read back into the slots of `form` (None when it does not fit)."""
    pieces = re.split(r"\{(\d+)\}", form)
    pattern = "".join(re.escape(piece) if i % 2 == 0 else "(.+?)" for i, piece in enumerate(pieces))
    found = re.fullmatch(pattern, text)
    return None if found is None else list(found.groups())


def composite_matches(params: dict, text: str, value: tuple) -> bool:
    """Does a multi-part option denote every part of the re-derived tuple?"""
    parts = _parts(str(params["form"]), text)
    kinds = list(params["kinds"])
    if parts is None or len(parts) != len(kinds) or len(value) != len(kinds):
        return False
    try:
        return all(option_matches(k, p, v) for k, p, v in zip(kinds, parts, value, strict=True))
    except ValueError:  # a part that is not a number where one is due
        return False


def option_matches(kind: str, text: str, value: Value) -> bool:
    """Does one option's text denote the re-derived value (see the module rule)?"""
    if kind == "number":
        shown, decimals = _number(text)
        slack = 0.5 * 10.0**-decimals + 1e-9 * max(1.0, abs(float(value)))
        return abs(shown - float(value)) <= slack
    if kind == "integer":
        return int(text.replace(",", "")) == int(value)
    return text == str(value)


def judge(record: MCQRecord, value: Value | tuple) -> Verdict:
    """Compare a re-derived value with the record's options and answer letter."""
    keyed = record.options[record.answer]
    if record.answer_kind == "composite":
        hits = [
            k
            for k, text in record.options.items()
            if composite_matches(record.params, text, value)  # type: ignore[arg-type]
        ]
    else:
        hits = [
            k
            for k, text in record.options.items()
            if option_matches(record.answer_kind, text, value)
        ]
    detail = ""
    if question_id(record.question, record.options) != record.id:
        detail = "id does not match the question text and options"
    elif hits != [record.answer]:
        detail = f"options matching the re-derived value: {hits or 'none'}"
    return Verdict(
        record.id, record.template, record.strategy, not detail, keyed, str(value), detail
    )


def _failed(record: MCQRecord, detail: str) -> Verdict:
    return Verdict(
        record.id,
        record.template,
        record.strategy,
        False,
        record.options[record.answer],
        "",
        detail,
    )


def alternative_problem(record: MCQRecord) -> str:
    """Why a record's alternative config is not what its template needs ('' when fine)."""
    alt = record.alternative
    wants = record.template in COMPARATIVE and record.schema_version >= 2
    if alt is None:
        return "a comparative template without its alternative config" if wants else ""
    if not wants:
        return "an alternative config on a template that runs one backtest"
    if alt.strategy.name != record.config.strategy.name:
        return "the alternative config runs another strategy"
    if alt.model_copy(update={"strategy": record.config.strategy}) != record.config:
        return "the alternative config differs in more than the strategy parameters"
    if alt.strategy.params == record.config.strategy.params:
        return "the alternative config has the question's own parameters"
    return ""


def _derive(record: MCQRecord, sim: Simulation, alt: Simulation | None) -> Value | tuple:
    params = record.params
    if record.answer_kind == "composite":
        return COMPOSITE_PARTS[record.template](sim, params)
    if record.schema_version == 1 and record.template in DERIVERS_V1:
        return DERIVERS_V1[record.template](sim, params)
    if alt is not None:
        return COMPARATIVE[record.template](sim, alt, params)
    return DERIVERS[record.template](sim, params)


def _verdict(record: MCQRecord, sim: Simulation, alt: Simulation | None) -> Verdict:
    known = COMPOSITE_PARTS if record.answer_kind == "composite" else {**DERIVERS, **COMPARATIVE}
    if record.template not in known:
        return _failed(record, "unknown template")
    problem = alternative_problem(record)
    if problem:
        return _failed(record, problem)
    try:
        value = _derive(record, sim, alt)
    except (ValueError, IndexError, KeyError, StopIteration, ZeroDivisionError) as exc:
        return _failed(record, f"re-derivation failed: {exc!r}")
    return judge(record, value)


Loader = Callable[[DataRef], Bars]


def check_records(
    records: Sequence[MCQRecord],
    loader: Loader = load_series,
    tick: Callable[[], None] = lambda: None,
) -> CheckReport:
    """Re-run every distinct config once (from the record alone) and judge every record."""
    bars: dict[str, Bars] = {}
    sims: dict[str, Simulation] = {}

    def run(cfg: BacktestConfig) -> Simulation:
        data_key = cfg.data.model_dump_json()
        if data_key not in bars:
            bars[data_key] = loader(cfg.data)
        if cfg.key() not in sims:
            sims[cfg.key()] = simulate(cfg, bars[data_key])
        return sims[cfg.key()]

    verdicts = []
    for record in records:
        sim = run(record.config)
        alt = None
        if record.alternative is not None and not alternative_problem(record):
            alt = run(record.alternative)
        verdicts.append(_verdict(record, sim, alt))
        tick()
    return CheckReport(tuple(verdicts), len(sims))
