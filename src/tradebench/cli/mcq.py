"""`tradebench mcq`: build, check, evaluate and mine backtest-comprehension questions."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, get_args

import typer

from tradebench.cli.kit import (
    REPLIES_KEPT,
    AllowUnknownPrice,
    AllowWeakSandbox,
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
    from rich.progress import Progress

    from tradebench.benchmarks.mcq.build.builder import BuildResult
    from tradebench.benchmarks.mcq.config import DataRef
    from tradebench.benchmarks.mcq.eval.run import EvalOutcome
    from tradebench.benchmarks.mcq.mine.run import MineOutcome
    from tradebench.llm.types import ModelConfig

app = typer.Typer(
    help="Backtest-comprehension MCQs: questions from real backtrader backtests, each answer "
    "proved by an independent re-run; model evaluation and LLM question mining.\n\n"
    "Example: tradebench mcq build --dataset data/us --symbol AAPL --all-templates",
    no_args_is_help=True,
)


def _progress() -> Progress:
    """The transient bar of a long build or check (rich.progress loads only here)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        transient=True,
    )


def _mode(all_templates: bool, num_questions: int | None, curated: bool) -> str:
    chosen = [all_templates, num_questions is not None, curated]
    if sum(chosen) != 1:
        raise ConfigError("choose exactly one of --all-templates, --num-questions N, --curated")
    return ("all_templates", "sample", "curated")[chosen.index(True)]


def _data_ref(
    dataset: Path | None, bars: Path | None, symbol: str, start: str, end: str
) -> DataRef:
    from tradebench.benchmarks.mcq.config import DataRef

    if (dataset is None) == (bars is None):
        raise ConfigError("give exactly one of --dataset DIR or --bars FILE")
    path, kind = (dataset, "dataset") if dataset is not None else (bars, "long_parquet")
    try:
        first, last = dt.date.fromisoformat(start), dt.date.fromisoformat(end)
    except ValueError as exc:
        raise ConfigError(f"dates must be YYYY-MM-DD: {exc}") from None
    return DataRef(kind=kind, path=str(Path(path).resolve()), symbol=symbol, start=first, end=last)


