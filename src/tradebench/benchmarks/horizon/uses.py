"""Where a measured horizon is used: the mandate certificate, the leaderboard's cutoff split
and the choice of evaluation windows.

Certificate (`measured_reason`, `with_measured_horizon`): the measured horizon stands
beside the stated cutoff. For a model agent whose window starts in month W, with the
certificate's margin of m months:

- FAIL: the measured horizon month is W or later (the model remembers facts of the window).
- UNKNOWN: no probe of the agent; a control above chance (invalid curve); the probe lacks
  power (a curve month below the target power for the design lift); the probe's curve stops
  before the month before W while the model was served later (unprobed months); or the
  horizon's bootstrap upper bound (or its censored end) plus m months reaches W.
- otherwise no finding: the measured side is clear of the window by the margin.

The combined verdict is the worst of the stated certificate and the measured finding, so
PASS needs both clear.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from pathlib import Path

import pandas as pd

from tradebench.benchmarks.horizon.curve import Horizon
from tradebench.benchmarks.mandate.certificate import (
    EpisodeCertificate,
    Reason,
    combine,
    read_certificates,
)

MEASURED_FILE = "certificate_measured.parquet"


def _month(day: date | str) -> pd.Period:
    return pd.Period(str(day)[:7], "M")


def _unknown(text: str) -> Reason:
    return Reason(rule="measured_horizon", verdict="UNKNOWN", evidence=text)


def measured_reason(h: Horizon | None, window_start: date, margin_months: int) -> Reason | None:
    """The measured-horizon finding for a window starting on `window_start` (module rules)."""
    window = _month(window_start)
    if h is None:
        return _unknown("no horizon probe of this model (tradebench horizon)")
    if h.horizon is not None and _month(h.horizon) >= window:
        return Reason(
            rule="measured_horizon",
            verdict="FAIL",
            evidence=f"measured horizon {h.horizon} reaches the window starting "
            f"{window_start.isoformat()}: the model recalls facts of the window's months",
        )
    if not h.valid:
        bad = ", ".join(c.name for c in h.controls if c.above)
        return _unknown(f"the probe's controls are above chance ({bad}): its curve is invalid")
    if not h.powered:
        return _unknown(f"the probe lacks power: not every month reaches "
                        f"{h.target_power:.0%} power for +{h.lift:.0%} over chance")  # fmt: skip
    curve = [r.month for r in h.months if r.role == "curve"]
    served = _month(h.serving_date) if h.serving_date else None
    needed = window - 1 if served is None else min(window - 1, served)
    if not curve or _month(curve[-1]) < needed:
        last = curve[-1] if curve else "no month"
        return _unknown(f"the probe stops at {last}, before {needed}: later months unprobed")
    upper = h.horizon_high or h.horizon
    if upper is not None and _month(upper) + margin_months >= window:
        return _unknown(f"measured horizon {h.horizon} (up to {upper}) + {margin_months} "
                        f"months is not before the window's month {window}")  # fmt: skip
    return None


def with_measured_horizon(cert: EpisodeCertificate, h: Horizon | None) -> EpisodeCertificate:
    """The certificate with the measured-horizon finding added and the verdict recombined
    (rule agents are returned unchanged: they have no training data)."""
    if not cert.is_model:
        return cert
    reason = measured_reason(h, date.fromisoformat(cert.window_start), cert.margin_months)
    reasons = [*cert.reasons, *([reason] if reason else [])]
    return cert.model_copy(
        update={"reasons": reasons, "verdict": combine(r.verdict for r in reasons)}
    )


def certify_run(run_dir: Path, horizons: Mapping[str, Horizon]) -> pd.DataFrame:
    """Every episode certificate of a mandate run beside its measured horizon; writes
    `RUN_DIR/certificate_measured.parquet` (the stated certificates are left as they are)."""
    rows = []
    for cert in read_certificates(Path(run_dir)):
        h = horizons.get(cert.agent)
        both = with_measured_horizon(cert, h)
        added = both.reasons[len(cert.reasons) :]
        rows.append(
            {
                "episode_id": cert.episode_id,
                "agent": cert.agent,
                "window_start": cert.window_start,
                "stated_cutoff": cert.knowledge_cutoff,
                "stated_verdict": cert.verdict,
                "measured_horizon": h.horizon if h else None,
                "measured_finding": added[0].evidence if added else "",
                "verdict": both.verdict,
            }
        )
    table = pd.DataFrame(rows)
    table.to_parquet(Path(run_dir) / MEASURED_FILE, index=False)
    return table


def measured_cutoffs(horizons: Mapping[str, Horizon]) -> dict[str, date]:
    """Per agent with a valid measured horizon: the last day of its bootstrap upper month,
    for the leaderboard's cutoff split (`LeaderboardOptions.cutoffs`)."""
    out = {}
    for agent, h in horizons.items():
        upper = h.horizon_high or h.horizon
        if h.valid and upper is not None:
            out[agent] = _month(upper).end_time.date()
    return out


def first_window_start(h: Horizon, margin_months: int = 0) -> date:
    """The first day a window may start for this model: the first day of the month after
    its measured horizon's upper bound plus `margin_months` (after the first probed month's
    start when it shows no horizon).

    Raises:
        ValueError: The curve is invalid (a control is above chance): it bounds nothing.
    """
    if not h.valid:
        raise ValueError(f"{h.agent}: the probe's controls are above chance; no window is safe")
    upper = h.horizon_high or h.horizon
    if upper is None:
        first = _month(h.months[0].month) if h.months else None
        return first.start_time.date() if first is not None else date.min
    return (_month(upper) + 1 + margin_months).start_time.date()
