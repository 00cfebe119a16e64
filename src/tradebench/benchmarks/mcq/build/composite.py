"""Multi-part answers: what the paper asks as one option ("N shares at P on D").

A composite answer is a form with numbered slots (`{0} buys and {1} sells`) and one typed
part per slot. Its distractors are whole alternative answers: either real ones the template
supplies (a later buy, another quarter's peak) or the key with its numeric parts jittered by
the paper's 7-33% rule (`options.jitter_value`). The record stores the form and the part
kinds (`params["form"]`, `params["kinds"]`) so the checker can read every option back into
its parts and compare each with its own re-derivation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from tradebench.benchmarks.mcq.build.jitter import jitter_value
from tradebench.benchmarks.mcq.build.templates.base import Answer, Instance

PartKind = Literal["number", "integer", "date"]
MAX_DRAWS = 200


@dataclass(frozen=True)
class Part:
    """One slot of a composite answer: its kind, value and display decimals."""

    kind: PartKind
    value: float | int | str
    decimals: int = 2


def show(part: Part) -> str:
    """Display text of one part (thousands separators, fixed decimals)."""
    if part.kind == "number":
        return f"{float(part.value):,.{part.decimals}f}"
    if part.kind == "integer":
        return f"{int(part.value):,}"
    return str(part.value)


def render(form: str, parts: Sequence[Part]) -> str:
    """The option text of `parts` in `form`."""
    return form.format(*(show(p) for p in parts))


Vary = Callable[[tuple[Part, ...], np.random.Generator], tuple[Part, ...] | None]


def jitter_parts(parts: tuple[Part, ...], rng: np.random.Generator) -> tuple[Part, ...] | None:
    """The parts with every number and count moved by the paper's rule; dates kept."""
    out = []
    for part in parts:
        if part.kind == "date":
            out.append(part)
            continue
        value = jitter_value(part.kind, part.value, part.decimals, rng)
        if value is None:
            return None
        out.append(Part(part.kind, value, part.decimals))
    return tuple(out)


def composite(
    text: str,
    form: str,
    key: tuple[Part, ...],
    rng: np.random.Generator,
    real: Sequence[tuple[Part, ...]] = (),
    vary: Vary | None = jitter_parts,
    params: dict | None = None,
) -> Instance:
    """An instance whose answer is `key` in `form`, with up to six alternative answers:
    the `real` ones first, then `vary`'s draws from the key until there are six distinct
    (`vary=None`: real ones only, e.g. where a jittered copy would repeat the key's date)."""
    key_text = render(form, key)
    seen = {key_text}
    alternatives: list[str] = []
    for parts in real:
        option = render(form, parts)
        if option not in seen:
            seen.add(option)
            alternatives.append(option)
    for _ in range(MAX_DRAWS if vary is not None else 0):
        if len(alternatives) >= 6:
            break
        parts = vary(key, rng)  # type: ignore[misc]
        option = None if parts is None else render(form, parts)
        if option is not None and option not in seen:
            seen.add(option)
            alternatives.append(option)
    kinds = [p.kind for p in key]
    return Instance(
        text,
        Answer("composite", key_text),
        {**(params or {}), "form": form, "kinds": kinds},
        tuple(alternatives[:6]),
    )