@app.command("build")
@exits_on_error
def build_cmd(
    out: Annotated[Path, typer.Option("--out", "-o", help="JSONL file to write.")],
    dataset: Annotated[Path | None, typer.Option(help="tradebench dataset folder.")] = None,
    bars: Annotated[
        Path | None, typer.Option(help="Or: long Parquet file (date, symbol, OHLCV).")
    ] = None,
    symbol: Annotated[str, typer.Option(help="Instrument to backtest.")] = "AAPL",
    start: Annotated[str, typer.Option(help="First day of the window (inclusive).")] = "2020-01-01",
    end: Annotated[str, typer.Option(help="Last day of the window (inclusive).")] = "2024-01-01",
    all_templates: Annotated[
        bool, typer.Option("--all-templates", help="One question per template per strategy.")
    ] = False,
    num_questions: Annotated[
        int | None, typer.Option(help="Sample N questions from --difficulty.")
    ] = None,
    difficulty: Annotated[str, typer.Option(help="easy, medium, hard or all.")] = "all",
    curated: Annotated[
        bool, typer.Option("--curated", help="Balanced set: 10 easy, 10 medium, 10 hard.")
    ] = False,
    strategy: Annotated[str | None, typer.Option(help="Only this strategy.")] = None,
    defaults: Annotated[
        str,
        typer.Option(help="Strategy parameters: 'grid' (drawn by the seed) or 'paper' (fixed)."),
    ] = "grid",
    param: Annotated[
        list[str] | None,
        typer.Option(
            "--param",
            help="Set a strategy parameter, NAME=VALUE or STRATEGY.NAME=VALUE; repeatable.",
        ),
    ] = None,
    initial_cash: Annotated[float, typer.Option(help="Starting cash.")] = 50_000.0,
    commission_rate: Annotated[float, typer.Option(help="Commission, fraction of value.")] = 0.001,
    stake: Annotated[
        int | None, typer.Option(help="Fixed shares per buy (default: percent sizing).")
    ] = None,
    percent: Annotated[float, typer.Option(help="Percent of cash per buy.")] = 95.0,
    seed: Annotated[int, typer.Option(min=0, help="Seed for everything random.")] = 0,
    workers: Annotated[
        int,
        typer.Option(
            min=0,
            help="Processes running the --all-templates backtests; 0: one per usable core. "
            "The file is the same for any number.",
        ),
    ] = 0,
) -> None:
    """Build questions from real backtests and write them as JSONL.

    Example: tradebench mcq build --dataset data/us --symbol AAPL --all-templates --seed 42
    -o mcq.jsonl
    """
    from tradebench.benchmarks.mcq.build.builder import BuildSpec, strategy_config, total_attempts
    from tradebench.benchmarks.mcq.build.files import build_file
    from tradebench.benchmarks.mcq.build.pool import BacktestPool, usable_cores
    from tradebench.benchmarks.mcq.config import ALL_STRATEGIES, STRATEGY_NAMES, Sizing
    from tradebench.benchmarks.mcq.params import parse_overrides

    if strategy is not None and strategy not in ALL_STRATEGIES:
        raise ConfigError(f"unknown strategy {strategy!r}; choose from {list(ALL_STRATEGIES)}")
    if difficulty not in get_args(BuildSpec.model_fields["difficulty"].annotation):
        raise ConfigError("--difficulty must be easy, medium, hard or all")
    if defaults not in ("grid", "paper"):
        raise ConfigError("--defaults must be grid or paper")
    strategies = (strategy,) if strategy else STRATEGY_NAMES
    overrides = parse_overrides(param or [], strategies)
    sizing = Sizing(kind="stake", stake=stake) if stake else Sizing(percent=percent)
    spec = BuildSpec(
        data=_data_ref(dataset, bars, symbol, start, end),
        initial_cash=initial_cash,
        commission_rate=commission_rate,
        sizing=sizing,
        mode=_mode(all_templates, num_questions, curated),  # type: ignore[arg-type]
        num_questions=num_questions or 0,
        difficulty=difficulty,  # type: ignore[arg-type]
        strategies=strategies,  # type: ignore[arg-type]
        defaults=defaults,  # type: ignore[arg-type]
        params=overrides,  # type: ignore[arg-type]
        seed=seed,
    )
    for name in spec.strategies:
        strategy_config(spec, name)  # a bad parameter set fails here, before any backtest
    size = (workers or usable_cores()) if spec.mode == "all_templates" else 1
    with BacktestPool(size) as pool, _progress() as progress:  # workers fork before the bar
        task = progress.add_task("building", total=total_attempts(spec))
        result = build_file(spec, out, lambda: progress.advance(task), pool)
    _render_build(result, out)


def _render_build(result: BuildResult, out: Path) -> None:
    from tradebench.benchmarks.mcq.build.stats import distractor_stats

    tiers = {t: sum(1 for r in result.records if r.tier == t) for t in ("easy", "medium", "hard")}
    console.print(
        f"wrote [bold]{len(result.records)}[/] questions ({tiers['easy']} easy, "
        f"{tiers['medium']} medium, {tiers['hard']} hard) from {result.backtests} backtests "
        f"to {out}"
    )
    st = distractor_stats(result.records)
    letters = ", ".join(f"{k} {n}" for k, n in st.letters.items())
    console.print(f"answer letters (balanced): {letters}")
    if st.numeric:
        ranks = ", ".join(f"{k} {n}" for k, n in st.value_ranks.items())
        console.print(
            f"nearest distractor (numeric, n={st.numeric}): p10 {st.nearest_p10:.1%}, median "
            f"{st.nearest_median:.1%}, p90 {st.nearest_p90:.1%}; the answer's rank among the "
            f"option values: {ranks}"
        )
    if st.jitter_n:
        console.print(
            f"distractor distance from the key (paper's rule 7-33%, n={st.jitter_n}): mean "
            f"{st.jitter_mean:.1%}, min {st.jitter_min:.1%}, max {st.jitter_max:.1%}"
        )
    if result.skipped:
        from rich.table import Table

        table = Table("template", "strategy", "not asked because", title="not applicable")
        for skip in result.skipped:
            table.add_row(skip.template, skip.strategy, skip.reason)
        console.print(table)


