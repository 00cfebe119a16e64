"""The horizon benchmark's report section: per agent the curve, the controls printed
beside it, the horizon with its interval, and the power of the months."""

from __future__ import annotations

from typing import Any

import pandas as pd

from tradebench.benchmarks.horizon.plot import horizon_figure
from tradebench.benchmarks.horizon.results import write_results
from tradebench.errors import ConfigError
from tradebench.report.html import Section, figure_html, note, table
from tradebench.report.load import RunData


def _verdict(h: Any) -> str:
    if not h.valid:
        return "INVALID: a control is above chance, so the curve measures the prompt, not memory"
    if h.horizon is None:
        return f"no horizon: no month before the first run of {h.run} at-chance months"
    span = f"{h.horizon_low or 'none'} .. {h.horizon_high or 'none'}"
    more = " (censored: above chance through the last curve month)" if h.censored else ""
    return (
        f"measured horizon {h.horizon}{more}; 90% bootstrap interval {span}; "
        f"{h.no_horizon_share:.0%} of resamples show none"
    )


def horizon_section(run: RunData, options: Any) -> Section | None:
    """Curves, controls and horizons of a horizon run (writes horizon.json and plots)."""
    try:
        result, _ = write_results(run.run_dir)
    except ConfigError:
        return None
    parts = [note(
        "Accuracy per calendar month on dated market facts, with 95% Wilson intervals, "
        "against chance (one-sided exact test). Controls must be at chance: the same "
        "questions with identities hidden (blinded) and months after the model's serving "
        "date. See docs/horizon.md for the change-point rule."
    )]  # fmt: skip
    for h in result.agents:
        parts.append(f"<h3>{h.agent}</h3>" + note(_verdict(h)))
        parts.append(figure_html(horizon_figure(h), f"horizon {h.agent}"))
        controls = pd.DataFrame([c.model_dump() for c in h.controls])
        parts.append(table(controls[["name", "n", "correct", "accuracy", "low", "high",
                                     "chance", "p_value", "above", "note"]]))  # fmt: skip
        months = pd.DataFrame([m.model_dump() for m in h.months])
        parts.append(table(months[["month", "role", "n", "correct", "accuracy", "low", "high",
                                   "chance", "p_value", "above", "power"]]))  # fmt: skip
        powered = "every curve month reaches" if h.powered else "NOT every curve month reaches"
        parts.append(note(f"Power: {powered} {h.target_power:.0%} power for +{h.lift:.0%}."))
    return Section("Knowledge horizon", "".join(parts))


HORIZON_SECTIONS = (horizon_section,)
