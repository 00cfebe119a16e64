"""Run specs (YAML, pydantic-validated) and their expansion into episodes."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tradebench.benchmarks.single_stock.config import SingleStockOptions
from tradebench.errors import ConfigError
from tradebench.llm.budget import BudgetConfig
from tradebench.llm.types import ModelConfig
from tradebench.masking import MASK_LEVELS, MaskLevel

Mode = Literal["memory_only", "fixed_candidate", "open_research"]
MODES: tuple[Mode, ...] = ("memory_only", "fixed_candidate", "open_research")


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
    temperature: float = 0.0
    max_tokens: int = Field(default=1024, ge=16)
    extra: dict[str, Any] = Field(default_factory=dict)
    max_steps: int | None = Field(
        default=None, ge=1, description="cap on this agent's steps per episode (slow models)"
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
        )


class CacheSpec(BaseModel):
    """Where model replies are cached and how."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str | None = Field(default=None, description="SQLite file; default RUN_DIR/cache.sqlite")
    mode: Literal["readwrite", "replay", "off"] = "readwrite"


class PortfolioOptions(BaseModel):
    """Per-benchmark options of `portfolio`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_tool_calls: int = Field(default=20, ge=0, description="research calls per step")
    max_submit_retries: int = Field(default=3, ge=0)
    candidates_k: int = Field(default=10, ge=1, description="top-k per factor in the table")
    price_mode: Literal["raw", "rebased"] = "raw"
    initial_cash: float = Field(default=1_000_000.0, gt=0)
    prompt_version: str = "v1"
    max_steps: int | None = Field(default=None, ge=1, description="cap on steps per episode")


class RunSpec(BaseModel):
    """A whole experiment: benchmark, data, grid and limits."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    benchmark: Literal["portfolio", "single_stock"] = "portfolio"
    dataset: str = Field(description="dataset folder, or `synthetic:cn` / `synthetic:cn:SEED`")
    windows: list[Window] = Field(min_length=1)
    modes: list[Mode] = Field(default_factory=lambda: list(MODES))
    masks: list[MaskLevel] = Field(default_factory=lambda: list(MASK_LEVELS))
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    agents: list[AgentEntry] = Field(min_length=1)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    concurrency: int = Field(default=4, ge=1, le=256)
    cache: CacheSpec = Field(default_factory=CacheSpec)
    options: PortfolioOptions = Field(default_factory=PortfolioOptions)
    single_stock: SingleStockOptions | None = Field(
        default=None, description="options of `benchmark: single_stock` (defaults if omitted)"
    )

    @model_validator(mode="after")
    def _unique_agents(self) -> RunSpec:
        names = [a.name for a in self.agents]
        if len(names) != len(set(names)):
            raise ValueError(f"agent names must be unique, got {names}")
        return self

    @model_validator(mode="after")
    def _single_stock_block(self) -> RunSpec:
        if self.benchmark == "single_stock" and self.single_stock is None:
            self.single_stock = SingleStockOptions()
        elif self.benchmark != "single_stock" and self.single_stock is not None:
            raise ValueError("the `single_stock` block needs `benchmark: single_stock`")
        return self

    @classmethod
    def load(cls, path: Path) -> RunSpec:
        """Read and validate a YAML spec; errors name the field and the fix."""
        try:
            raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read run spec {path}: {exc}") from None
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            lines = [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:8]]
            raise ConfigError(f"invalid run spec {path}:\n  " + "\n  ".join(lines)) from None

    def dump(self) -> str:
        """The resolved spec as YAML (written to RUN_DIR/spec.yaml)."""
        unset = {"single_stock"} if self.single_stock is None else None  # portfolio: as before
        return yaml.safe_dump(self.model_dump(mode="json", exclude=unset), sort_keys=False)


class Episode(BaseModel):
    """One cell of the grid."""

    model_config = ConfigDict(frozen=True)

    id: str
    agent: str
    kind: Literal["llm", "baseline", "benchmark"]
    mode: str
    mask: str
    seed: int
    window: Window


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text)


def expand(spec: RunSpec) -> list[Episode]:
    """Every episode of the grid, in a stable order: LLM agents x modes x masks x seeds x
    windows; baselines x seeds x windows (modes and masks do not apply); one benchmark
    reference per window."""
    out: list[Episode] = []
    for w in spec.windows:
        span = f"{w.start:%Y%m%d}-{w.end:%Y%m%d}"
        out.append(
            Episode(
                id=f"benchmark_{span}",
                agent="benchmark",
                kind="benchmark",
                mode="n/a",
                mask="n/a",
                seed=0,
                window=w,
            )
        )
        for a in spec.agents:
            for seed in spec.seeds:
                if not a.is_llm:
                    out.append(
                        Episode(
                            id=_slug(f"{a.name}_s{seed}_{span}"),
                            agent=a.name,
                            kind="baseline",
                            mode="n/a",
                            mask="n/a",
                            seed=seed,
                            window=w,
                        )
                    )
                    continue
                for mode in spec.modes:
                    for mask in spec.masks:
                        out.append(
                            Episode(
                                id=_slug(f"{a.name}_{mode}_{mask}_s{seed}_{span}"),
                                agent=a.name,
                                kind="llm",
                                mode=mode,
                                mask=mask,
                                seed=seed,
                                window=w,
                            )
                        )
    return out