@app.command("check")
@exits_on_error
def check_cmd(
    path: Annotated[Path, typer.Argument(help="JSONL question file to check.")],
) -> None:
    """Re-run every backtest from its stored config and re-derive every answer independently.

    Exits non-zero when any question's key does not match the re-derived answer.

    Example: tradebench mcq check mcq.jsonl
    """
    from tradebench.benchmarks.mcq.check import check_records
    from tradebench.benchmarks.mcq.records import read_jsonl

    records = read_jsonl(path)  # read and validated once
    with _progress() as progress:
        task = progress.add_task("checking", total=len(records))
        report = check_records(records, tick=lambda: progress.advance(task))
    passed = len(report.verdicts) - len(report.failures)
    console.print(
        f"{passed}/{len(report.verdicts)} questions agree ({report.backtests} backtests re-run)"
    )
    if report.failures:
        from rich.table import Table

        table = Table(
            "id", "template", "strategy", "keyed", "re-derived", "problem", title="mismatches"
        )
        for v in report.failures:
            table.add_row(v.id[:12], v.template, v.strategy, v.keyed, v.derived, v.detail)
        console.print(table)
    if not report.ok:
        raise typer.Exit(code=1)


def _model_configs(
    models: list[str], where: dict[str, str], max_tokens: int, temperature: float
) -> tuple[ModelConfig, ...]:
    from tradebench.llm.types import ModelConfig

    if not models:
        raise ConfigError("give at least one --model provider:model, e.g. openai:gpt-4.1-mini")
    return tuple(
        ModelConfig.parse(m, max_tokens=max_tokens, temperature=temperature, **where)
        for m in models
    )


