"""Run specs: YAML, pydantic-validated, the same shape for every benchmark.

A spec names its `benchmark`, the data, the windows, the grid axes (modes, masks, seeds,
agents), the model limits (budget, concurrency, cache) and an `options` block that the
benchmark validates with its own options model (`runs.protocol.Benchmark.options_model`).
Modes and masks are grid axes: the benchmark declares which it has, the values it accepts
and its defaults (`runs.axes`); the executor resolves them before anything runs.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from tradebench.errors import ConfigError
from tradebench.llm.budget import BudgetConfig
from tradebench.llm.limits import MinuteLimits
from tradebench.llm.retry import RetryPolicy
from tradebench.llm.types import ModelConfig

SPEC_VERSION = 3
"""Version of the spec layout written to `spec.yaml` (1 kept options per benchmark name; 2
kept an agent's model fields beside its own and named rule agents `baseline`). Older layouts
still load."""


class Window(BaseModel):
    """An evaluation window of decision days (both ends inclusive)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    start: date = Field(description="first decision day")
    end: date = Field(description="last decision day")

    @model_validator(mode="after")
    def _ordered(self) -> Window:
        if self.end < self.start:
            raise ValueError(f"window ends ({self.end}) before it starts ({self.start})")
        return self

    @property
    def span(self) -> str:
        """`YYYYMMDD-YYYYMMDD`, the window part of episode ids."""
        return f"{self.start:%Y%m%d}-{self.end:%Y%m%d}"


NOT_SENT_TO_MODEL: dict[str, str] = {
    "name": "the agent's label in results",
    "agent": "names a rule or outside agent, which has no model",
    "args": "a rule or outside agent's arguments",
    "base_url": "where requests go, not what they ask (outside the cache key, so a model's "
    "replies replay after it moves servers)",
    "api_key_env": "names the variable holding the key; a credential is in no request body "
    "and no cache key",
    "max_steps": "how many steps an episode runs, not what a step asks",
    "timeout_s": "the HTTP client's per-attempt timeout (transport)",
    "max_attempts": "how often the HTTP client tries a request (transport)",
    "knowledge_cutoff": "read by the leaderboard only",
    "limits": "how fast requests are sent, not what they ask",
    "endpoint": "a preset of where requests go and which tool_choice forms they use",
}
"""The agent-entry fields (the entry's own and its `model` block's) that reach neither a
model's request nor the reply cache's key, each with why. Every other field does: it is sent
in the request and hashed in the key (docs/runs.md, "What reaches the model")."""

MODEL_FIELDS = tuple(ModelConfig.model_fields)
"""The fields of an agent's `model` block (a `ModelConfig`)."""
_FLAT_DEFAULTS: dict[str, Any] = {
    **{k: f.get_default(call_default_factory=True) for k, f in ModelConfig.model_fields.items()
       if not f.is_required()},
    "provider": None,
    "model": None,
}  # fmt: skip
"""What a spec-version-2 agent entry held for the model fields when it gave none."""


def _shorthand(model: str) -> dict[str, Any]:
    """`provider:model` as the fields of a model block."""
    provider, sep, name = model.partition(":")
    if not sep or not provider or not name:
        raise ValueError(
            f"model {model!r} names no provider: write `provider:model` (e.g. "
            "`openai:gpt-4.1-mini`) or a block with `provider:` and `model:`"
        )
    return {"provider": provider, "model": name}


def _nest_model(raw: Any) -> Any:
    """Read the layouts an agent entry had before its model became one block: the model's
    fields side by side with the entry's (spec version 2: `provider`, `model`, `base_url`,
    ...), and `baseline` for what is now `agent`. A `model` given as `provider:model`
    shorthand becomes the block."""
    if not isinstance(raw, dict):
        return raw
    out = dict(raw)
    if "baseline" in out:
        if out.get("agent") is not None:
            raise ValueError("give `agent` (the newer name of `baseline`), not both")
        out["agent"] = out.pop("baseline")
    flat = {k: out.pop(k) for k in MODEL_FIELDS if k != "model" and k in out}
    model = out.get("model")
    if isinstance(model, str):
        block = {"model": model} if "provider" in flat else _shorthand(model)
        out["model"] = {**flat, **block}
    elif flat and model is None:  # a rule agent of version 2 carried the model's defaults
        out.pop("model", None)
        given = sorted(k for k, v in flat.items() if v != _FLAT_DEFAULTS.get(k))
        if given:
            raise ValueError(f"{', '.join(given)} given without a `model`")
    elif flat:
        raise ValueError(
            f"{', '.join(sorted(flat))} belong inside the `model:` block, not beside it"
        )
    return out


class AgentEntry(BaseModel):
    """An agent of the grid: a model (`model:` block, a `ModelConfig`) or a rule or outside
    agent (`agent:` a registered name, an installed package's entry-point name, or a
    `module:Class` path) with its `args`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,40}$", description="label in results")
    agent: str | None = Field(
        default=None,
        description="a registered agent (baseline, factor model), an entry point of "
        "`tradebench.agents`, or `module:Class`",
    )
    args: dict[str, Any] = Field(default_factory=dict, description="the agent's arguments")
    model: ModelConfig | None = Field(
        default=None,
        description="how to reach the model of a model agent (`provider`, `model`, "
        "`base_url`, `api_key_env`, `temperature`, `max_tokens`, ...), or `provider:model`",
    )
    limits: MinuteLimits | None = Field(
        default=None,
        description="rate limits of this model at its endpoint: `{rpm, tpm}` (requests and "
        "tokens per minute)",
    )
    max_steps: int | None = Field(
        default=None, ge=1, description="cap on this agent's steps per episode (slow models)"
    )
    timeout_s: float | None = Field(
        default=None, gt=0, description="per-attempt HTTP timeout (default 120 s)"
    )
    max_attempts: int | None = Field(
        default=None, ge=1, description="attempts per request, first included (default 6)"
    )
    knowledge_cutoff: date | None = Field(
        default=None,
        description="last day the model's training data may cover; the leaderboard keeps "
        "windows after it apart from those it may have seen",
    )

    _read_flat_layout = model_validator(mode="before")(_nest_model)

    @model_validator(mode="after")
    def _one_kind(self) -> AgentEntry:
        if (self.agent is None) == (self.model is None):
            raise ValueError(
                f"agent {self.name!r}: give either `agent` (a registered or `module:Class` "
                "agent) or `model` (a model block, or `provider:model`)"
            )
        if self.model is not None and self.model.max_tokens < 16:
            raise ValueError(f"agent {self.name!r}: model.max_tokens must be at least 16")
        return self

    @property
    def is_llm(self) -> bool:
        """True for a model-backed agent."""
        return self.model is not None

    @property
    def baseline(self) -> str | None:
        """The rule or outside agent's name or path (None for a model agent)."""
        return self.agent

    @property
    def temperature(self) -> float:
        """The model's sampling temperature (0 for a rule agent)."""
        return self.model.temperature if self.model is not None else 0.0

    @property
    def max_tokens(self) -> int:
        """The model's cap on output tokens per reply (the default for a rule agent)."""
        return self.model.max_tokens if self.model is not None else _FLAT_DEFAULTS["max_tokens"]

    def retry_policy(self) -> RetryPolicy | None:
        """This agent's retry policy when the spec sets one of its limits, else None."""
        limits = {"timeout_s": self.timeout_s, "max_attempts": self.max_attempts}
        given = {k: v for k, v in limits.items() if v is not None}
        return RetryPolicy(**given) if given else None

    def model_config_(self) -> ModelConfig:
        """The `ModelConfig` of a model agent.

        Raises:
            ConfigError: The entry is a rule or outside agent.
        """
        if self.model is None:
            raise ConfigError(f"agent {self.name!r} has no model")
        return self.model


def flat_agent_entry(raw: dict[str, Any]) -> dict[str, Any]:
    """One agent entry of a `spec.yaml` in any layout, in the flat layout of spec version 2
    (the model's fields beside the entry's, `baseline` for `agent`): the form in which
    readers compare agents across run folders written before and after the model became a
    block. Nothing is validated (a folder's provider need not be installed to read it)."""
    out = dict(raw)
    if "agent" in out:
        out["baseline"] = out.pop("agent")
    model = out.get("model")
    block = dict(model) if isinstance(model, dict) else {}
    if isinstance(model, dict) or model is None:
        out.pop("model", None)
        out = {**_FLAT_DEFAULTS, **out, **block}
    return out


class CacheSpec(BaseModel):
    """Where model replies are cached and how."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str | None = Field(default=None, description="SQLite file; default RUN_DIR/cache.sqlite")
    mode: Literal["readwrite", "replay", "off"] = "readwrite"


def validation_lines(exc: ValidationError, limit: int = 8) -> str:
    """A pydantic error as `field.path: message` lines."""
    return "\n  ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:limit])


class RunSpec(BaseModel):
    """A whole experiment: benchmark, data, grid and limits."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SPEC_VERSION
    benchmark: str = Field(default="portfolio", description="registered benchmark name")
    dataset: str = Field(description="dataset folder, or `synthetic:cn` / `synthetic:cn:SEED`")
    windows: list[Window] = Field(
        default_factory=list, description="decision windows (a benchmark may bring its own)"
    )
    modes: list[str] = Field(
        default_factory=list,
        description="the benchmark's modes (omitted: its default modes; the resolved spec "
        "records those run)",
    )
    masks: list[str] = Field(
        default_factory=list,
        description="mask levels (omitted: the benchmark's default levels; the resolved spec "
        "records those run)",
    )
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    agents: list[AgentEntry] = Field(min_length=1)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    concurrency: int = Field(default=4, ge=1, le=256)
    cache: CacheSpec = Field(default_factory=CacheSpec)
    executor: Literal["local", "ray"] = Field(
        default="local",
        description="`local` (process pool and one event loop) or `ray` (episodes as Ray tasks "
        "and actors on a cluster; needs the `ray` extra); results are the same",
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="the benchmark's options (its options model)"
    )

    @model_validator(mode="before")
    @classmethod
    def _read_version_1(cls, raw: Any) -> Any:
        """Version 1 kept single-stock options under `single_stock:` beside portfolio ones."""
        if not isinstance(raw, dict) or "single_stock" not in raw:
            return raw
        out = dict(raw)
        block = out.pop("single_stock")
        if out.get("benchmark") != "single_stock":
            raise ValueError(
                "the `single_stock` block needs `benchmark: single_stock` "
                "(and options now go under `options:`)"
            )
        out["options"] = block or {}
        return out

    @model_validator(mode="after")
    def _unique_agents(self) -> RunSpec:
        names = [a.name for a in self.agents]
        if len(names) != len(set(names)):
            raise ValueError(f"agent names must be unique, got {names}")
        return self

    @model_validator(mode="after")
    def _limits_bind(self) -> RunSpec:
        """Rate limits are kept by the local executor's model pool; Ray workers build their
        models without it, so a limit there would be a field that reaches no request."""
        limited = [a.name for a in self.agents if a.limits is not None]
        if self.executor == "ray" and limited:
            raise ValueError(
                f"`limits` ({', '.join(limited)}) are kept by the local executor only; "
                "run with `executor: local`, or drop `limits` and bound `concurrency`"
            )
        return self

    @classmethod
    def load(cls, path: Path) -> RunSpec:
        """Read and validate a YAML spec; errors name the field and the fix."""
        try:
            raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read run spec {path}: {exc}") from None
        except ValueError as exc:  # YAML reads 2024-13-45 as a date and fails on it
            raise ConfigError(
                f"invalid run spec {path}: {exc}; dates are YYYY-MM-DD (a real day)"
            ) from None
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            raise ConfigError(f"invalid run spec {path}:\n  {validation_lines(exc)}") from None

    def options_as(self, model: type[BaseModel]) -> BaseModel:
        """The `options` block validated by a benchmark's options model.

        Raises:
            ConfigError: An option is unknown or invalid (each field named).
        """
        try:
            return model.model_validate(self.options)
        except ValidationError as exc:
            lines = validation_lines(exc).replace("\n  ", "\n  options.")
            raise ConfigError(
                f"invalid options for benchmark {self.benchmark!r}:\n  options.{lines}"
            ) from None

    def sampling_warnings(self) -> list[str]:
        """One line per model agent whose seeds are not independent samples: at
        temperature 0 a model answers the same prompt the same way, so its seeds differ
        only where the prompt does (the seed-dependent aliases and dates of masked runs)."""
        if len(self.seeds) < 2:
            return []
        return [
            f"agent {a.name!r} runs {len(self.seeds)} seeds at temperature 0: its seeds only "
            "reshuffle aliases (identical prompts under `bright`), so they are not "
            "independent samples; set a temperature > 0 for that"
            for a in self.llm_agents()
            if a.temperature == 0
        ]

    def llm_agents(self) -> list[AgentEntry]:
        """The model-backed agents, in spec order."""
        return [a for a in self.agents if a.is_llm]

    def agent(self, name: str) -> AgentEntry:
        """The agent entry called `name`."""
        return next(a for a in self.agents if a.name == name)

    def dump(self) -> str:
        """The resolved spec as YAML (written to RUN_DIR/spec.yaml)."""
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False)
