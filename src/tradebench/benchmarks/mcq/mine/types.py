"""Typed configuration and stored records of MCQ mining (`tradebench mcq mine`).

Every stored line is a versioned pydantic model: `MinedQuestion` (db/mcq), `AttemptRecord`
(db/attempts), `MineSummary` (db/summary). None of them holds a clock reading: given the
same database state, the same cache and the same spec, a run writes the same lines.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tradebench.benchmarks.mcq.config import DataRef
from tradebench.llm.budget import BudgetConfig
from tradebench.llm.cache import CacheMode
from tradebench.llm.limits import MinuteLimits
from tradebench.llm.types import ModelConfig, Usage

Outcome = Literal[
    "accepted", "review", "too_easy", "failed_code", "malformed", "ill_posed", "duplicate"
]
OUTCOMES: tuple[Outcome, ...] = (
    "accepted",
    "review",
    "too_easy",
    "failed_code",
    "malformed",
    "ill_posed",
    "duplicate",
)
Role = Literal["generator", "solver_no_tools", "solver_with_tools"]
ROLES: tuple[Role, ...] = ("generator", "solver_no_tools", "solver_with_tools")
DistractorSource = Literal["seeds", "jitter", "seeds+jitter"]


class MineSpec(BaseModel):
    """What to mine: models, rounds, seeds, limits and the optional data the code sees."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    generator: ModelConfig
    """The model that writes questions and their verification code."""
    solver: ModelConfig
    """The model that solves them (stage 1 without tools, stage 2 with run_python)."""
    solver_with_tools: ModelConfig | None = None
    """Stage 2's model when it differs from stage 1's (`solver` then solves stage 1 only)."""
    rounds: int = Field(default=1, ge=1)
    """Generation rounds; each round sees the outcomes of all earlier attempts."""
    per_round: int = Field(default=1, ge=1)
    """Questions generated per round (concurrently)."""
    seed: int = 0
    """Base seed: attempt n of the database runs its code with MCQ_SEED = seed + n."""
    code_timeout_s: float = Field(default=120.0, gt=0)
    """Wall-clock limit of one run of the verification code."""
    solver_timeout_s: float = Field(default=30.0, gt=0)
    """Wall-clock limit of one run_python call of the stage-2 solver."""
    max_tool_calls: int = Field(default=8, ge=0)
    """run_python calls allowed to the stage-2 solver."""
    allow_weak_sandbox: bool = False
    """Run model code even where the kernel lacks a sandbox layer."""
    concurrency: int = Field(default=4, ge=1)
    """Attempts verified and solved at once."""
    history: int = Field(default=12, ge=0)
    """Earlier attempts shown to the generator (most recent last)."""
    data: DataRef | None = None
    """Bars written as bars.csv for the code and the tool solver; None = no files."""
    cache_mode: CacheMode = "readwrite"
    """Response cache mode (DB_DIR/cache.sqlite)."""
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    """Token and cost caps of a run (both models; spend saved in DB_DIR/budget.json)."""
    limits: MinuteLimits | None = None
    """Rate limits of each endpoint (`--rpm`, `--tpm`); None = none but the 429s'."""


class TokenCount(BaseModel):
    """Tokens of one role."""

    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    """Prompt tokens."""
    output_tokens: int = 0
    """Completion tokens."""

    def plus(self, usage: Usage | TokenCount) -> TokenCount:
        """This count with `usage` added."""
        return TokenCount(
            input_tokens=self.input_tokens + usage.input_tokens,
            output_tokens=self.output_tokens + usage.output_tokens,
        )


class AttemptRecord(BaseModel):
    """One generation attempt and what happened to it (a line of db/attempts)."""

    model_config = ConfigDict(frozen=True)

    schema_version: int = 1
    """Record layout version."""
    run: int
    """Run ordinal in this database (1-based)."""
    round: int
    """Round within the run (1-based)."""
    index: int
    """Attempt within the round (0-based; the generator's sample index)."""
    seed: int
    """MCQ_SEED the verification code ran with."""
    outcome: Outcome
    """accepted, review, too_easy, failed_code, malformed, ill_posed or duplicate."""
    reason: str
    """Why, in one line (also shown to the generator in later rounds)."""
    question_sha256: str | None = None
    """SHA-256 of the whitespace-normalised question text; None when unparsed."""
    content_sha256: str | None = None
    """SHA-256 of the whole question (text, sorted options, answer value): the dedup key
    across rounds and runs; None before the options were built."""
    domain: str | None = None
    """The domain the generator labelled the question with (None when unparsed)."""
    question: str | None = None
    """The question text as generated (None when unparsed)."""
    answer_value: str | None = None
    """Last stdout line of the verification code."""
    answer: str | None = None
    """Correct letter once options were built."""
    stage1_letter: str | None = None
    """Letter the no-tools solver gave (None: not asked or no letter)."""
    stage2_letter: str | None = None
    """Letter the tools solver submitted (None: not asked or no submission)."""
    distractor_source: DistractorSource | None = None
    """Where the wrong options came from."""
    tokens: dict[str, TokenCount] = Field(default_factory=dict)
    """Tokens per role spent on this attempt."""


class MinedQuestion(BaseModel):
    """A well-posed question no solver got without tools (a line of db/mcq)."""

    model_config = ConfigDict(frozen=True)

    schema_version: int = 1
    """Record layout version."""
    id: str
    """SHA-256 of the whole question: text, sorted options, answer value (the dedup key)."""
    domain: str = "unlabelled"
    """The generator's domain label (`mine.parse.DOMAINS`)."""
    status: Literal["accepted", "review"]
    """accepted: the tools solver got it right; review: it did not (human review queue)."""
    question: str
    """The text solvers saw (data line + question)."""
    stem: str
    """The question as generated."""
    options: dict[str, str]
    """Options A-D."""
    answer: str
    """Correct letter."""
    answer_value: str
    """The value the code printed."""
    distractor_source: DistractorSource
    """Where the wrong options came from."""
    code: str
    """The verification program."""
    rationale: str
    """The generator's rationale."""
    seed: int
    """MCQ_SEED of the answer run."""
    data: DataRef | None
    """The bars the code and the tool solver saw."""
    run: int
    """Run ordinal."""
    round: int
    """Round within the run."""
    generator: str
    """Generator `provider:model`."""
    solver: str
    """Stage-1 (no tools) solver `provider:model`."""
    solver_with_tools: str = ""
    """Stage-2 (tools) solver `provider:model` (empty in records written before the roles
    could differ: then `solver`)."""
    stage1_letter: str | None
    """No-tools solver's letter."""
    stage2_letter: str | None
    """Tools solver's letter."""
    prompts_sha256: str
    """SHA-256 of the MCQ prompt files."""


class MineSummary(BaseModel):
    """One mining run's totals (a line of db/summary)."""

    model_config = ConfigDict(frozen=True)

    schema_version: int = 1
    """Record layout version."""
    run: int
    """Run ordinal."""
    generator: str
    """Generator `provider:model`."""
    solver: str
    """Stage-1 (no tools) solver `provider:model`."""
    solver_with_tools: str = ""
    """Stage-2 (tools) solver `provider:model`."""
    rounds: int
    """Rounds run."""
    attempts: int
    """Attempts made."""
    outcomes: dict[str, int]
    """Count per outcome (every outcome listed)."""
    acceptance_rate: float
    """accepted / attempts."""
    tokens: dict[str, TokenCount]
    """Tokens per role."""
    prompts_sha256: str
    """SHA-256 of the MCQ prompt files."""
