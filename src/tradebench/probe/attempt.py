"""What one attacker produced for one payload: a validated guess or a counted failure."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from tradebench.probe.types import AttackGuess


class Attempt(BaseModel):
    """One attack on one (probe, variant)."""

    model_config = ConfigDict(frozen=True)

    probe_id: str
    """Probe attacked."""
    level: str
    """Mask level of the payload."""
    price_mode: str
    """Price mode of the payload."""
    attacker: str
    """Attacker label (`openai:model`, `data:returns`, ...)."""
    guess: AttackGuess | None = None
    """The validated guess; None when the attacker gave no valid reply."""
    failure: str | None = None
    """Why there is no guess (excluded from the rates, counted in the report)."""
    unreadable: int = 0
    """Replies that could not be read (garbage, empty, truncated tool JSON)."""
    rejected: int = 0
    """Submissions that failed validation (schema or date)."""
    retries: int = 0
    """Submission attempts after the first."""
    tokens_in: int = 0
    """Prompt tokens spent."""
    tokens_out: int = 0
    """Completion tokens spent."""
    raw: str | None = None
    """The last submission as written (truncated), for auditing failures."""