@app.command("eval")
@exits_on_error(interrupted=REPLIES_KEPT)
def eval_cmd(
    path: Annotated[Path, typer.Argument(help="JSONL question file (from `mcq build`).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Results folder.")],
    model: Annotated[
        list[str] | None,
        typer.Option("--model", help="provider:model; repeat for several models."),
    ] = None,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    endpoint: Endpoint = None,
    rpm: Rpm = None,
    tpm: Tpm = None,
    mode: Annotated[str, typer.Option(help="no_tools, with_tools or agent.")] = "no_tools",
    runs: Annotated[
        int, typer.Option(min=1, max=1000, help="Samples per question (sample_index).")
    ] = 1,
    concurrency: Annotated[
        int, typer.Option(min=1, max=1024, help="Questions solved at once.")
    ] = 4,
    reply_max_tokens: Annotated[
        int, typer.Option("--reply-max-tokens", min=1, help="Output cap per reply.")
    ] = 1024,
    temperature: Annotated[
        float | None,
        typer.Option(help="Sampling temperature (default: 0 with one run, 0.7 with --runs > 1)."),
    ] = None,
    no_tools_prompt: Annotated[
        str,
        typer.Option(help="no_tools: 'letter' (one letter only) or 'reasoning' (think first)."),
    ] = "letter",
    max_tool_calls: Annotated[
        int, typer.Option(min=0, max=1000, help="with_tools: tool calls per question.")
    ] = 40,
    sandbox_timeout: Annotated[
        float, typer.Option(min=0.1, max=3600.0, help="with_tools: seconds per tool call.")
    ] = 120.0,
    question_time: Annotated[
        float,
        typer.Option(
            min=1, help="with_tools: sandbox seconds per question; agent: its time limit."
        ),
    ] = 600.0,
    wheels: Annotated[
        Path | None,
        typer.Option(help="Local wheel directory: packages installable offline (pip_install)."),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(help="agent mode: a preset (claude-code, codex, cursor, copilot)."),
    ] = None,
    agent_command: Annotated[
        str | None,
        typer.Option(help="agent mode: a command line with {prompt}, {prompt_file} or {workdir}."),
    ] = None,
    agent_unconfined: Annotated[
        bool, typer.Option(help="agent mode: run outside the sandbox (with the network).")
    ] = False,
    allow_weak_sandbox: AllowWeakSandbox = False,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N questions.")] = None,
    cache_mode: Annotated[str, typer.Option(help="readwrite, replay or off.")] = "readwrite",
    report: Annotated[bool, typer.Option(help="Also write report.html.")] = True,
    timeout_s: Annotated[
        float,
        typer.Option("--timeout-s", min=0.1, help="Seconds one HTTP attempt to a model may take."),
    ] = 120.0,
    max_attempts: Annotated[
        int,
        typer.Option(
            "--max-attempts", min=1, max=100, help="HTTP attempts per request (first included)."
        ),
    ] = 6,
    max_tokens: MaxTokens = None,
    max_cost_usd: MaxCostUsd = None,
    price: Prices = None,
    allow_unknown_price: AllowUnknownPrice = False,
) -> None:
    """Evaluate models on a question file: accuracy per tier over K runs, tokens, time.

    Writes OUT/results.parquet (one row per question x run), OUT/summary.json and
    OUT/report.html; replies are cached in OUT/cache.sqlite, so reruns are free. With
    --max-tokens or --max-cost-usd the evaluation stops cleanly at the cap (spend saved in
    OUT/budget.json); rerun the same command with a higher cap to continue.

    Example: tradebench mcq eval mcq.jsonl --model openai:gpt-4.1-mini --mode with_tools
    --runs 3 -o runs/mcq-eval; an external agent: tradebench mcq eval mcq.jsonl --mode agent
    --agent claude-code --agent-unconfined -o runs/mcq-claude
    """
    import shlex

    from tradebench.benchmarks.mcq.eval.run import EvalSpec, default_temperature, run_eval
    from tradebench.llm.retry import RetryPolicy

    if mode not in ("no_tools", "with_tools", "agent"):
        raise ConfigError("--mode must be no_tools, with_tools or agent")
    if no_tools_prompt not in ("letter", "reasoning"):
        raise ConfigError("--no-tools-prompt must be letter or reasoning")
    if cache_mode not in ("readwrite", "replay", "off"):
        raise ConfigError("--cache-mode must be readwrite, replay or off")
    if mode == "agent" and model:
        raise ConfigError("--mode agent evaluates the agent command; give no --model")
    if wheels is not None and not wheels.is_dir():
        raise ConfigError(f"--wheels {wheels}: no such directory")
    spec = EvalSpec(
        models=()
        if mode == "agent"
        else _model_configs(
            model or [],
            endpoint_fields(endpoint, base_url, api_key_env),
            reply_max_tokens,
            default_temperature(runs, temperature),
        ),
        limits=minute_limits(rpm, tpm),
        mode=mode,  # type: ignore[arg-type]
        question_seconds=question_time,
        wheels=None if wheels is None else str(wheels.resolve()),
        agent=agent,
        agent_command=tuple(shlex.split(agent_command)) if agent_command else (),
        agent_unconfined=agent_unconfined,
        no_tools_prompt=no_tools_prompt,  # type: ignore[arg-type]
        runs=runs,
        concurrency=concurrency,
        max_tool_calls=max_tool_calls,
        sandbox_timeout_s=sandbox_timeout,
        allow_weak_sandbox=allow_weak_sandbox,
        cache_mode=cache_mode,  # type: ignore[arg-type]
        budget=budget_config(max_tokens, max_cost_usd, price, allow_unknown_price),
    )
    from tradebench.cli.counting import counting_bar
    from tradebench.cli.endpoint import check_listening

    fresh = not (out / "cache.sqlite").exists()  # a rerun may be answered from its cache
    if mode != "agent" and base_url and cache_mode != "replay" and fresh:
        check_listening(base_url)
    retry = RetryPolicy(timeout_s=timeout_s, max_attempts=max_attempts)
    with counting_bar("answering questions") as progress:
        outcome = run_eval(
            path, spec, out, limit=limit, report=report, retry=retry, progress=progress
        )
    _render_eval(outcome)


