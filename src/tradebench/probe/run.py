"""Run one attacker over a probe set, score it and write its results.

`--attacker data` (or `data:returns`, ...) is the data attacker, which needs the dataset
(by default the one the probe set was built from); anything else is `provider:model` for
the LLM attacker, whose model comes from a `ModelPool`: the reply cache and the budget
(`RESULTS_DIR/budget.json`) in front of it, so a budget stop is clean and rerunning the
same command continues it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from tradebench.data.dataset import load_dataset
from tradebench.errors import ConfigError
from tradebench.llm.budget import BudgetConfig
from tradebench.llm.cache import CacheMode
from tradebench.llm.limits import MinuteLimits
from tradebench.llm.retry import RetryPolicy
from tradebench.llm.types import ModelConfig
from tradebench.probe.attempt import Attempt
from tradebench.probe.data_attacker import SIGNALS, PriceDatabase, attack_variant
from tradebench.probe.llm_attacker import attack_all, attacker_label
from tradebench.probe.results import score_attempts, write_results
from tradebench.probe.store import ProbeSet, read_probe_set
from tradebench.probe.types import Probe, Variant
from tradebench.runs.models import ModelPool
from tradebench.runs.records import BUDGET_FILE, CACHE_FILE


class AttackConfig(BaseModel):
    """Knobs of `tradebench probe run`."""

    model_config = ConfigDict(frozen=True)

    attacker: str
    """`data`, `data:<signal>[,<signal>]`, or `provider:model` for an LLM."""
    base_url: str | None = None
    """Endpoint root of the LLM (vLLM, Ollama, llama.cpp, ...)."""
    api_key_env: str | None = None
    """Variable holding the LLM's key."""
    max_tokens: int = Field(default=256, ge=8)
    """Output cap per reply."""
    temperature: float = 0.0
    """Sampling temperature."""
    seed: int = 0
    """Sample of the LLM attacker (its calls' sample index and provider seed): attacks
    with different seeds are independent samples."""
    retries: int = Field(default=2, ge=0)
    """Extra submission attempts after an invalid one."""
    concurrency: int = Field(default=4, ge=1)
    """LLM loops in flight."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Seconds one HTTP attempt may take."""
    max_attempts: int = Field(default=6, ge=1)
    """HTTP attempts per request (the first included) against transient faults."""
    cache: Path | None = None
    """Response cache file (default: RESULTS_DIR/cache.sqlite)."""
    cache_mode: CacheMode = "readwrite"
    """`readwrite`, `replay` or `off`."""
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    """Token and cost caps of the LLM attacker over the run."""
    endpoint: str | None = None
    """Endpoint preset of the LLM attacker (`llm.presets`)."""
    limits: MinuteLimits | None = None
    """Rate limits of each endpoint (`--rpm`, `--tpm`); None = none but the 429s'."""
    levels: tuple[str, ...] = ()
    """Mask levels to attack (empty: all in the file)."""
    price_modes: tuple[str, ...] = ()
    """Price modes to attack (empty: all in the file)."""
    limit: int | None = Field(default=None, ge=1)
    """Attack only the first `limit` probes."""
    dataset: Path | None = None
    """Dataset of the data attacker (default: the one in the probe file)."""
    bars: int | None = Field(default=None, ge=2)
    """The data attacker matches only the snapshot's last `bars` bars (None: all)."""


class RunOutcome(BaseModel):
    """What a run wrote and how it went."""

    model_config = ConfigDict(frozen=True)

    results: Path
    """The results file."""
    attempts: int
    """Payloads attacked (x signals for the data attacker)."""
    valid: int
    """Attempts with a valid guess."""
    failed: int
    """Attempts without one."""


def select(probe_set: ProbeSet, config: AttackConfig) -> list[tuple[Probe, Variant]]:
    """The (probe, variant) pairs the config asks for, in file order."""
    probes = probe_set.probes[: config.limit] if config.limit else probe_set.probes
    items = [
        (p, v)
        for p in probes
        for v in p.variants
        if (not config.levels or v.level in config.levels)
        and (not config.price_modes or v.price_mode in config.price_modes)
    ]
    if not items:
        raise ConfigError(
            f"no payload matches levels {list(config.levels)} and price modes "
            f"{list(config.price_modes)}; the file has {probe_set.header.levels} x "
            f"{probe_set.header.price_modes}"
        )
    return items


