"""`tradebench probe ...`: build a probe set, attack it, report the recovery rates."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from tradebench.cli.counting import counting_bar
from tradebench.cli.endpoint import check_listening
from tradebench.cli.kit import (
    REPLIES_KEPT,
    AllowUnknownPrice,
    ApiKeyEnv,
    BaseUrl,
    Endpoint,
    MaxCostUsd,
    MaxTokens,
    Prices,
    Rpm,
    Tpm,
    budget_config,
    console,
    endpoint_fields,
    exits_on_error,
    minute_limits,
)
from tradebench.errors import ConfigError

if TYPE_CHECKING:
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")

app = typer.Typer(
    help="De-anonymisation probe: can attackers recover tickers and dates from masked payloads?"
    "\n\nExample: tradebench probe build --dataset data/csi300 --out probes.jsonl --n 200",
    no_args_is_help=True,
)


def _split(text: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in text.split(",") if s.strip())


def _config(cls: type[M], **fields: Any) -> M:
    """Build a pydantic config; invalid options become a `ConfigError` (no traceback)."""
    from pydantic import ValidationError

    try:
        return cls(**fields)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:4]
        )
        raise ConfigError(f"invalid option ({problems})") from None


@app.command()
@exits_on_error
def build(
    dataset: Annotated[Path, typer.Option("--dataset", help="Dataset folder.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Probe file to write (.jsonl).")],
    n: Annotated[int, typer.Option("--n", min=1, max=1_000_000, help="Probes to draw.")] = 200,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the draw and the alias maps.")] = 0,
    levels: Annotated[str, typer.Option(help="Mask levels, comma-separated.")] = "blinded",
    price_modes: Annotated[
        str, typer.Option("--price-modes", help="Price modes, comma-separated.")
    ] = "raw,rebased",
    boards: Annotated[
        str, typer.Option(help="Strata boards, comma-separated (`us` for US data).")
    ] = "main_sh,main_sz,chinext,star",
) -> None:
    """Draw N (stock, date) pairs over 5 windows x 4 boards and export their masked payloads.

    Example: tradebench probe build --dataset data/csi300 --out probes.jsonl --n 200
    """
    from tradebench.probe.build import BuildConfig, build_probe_set, short_strata
    from tradebench.probe.store import write_probe_set

    config = _config(
        BuildConfig,
        n=n,
        seed=seed,
        levels=_split(levels),
        price_modes=_split(price_modes),
        boards=_split(boards),
    )
    probe_set = build_probe_set(dataset, config)
    path = write_probe_set(probe_set, out)
    console.print(f"wrote [bold]{path}[/]: {len(probe_set.probes)} probes")
    for s in short_strata(probe_set.header):
        console.print(
            f"short stratum: window {s.window} {s.board} has {s.available} pairs, "
            f"drew {s.drawn} of {s.quota} (filled from other strata)",
            highlight=False,
        )


@app.command()
@exits_on_error(interrupted=REPLIES_KEPT)
def run(
    probes: Annotated[Path, typer.Argument(help="Probe file from `probe build`.")],
    attacker: Annotated[
        str, typer.Option(help="`data`, `data:returns,volume`, or provider:model of an LLM.")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Results folder.")],
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    endpoint: Endpoint = None,
    rpm: Rpm = None,
    tpm: Tpm = None,
    reply_max_tokens: Annotated[
        int, typer.Option("--reply-max-tokens", min=8, help="Output cap per reply.")
    ] = 256,
    concurrency: Annotated[int, typer.Option(min=1, max=1024, help="LLM loops in flight.")] = 4,
    retries: Annotated[int, typer.Option(min=0, max=100, help="Retries of an invalid reply.")] = 2,
    temperature: Annotated[float, typer.Option(help="LLM sampling temperature.")] = 0.0,
    sample_seed: Annotated[
        int, typer.Option("--seed", min=0, help="LLM sample: provider seed and cache key.")
    ] = 0,
    cache: Annotated[Path | None, typer.Option(help="Response cache file.")] = None,
    cache_mode: Annotated[str, typer.Option(help="readwrite, replay or off.")] = "readwrite",
    levels: Annotated[str, typer.Option(help="Only these mask levels.")] = "",
    price_modes: Annotated[str, typer.Option("--price-modes", help="Only these.")] = "",
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N probes.")] = None,
    dataset: Annotated[
        Path | None, typer.Option(help="Dataset of the data attacker (default: the build's).")
    ] = None,
    bars: Annotated[
        int | None, typer.Option(min=2, help="Data attacker: match only the last N bars.")
    ] = None,
    timeout_s: Annotated[
        float, typer.Option("--timeout-s", min=0.1, help="LLM: seconds one HTTP attempt may take.")
    ] = 120.0,
    max_attempts: Annotated[
        int,
        typer.Option(
            "--max-attempts",
            min=1,
            max=100,
            help="LLM: HTTP attempts per request (first included).",
        ),
    ] = 6,
    max_tokens: MaxTokens = None,
    max_cost_usd: MaxCostUsd = None,
    price: Prices = None,
    allow_unknown_price: AllowUnknownPrice = False,
) -> None:
    """Attack the probe set with one attacker; write scored Parquet results to OUT and
    print the recovery rates with their 95% Wilson intervals.

    An LLM attacker's replies are cached in OUT/cache.sqlite; with --max-tokens or
    --max-cost-usd it stops cleanly at the cap and rerunning the same command continues.

    Example: tradebench probe run probes.jsonl --attacker openai:local
    --base-url http://127.0.0.1:8080/v1 -o probe-results
    """
    from tradebench.probe.run import AttackConfig, is_data_attacker, run_attack

    config = _config(
        AttackConfig,
        attacker=attacker,
        **endpoint_fields(endpoint, base_url, api_key_env),
        limits=minute_limits(rpm, tpm),
        max_tokens=reply_max_tokens,
        concurrency=concurrency,
        retries=retries,
        temperature=temperature,
        seed=sample_seed,
        timeout_s=timeout_s,
        max_attempts=max_attempts,
        cache=cache,
        cache_mode=cache_mode,
        levels=_split(levels),
        price_modes=_split(price_modes),
        limit=limit,
        dataset=dataset,
        bars=bars,
        budget=budget_config(max_tokens, max_cost_usd, price, allow_unknown_price),
    )
    if not is_data_attacker(attacker) and base_url and cache_mode != "replay":
        cached = (cache or out / "cache.sqlite").exists()
        if not cached:  # a rerun may be answered from its cache without the server
            check_listening(base_url)
    with counting_bar("attacking payloads") as progress:
        outcome = run_attack(probes, out, config, progress)
    console.print(
        f"wrote [bold]{outcome.results}[/]: {outcome.attempts} attempts, "
        f"{outcome.valid} valid, {outcome.failed} failed (excluded from rates)"
    )
    _render_rates(outcome.results)


def _render_rates(results: Path) -> None:
    """The recovery rates of one results file with their intervals and random baselines."""
    import pandas as pd
    from rich.table import Table

    from tradebench.probe.results import summarise

    table = Table("level", "prices", "metric", "hits / n", "rate", "95% Wilson", "random")
    for column in table.columns:
        column.no_wrap = True
    for r in summarise(pd.read_parquet(results)).itertuples():
        if r.n == 0:
            table.add_row(r.level, r.price_mode, r.metric, "0 / 0", "–", "–", "–")
            continue
        table.add_row(
            r.level,
            r.price_mode,
            r.metric,
            f"{r.successes} / {r.n}",
            f"{r.rate:.1%}",
            f"[{r.low:.1%}, {r.high:.1%}]",
            f"{r.random:.1%}",
        )
    console.print(table)


@app.command()
@exits_on_error
def report(
    results: Annotated[Path, typer.Argument(help="Results folder of `probe run`.")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="HTML file.")] = None,
) -> None:
    """Write the recovery table with 95% intervals and random baselines as an HTML page.

    Example: tradebench probe report probe-results
    """
    from tradebench.probe.report import build_probe_report

    path = build_probe_report(results, out)
    console.print(f"wrote [bold]{path}[/]")


@app.command()
@exits_on_error
def levels(
    probes: Annotated[Path, typer.Argument(help="Probe file of `probe build`.")],
    dataset: Annotated[
        Path | None, typer.Option(help="Dataset of the attack (default: the build's).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Parquet file of every attempt.")
    ] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N probes.")] = None,
    initial_cash: Annotated[
        float | None,
        typer.Option(
            min=1,
            help="The account's capital (its grid hides lots of stocks under 1/200,000 of "
            "it); default: the capital a blinded model run starting on the probes' days gets.",
        ),
    ] = None,
) -> None:
    """Price-level attack: buy each probe's stock, then read its raw price back from the
    blinded account (state, account text, fill, the smallest order that fills) under raw
    and rebased prices.

    Example: tradebench probe levels probes.jsonl -o levels.parquet --initial-cash 1e6
    """
    from rich.table import Table

    from tradebench.benchmarks.portfolio.shown import ACCOUNT_GRID
    from tradebench.data import load_dataset
    from tradebench.probe.level_attack import attack_levels, level_rates, probe_pairs
    from tradebench.probe.store import read_probe_set

    probe_set = read_probe_set(probes)
    ds = load_dataset(dataset or Path(probe_set.header.dataset))
    chosen = probe_set.probes[:limit] if limit else probe_set.probes
    results = attack_levels(ds, probe_pairs(chosen, ds.panel.dates), initial_cash=initial_cash)
    if out is not None:
        results.to_parquet(out, index=False)
    table = Table(
        "price mode",
        "channel",
        "n",
        "within 5%",
        "95% CI",
        "constant 100",
        "beyond constant",
        "median error",
    )
    for r in level_rates(results).itertuples():
        table.add_row(
            r.price_mode,
            r.channel,
            str(r.n),
            f"{r.rate:.1%}",
            f"[{r.low:.1%}, {r.high:.1%}]",
            f"{r.constant_rate:.1%}",
            str(r.beyond_constant),
            f"{r.median_error:.1%}",
        )
    capital = results["initial_cash"].iloc[0] if len(results) else initial_cash
    if capital is not None:
        table.caption = f"capital {capital:,.0f} (grid step {capital * ACCOUNT_GRID:,.0f})"
    console.print(table)