def _render_eval(outcome: EvalOutcome) -> None:
    from rich.table import Table

    table = Table("model", "slice", "accuracy", "std", "Wilson 95%", "constant", "random")
    for column in table.columns[1:]:  # figures whole; a long model name folds instead
        column.no_wrap = True
    table.columns[0].overflow = "fold"
    for s in outcome.summary.models:
        for name, acc in {"all": s.overall, **s.tiers}.items():
            std = "" if acc.std is None else f"{acc.std:.3f}"
            wilson = f"[{acc.wilson_low:.3f}, {acc.wilson_high:.3f}]"
            const = f"{acc.constant_letter_accuracy:.3f} {acc.constant_letter}"
            random = f"{s.random_baseline:.2f}"
            table.add_row(s.model, name, f"{acc.mean:.3f}", std, wilson, const, random)
    console.print(table)
    for s in outcome.summary.models:
        kept = s.overall_without_excluded.mean
        console.print(
            f"{s.model}: unparseable {s.unparseable}, excluded {s.excluded_attempts} (no-tools "
            "tool calls, scored wrong above), accuracy without them "
            + ("–" if kept is None else f"{kept:.3f}")
        )
        if s.text_fallbacks:
            reasons = ", ".join(f"{why} {n}" for why, n in s.text_fallbacks.items())
            console.print(
                f"{s.model}: {sum(s.text_fallbacks.values())} attempts answered over plain "
                f"text, the server would not take tools ({reasons})",
                highlight=False,
            )
    console.print(outcome.summary.sampling)
    console.print(f"wrote {outcome.results}, {outcome.summary_path}")
    if outcome.report is not None:
        console.print(f"wrote {outcome.report}")


@app.command("report")
@exits_on_error
def report_cmd(
    results: Annotated[Path, typer.Argument(help="results.parquet of `mcq eval`.")],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="HTML file (default: beside results).")
    ] = None,
) -> None:
    """Write the standalone MCQ evaluation page of a results file.

    Example: tradebench mcq report mcq-eval/results.parquet
    """
    from tradebench.benchmarks.mcq.eval.report import mcq_report

    path = mcq_report(results, out or results.with_name("report.html"))
    console.print(f"wrote [bold]{path}[/]")