def _data_attempts(
    probe_set: ProbeSet, items: list, config: AttackConfig, on_attempt: Callable[[], None]
) -> list[Attempt]:
    _, _, spec = config.attacker.partition(":")
    signals = tuple(s.strip() for s in spec.split(",") if s.strip())
    if not signals:  # `context` ignores the snapshot, so a bar cap leaves it out
        signals = tuple(s for s in SIGNALS if not (config.bars and s == "context"))
    unknown = [s for s in signals if s not in SIGNALS]
    if unknown:
        raise ConfigError(f"unknown data-attacker signals {unknown}; choose from {list(SIGNALS)}")
    dataset = config.dataset or Path(probe_set.header.dataset)
    db = PriceDatabase.from_dataset(load_dataset(dataset))
    attempts = []
    for probe, variant in items:
        attempts += attack_variant(db, probe, variant, signals, config.bars)
        on_attempt()
    return attempts


def _llm_attempts(
    probe_set: ProbeSet,
    items: list,
    config: AttackConfig,
    out_dir: Path,
    on_attempt: Callable[[], None],
) -> tuple[list[Attempt], str]:
    model_config = ModelConfig.parse(
        config.attacker,
        base_url=config.base_url,
        api_key_env=config.api_key_env,
        endpoint=config.endpoint,
        max_tokens=config.max_tokens,
        temperature=config.temperature,
    )
    pool = ModelPool(
        budget=config.budget,
        budget_file=out_dir / BUDGET_FILE,
        cache_path=config.cache or out_dir / CACHE_FILE,
        cache_mode=config.cache_mode,
        concurrency=config.concurrency,
        retry=RetryPolicy(timeout_s=config.timeout_s, max_attempts=config.max_attempts),
        limits=None if config.limits is None else config.limits.limits(),
        resume_hint=(
            "raise --max-tokens/--max-cost-usd and rerun the same command to continue "
            "(answered payloads come from the cache for free)"
        ),
    )
    with pool:
        coro = attack_all(
            pool,
            model_config,
            probe_set.header,
            items,
            config.retries,
            config.seed,
            on_attempt,
        )
        return asyncio.run(coro), attacker_label(model_config, config.seed)


def is_data_attacker(attacker: str) -> bool:
    """Whether `attacker` names the data attacker (`data` or `data:<signals>`)."""
    return attacker == "data" or attacker.startswith("data:")


def run_attack(
    probes_path: Path,
    out_dir: Path,
    config: AttackConfig,
    progress: Callable[[int, int], None] | None = None,
) -> RunOutcome:
    """Attack the probe set, score every attempt and write the results folder.

    `progress(done, total)` is called with 0 before the first payload and after each
    payload attacked (a progress bar); `total` counts the payloads selected.

    Raises:
        ConfigError: Bad attacker spec, no matching payloads, or a missing dataset.
        ProviderError: The LLM endpoint failed after every retry.
    """
    probe_set = read_probe_set(probes_path)
    items = select(probe_set, config)
    done = 0

    def on_attempt() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, len(items))

    if progress is not None:
        progress(0, len(items))
    if is_data_attacker(config.attacker):
        label = config.attacker + (f"@{config.bars}" if config.bars else "")
        attempts = _data_attempts(probe_set, items, config, on_attempt)
    else:
        attempts, label = _llm_attempts(probe_set, items, config, Path(out_dir), on_attempt)
    rows = score_attempts(probe_set, attempts)
    meta = _meta(probes_path, probe_set, config, label, rows)
    path = write_results(Path(out_dir), label, rows, meta)
    valid = int(rows["valid"].sum())
    return RunOutcome(results=path, attempts=len(rows), valid=valid, failed=len(rows) - valid)


def _meta(
    probes_path: Path, probe_set: ProbeSet, config: AttackConfig, label: str, rows: pd.DataFrame
) -> dict[str, Any]:
    header = probe_set.header
    return {
        "schema_version": 1,
        "attacker": label,
        "config": config.model_dump(mode="json"),
        "probes": str(probes_path),
        "dataset": header.dataset,
        "dataset_name": header.dataset_name,
        "n_probes": len({*rows["probe_id"]}),
        "attempts": len(rows),
        "valid": int(rows["valid"].sum()),
        "failed": int((~rows["valid"].astype(bool)).sum()),
        "unreadable_replies": int(rows["unreadable"].sum()),
        "rejected_submissions": int(rows["rejected"].sum()),
        "tokens_in": int(rows["tokens_in"].sum()),
        "tokens_out": int(rows["tokens_out"].sum()),
        "short_strata": [s.model_dump() for s in header.strata if s.drawn < s.quota],
    }
