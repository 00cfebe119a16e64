"""Run specs: YAML, pydantic-validated, the same shape for every benchmark.

A spec names its `benchmark`, the data, the windows, the grid axes (modes, masks, seeds,
agents), the model limits (budget, concurrency, cache) and an `options` block that the
benchmark validates with its own options model (`runs.protocol.Benchmark.options_model`).
Modes are the benchmark's information modes; a benchmark without modes ignores them.
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
    field_validator,
    model_validator,
)

from tradebench.errors import ConfigError
from tradebench.llm.budget import BudgetConfig
from tradebench.llm.limits import MinuteLimits
from tradebench.llm.presets import PRESETS
from tradebench.llm.retry import RetryPolicy
from tradebench.llm.types import ForcedChoice, ModelConfig, ToolProtocol, check_base_url
from tradebench.masking import MASK_LEVELS, MaskLevel

SPEC_VERSION = 2
"""Version of the spec layout written to `spec.yaml` (1 kept options per benchmark name)."""


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
    "baseline": "names a baseline, which has no model",
    "args": "a baseline's arguments",
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
"""The `AgentEntry` fields that reach neither a model's request nor the reply cache's key,
each with why. Every other field does: it is sent in the request and hashed in the key
(docs/runs.md, "What reaches the model")."""


class AgentEntry(BaseModel):
    """An agent of the grid: an LLM (`provider` + `model`) or a `baseline` by name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,40}$", description="label in results")
    baseline: str | None = Field(default=None, description="registered baseline name")
    args: dict[str, Any] = Field(default_factory=dict, description="baseline arguments")
    provider: Literal["openai", "anthropic"] | None = None
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = Field(default=None, description="env var holding the key")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=1024, ge=16)
    extra: dict[str, Any] = Field(default_factory=dict)
    tool_protocol: ToolProtocol = Field(
        default="auto",
        description="`native`, `text` (tools rendered into the prompt, calls read from text) "
        "or `auto` (a custom endpoint is probed once for a template that drops tools)",
    )
    forced_choice: ForcedChoice = Field(
        default="ladder",
        description="how a forced tool call is sent: `ladder` (object form of tool_choice, "
        "stepping down when the endpoint refuses or ignores it) or one form pinned "
        "(`object`, `required`, `auto`, `text`)",
    )
    limits: MinuteLimits | None = Field(
        default=None,
        description="rate limits of this model at its endpoint: `{rpm, tpm}` (requests and "
        "tokens per minute)",
    )
    endpoint: str | None = Field(
        default=None,
        description="endpoint preset (vllm, llama.cpp, ollama, lmstudio, openrouter, deepseek, "
        "together, groq, dashscope, moonshot, zhipu): base_url, key variable and capabilities",
    )

    @field_validator("endpoint")
    @classmethod
    def _known_endpoint(cls, value: str | None) -> str | None:
        if value is not None and value not in PRESETS:
            raise ValueError(f"unknown endpoint {value!r}; known: {', '.join(sorted(PRESETS))}")
        return value

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

    @model_validator(mode="after")
    def _one_kind(self) -> AgentEntry:
        if (self.baseline is None) == (self.model is None):
            raise ValueError(f"agent {self.name!r}: give either `baseline` or `provider`+`model`")
        if self.model is not None and self.provider is None:
            raise ValueError(f"agent {self.name!r}: `model` needs a `provider`")
        return self

    @property
    def is_llm(self) -> bool:
        """True for a model-backed agent."""
        return self.model is not None

    @field_validator("base_url")
    @classmethod
    def _reachable(cls, value: str | None) -> str | None:
        return check_base_url(value)

    def retry_policy(self) -> RetryPolicy | None:
        """This agent's retry policy when the spec sets one of its limits, else None."""
        limits = {"timeout_s": self.timeout_s, "max_attempts": self.max_attempts}
        given = {k: v for k, v in limits.items() if v is not None}
        return RetryPolicy(**given) if given else None

    def model_config_(self) -> ModelConfig:
        """The `ModelConfig` of an LLM agent."""
        return ModelConfig(
            provider=self.provider,
            model=self.model,
            base_url=self.base_url,
            api_key_env=self.api_key_env,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            extra=self.extra,
            tool_protocol=self.tool_protocol,
            forced_choice=self.forced_choice,
            endpoint=self.endpoint,
        )


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
        default_factory=list, description="the benchmark's information modes (empty: all)"
    )
    masks: list[MaskLevel] = Field(default_factory=lambda: list(MASK_LEVELS))
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