@app.command("mine")
@exits_on_error(interrupted=REPLIES_KEPT)
def mine_cmd(
    out: Annotated[Path, typer.Option("--out", "-o", help="Database folder (DB_DIR).")],
    generator: Annotated[str, typer.Option(help="provider:model that writes questions.")],
    solver: Annotated[
        str, typer.Option(help="provider:model that solves them (stage 1, and stage 2 too).")
    ],
    solver_with_tools: Annotated[
        str | None,
        typer.Option(help="provider:model of stage 2 (with tools), if not the --solver."),
    ] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="Endpoint root of both models.")
    ] = None,
    solver_base_url: Annotated[
        str | None, typer.Option(help="Endpoint root of the solver, if it differs.")
    ] = None,
    api_key_env: ApiKeyEnv = None,
    endpoint: Endpoint = None,
    rpm: Rpm = None,
    tpm: Tpm = None,
    rounds: Annotated[int, typer.Option(min=1, max=10_000, help="Generation rounds.")] = 1,
    per_round: Annotated[
        int, typer.Option(min=1, max=1000, help="Questions generated per round.")
    ] = 1,
    seed: Annotated[int, typer.Option(min=0, help="Base MCQ_SEED of the verification code.")] = 0,
    code_timeout: Annotated[
        float, typer.Option(min=0.1, max=3600.0, help="Seconds per run of the verification code.")
    ] = 120.0,
    solver_timeout: Annotated[
        float, typer.Option(min=0.1, max=3600.0, help="Seconds per solver run_python.")
    ] = 30.0,
    max_tool_calls: Annotated[
        int, typer.Option(min=0, max=1000, help="Solver run_python calls.")
    ] = 8,
    allow_weak_sandbox: AllowWeakSandbox = False,
    concurrency: Annotated[
        int, typer.Option(min=1, max=1024, help="Attempts processed at once.")
    ] = 4,
    history: Annotated[int, typer.Option(min=0, max=1000, help="Earlier attempts shown.")] = 12,
    reply_max_tokens: Annotated[
        int, typer.Option("--reply-max-tokens", min=1, help="Output cap per reply.")
    ] = 2048,
    generator_temperature: Annotated[float, typer.Option(help="Generator temperature.")] = 0.7,
    solver_temperature: Annotated[float, typer.Option(help="Solver temperature.")] = 0.0,
    dataset: Annotated[Path | None, typer.Option(help="Data: tradebench dataset.")] = None,
    bars: Annotated[Path | None, typer.Option(help="Data: long Parquet file.")] = None,
    symbol: Annotated[str, typer.Option(help="Data: instrument.")] = "AAPL",
    start: Annotated[str, typer.Option(help="Data: first day.")] = "2020-01-01",
    end: Annotated[str, typer.Option(help="Data: last day.")] = "2024-01-01",
    cache_mode: Annotated[str, typer.Option(help="readwrite, replay or off.")] = "readwrite",
    max_tokens: MaxTokens = None,
    max_cost_usd: MaxCostUsd = None,
    price: Prices = None,
    allow_unknown_price: AllowUnknownPrice = False,
) -> None:
    """Mine questions: an LLM writes each with the code that keys it; solvers filter them.

    The code's last output line is the answer; a solver without tools must fail it and one
    with run_python must solve it (otherwise it goes to the review queue).

    Without --dataset/--bars the questions must be self-contained (data made from MCQ_SEED).
    With --max-tokens or --max-cost-usd mining stops cleanly at the cap; rerunning the same
    command finishes the interrupted run (its finished rounds are kept, replies cached).

    Example: tradebench mcq mine --generator openai:gpt-4.1 --solver openai:gpt-4.1-mini
    --bars sp500.parquet --symbol AAPL --rounds 20 -o mcq-db
    """
    from tradebench.benchmarks.mcq.mine.run import run_mine
    from tradebench.benchmarks.mcq.mine.types import MineSpec
    from tradebench.llm.types import ModelConfig

    if cache_mode not in ("readwrite", "replay", "off"):
        raise ConfigError("--cache-mode must be readwrite, replay or off")
    data = None
    if dataset is not None or bars is not None:
        data = _data_ref(dataset, bars, symbol, start, end)
    where = endpoint_fields(endpoint, base_url, api_key_env)
    solver_where = endpoint_fields(endpoint, solver_base_url or base_url, api_key_env)
    spec = MineSpec(
        generator=ModelConfig.parse(
            generator, max_tokens=reply_max_tokens, temperature=generator_temperature, **where
        ),
        solver=ModelConfig.parse(
            solver, max_tokens=reply_max_tokens, temperature=solver_temperature, **solver_where
        ),
        solver_with_tools=None
        if solver_with_tools is None
        else ModelConfig.parse(
            solver_with_tools,
            max_tokens=reply_max_tokens,
            temperature=solver_temperature,
            **solver_where,
        ),
        limits=minute_limits(rpm, tpm),
        rounds=rounds,
        per_round=per_round,
        seed=seed,
        code_timeout_s=code_timeout,
        solver_timeout_s=solver_timeout,
        max_tool_calls=max_tool_calls,
        allow_weak_sandbox=allow_weak_sandbox,
        concurrency=concurrency,
        history=history,
        data=data,
        cache_mode=cache_mode,  # type: ignore[arg-type]
        budget=budget_config(max_tokens, max_cost_usd, price, allow_unknown_price),
    )
    outcome = run_mine(spec, out)
    _render_mine(outcome)


def _render_mine(outcome: MineOutcome) -> None:
    from rich.table import Table

    s = outcome.summary
    table = Table("outcome", "attempts", title=f"mining run {outcome.run_id}")
    for name, count in s.outcomes.items():
        table.add_row(name, str(count))
    console.print(table)
    tokens = ", ".join(
        f"{role} {t.input_tokens:,} in / {t.output_tokens:,} out" for role, t in s.tokens.items()
    )
    console.print(f"accepted {s.outcomes['accepted']}/{s.attempts}; tokens: {tokens}")
    console.print(f"database: {outcome.db} (logs in runs/{outcome.run_id})")
