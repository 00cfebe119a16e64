"""`tradebench mcq eval`: run models over a question file, K runs each, and store the results.

Runs are sequential (run r uses `sample_index = r`, so each run has its own cache keys);
with several runs the CLI samples at `SAMPLING_TEMPERATURE` unless told otherwise
(`default_temperature`), and the summary states the temperature. The questions of one run
are solved concurrently, at most `concurrency` at a time. Rows
are stored in (model, run, question order), whatever order replies arrive in. The models
come from one `ModelPool`: replies are cached in `RESULTS_DIR/cache.sqlite` and spend is
charged to the budget saved in `RESULTS_DIR/budget.json`, so a budget stop is clean and
rerunning the same command continues it (answered questions come back from the cache for
free) and gives the same files. Outputs: `results.parquet` (one row per question x run),
`summary.json` (`EvalSummary`) and `report.html`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, model_validator

from tradebench.benchmarks.mcq.bars import bars_csv, load_bars
from tradebench.benchmarks.mcq.eval.agent_command import AgentCommand, agent_command
from tradebench.benchmarks.mcq.eval.report import mcq_report
from tradebench.benchmarks.mcq.eval.sandbox_tool import limits_for
from tradebench.benchmarks.mcq.eval.solve import (
    QUESTION_CALLS,
    QUESTION_SECONDS,
    SOLVERS,
    NoToolsPrompt,
    Posed,
    Solver,
    SolveResult,
)
from tradebench.benchmarks.mcq.eval.summary import ModelSummary, summarise
from tradebench.benchmarks.mcq.prompt_files import prompts_sha256
from tradebench.benchmarks.mcq.records import MCQRecord, read_jsonl
from tradebench.errors import ConfigError
from tradebench.files import write_parquet_atomic, write_text_atomic
from tradebench.llm.base import ChatModel
from tradebench.llm.budget import BudgetConfig
from tradebench.llm.cache import CacheMode
from tradebench.llm.limits import MinuteLimits
from tradebench.llm.retry import RetryPolicy
from tradebench.llm.types import ModelConfig
from tradebench.registry import Spec
from tradebench.runs.models import ModelPool
from tradebench.runs.records import BUDGET_FILE, CACHE_FILE
from tradebench.sandbox import sandbox_preflight

log = logging.getLogger("tradebench.mcq")
RESULTS_FILE = "results.parquet"
SUMMARY_FILE = "summary.json"
REPORT_FILE = "report.html"
SAMPLING_TEMPERATURE = 0.7
"""Temperature of `--runs K > 1` when none is given: K runs are then K real samples."""


def default_temperature(runs: int, given: float | None) -> float:
    """The temperature to use: the given one, else 0.7 with several runs and 0 with one.

    Why: at temperature 0 the runs of a deterministic endpoint repeat one reply, so their
    spread would not measure anything.
    """
    if given is not None:
        return given
    return SAMPLING_TEMPERATURE if runs > 1 else 0.0


def sampling_note(runs: int, temperatures: Sequence[float]) -> str:
    """One sentence for the summary: runs, temperature(s) and what the runs' spread means."""
    shown = ", ".join(f"{t:g}" for t in dict.fromkeys(temperatures))
    if runs == 1:
        return f"1 run per question at temperature {shown}."
    spread = (
        "runs are independent samples"
        if all(t > 0 for t in temperatures)
        else "at temperature 0 runs differ only by sample_index (cache key); a deterministic "
        "endpoint repeats its reply, so the spread across runs is not a sampling spread"
    )
    return (
        f"{runs} runs per question (run r sends sample_index r) at temperature {shown}: {spread}."
    )


class EvalSpec(BaseModel):
    """What to evaluate: models, mode, runs and the limits of one attempt."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    models: tuple[ModelConfig, ...] = ()
    """Models to evaluate, each over every question and run (none in `agent` mode)."""
    mode: Literal["no_tools", "with_tools", "agent"] = "no_tools"
    """`no_tools` (one call, letter parsed), `with_tools` (run_python in a workspace, forced
    answer) or `agent` (an external coding-agent command per question)."""
    runs: int = Field(default=1, ge=1)
    """Samples per question; run r uses sample_index r."""
    concurrency: int = Field(default=4, ge=1)
    """Questions solved at once."""
    no_tools_prompt: NoToolsPrompt = "letter"
    """`no_tools`: ask for a single letter (the paper's protocol) or allow reasoning first."""
    max_tool_calls: int = Field(default=QUESTION_CALLS, ge=0)
    """`with_tools`: tool calls (run_python, pip_install) allowed per question."""
    sandbox_timeout_s: float = Field(default=120.0, gt=0)
    """`with_tools`: wall-clock limit of one call."""
    question_seconds: float = Field(default=QUESTION_SECONDS, gt=0)
    """`with_tools`: sandbox seconds per question over all its calls; `agent`: the
    command's time limit per question."""
    wheels: str | None = None
    """`with_tools` and `agent`: local wheel directory for offline package installs."""
    agent: str | None = None
    """`agent`: a preset name (`eval.agent_command.PRESETS`)."""
    agent_command: tuple[str, ...] = ()
    """`agent`: an explicit command line with {prompt}, {prompt_file} or {workdir}."""
    agent_unconfined: bool = False
    """`agent`: run the command outside the sandbox (it then has the network)."""
    allow_weak_sandbox: bool = False
    """`with_tools`: run model code even where the kernel lacks a sandbox layer."""
    cache_mode: CacheMode = "readwrite"
    """Response cache mode (`replay` reruns without any endpoint)."""
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    """Token and cost caps over the whole evaluation (every model and run)."""
    limits: MinuteLimits | None = None
    """Rate limits of each endpoint (`--rpm`, `--tpm`); None = none but the 429s'."""

    @model_validator(mode="after")
    def _who(self) -> EvalSpec:
        if self.mode == "agent" and self.models:
            raise ConfigError("--mode agent evaluates the agent command; give no --model")
        if self.mode != "agent" and not self.models:
            raise ConfigError("give at least one --model")
        if self.mode == "agent":
            self.agent_backend()  # an unknown preset or a command without the prompt: now
        return self

    def solver(self) -> tuple[Solver, Spec]:
        """The registered solver of `mode`, and its spec for the summary."""
        if self.mode == "no_tools":
            return SOLVERS.build("no_tools", prompt=self.no_tools_prompt)
        return SOLVERS.build(
            "with_tools",
            max_tool_calls=self.max_tool_calls,
            timeout_s=self.sandbox_timeout_s,
            allow_weak_sandbox=self.allow_weak_sandbox,
            question_seconds=self.question_seconds,
            wheels=self.wheels,
        )

    def agent_backend(self) -> AgentCommand:
        """The external agent of `agent` mode (preset or command)."""
        return agent_command(
            self.agent,
            self.agent_command,
            timeout_s=self.question_seconds,
            limits=limits_for(self.sandbox_timeout_s, self.allow_weak_sandbox),
            wheels=self.wheels,
            confined=not self.agent_unconfined,
        )


class EvalRow(BaseModel):
    """One question answered once by one model (a row of `results.parquet`)."""

    model_config = ConfigDict(frozen=True)

    schema_version: int = 2
    """Row layout version (2 added `temperature`)."""
    model: str
    """`provider:model` label."""
    mode: str
    """`no_tools` or `with_tools`."""
    run: int
    """Run number, 0-based; also the sample index of its model calls."""
    temperature: float
    """Sampling temperature of the model calls."""
    question_id: str
    """Question id (MCQRecord.id)."""
    tier: str
    """Difficulty tier."""
    template: str
    """Template name."""
    answer: str
    """The correct letter."""
    letter: str | None
    """The letter obtained, None when none was."""
    correct: bool
    """letter == answer."""
    parsed: bool
    """A letter was obtained (see `SolveResult.parsed`)."""
    refused_tool_call: bool
    """No tools: the reply carried a tool call and was refused."""
    parse_error: str | None
    """Why no letter was obtained."""
    raw_reply: str
    """The model's final reply text, or its last `answer` arguments."""
    input_tokens: int
    """Prompt tokens of the attempt."""
    output_tokens: int
    """Completion tokens of the attempt."""
    latency_s: float
    """Recorded latency of the attempt's model calls."""
    model_calls: int
    """Model calls made."""
    tool_calls: int
    """run_python calls made."""
    transcript: str
    """JSON of the assistant and tool turns (redacted)."""
    tool_choice_fallbacks: int = 0
    """Steps down the forced-call ladder (`tool_choice` forms refused or ignored)."""
    text_fallback: str = ""
    """Tools: why the attempt went over plain text ("" when it did not: `refused`,
    `dropped`, `dropped before`; `eval.text_tools.TextFallback`)."""


class EvalSummary(BaseModel):
    """`summary.json`: what ran and the per-model results."""

    model_config = ConfigDict(frozen=True)

    schema_version: int = 2
    """Summary layout version (2 added `sampling` and the baselines and exclusions)."""
    questions_file: str
    """Question file name."""
    questions_sha256: str
    """SHA-256 of the question file's bytes."""
    questions: int
    """Questions evaluated."""
    solver: dict[str, object]
    """Registered solver name and arguments."""
    prompts_sha256: str
    """SHA-256 of the MCQ prompt files."""
    sampling: str
    """Runs and temperature in words, and what the spread across runs means."""
    models: list[ModelSummary]
    """One entry per model (each also states its temperature and baselines)."""
    sandbox_layers: list[str] | None = None
    """`with_tools`: the sandbox layers that took effect on this machine (None without tools)."""


class EvalOutcome(BaseModel):
    """Where the outputs went, and the summary."""

    model_config = ConfigDict(frozen=True)

    results: Path
    """results.parquet."""
    summary_path: Path
    """summary.json."""
    report: Path | None
    """report.html, None when not asked for."""
    summary: EvalSummary
    """The summary as written."""


def posed(record: MCQRecord, files: dict[str, bytes]) -> Posed:
    """A question record as the solver sees it."""
    return Posed(record.id, record.question, record.options, record.answer, files)


def question_files(records: Sequence[MCQRecord], mode: str) -> list[dict[str, bytes]]:
    """`bars.csv` per question (the bars it was built from, digest-checked); none without tools."""
    if mode == "no_tools":
        return [{} for _ in records]
    csv: dict[str, bytes] = {}
    out = []
    for record in records:
        key = record.config.data.model_dump_json()
        if key not in csv:
            csv[key] = bars_csv(load_bars(record.config.data, verify=True))
        out.append({"bars.csv": csv[key]})
    return out


def _row(model: ChatModel, mode: str, run: int, record: MCQRecord, result: SolveResult) -> EvalRow:
    if not result.parsed:
        kind = "refused tool call" if result.refused_tool_call else "unparseable reply"
        log.warning(
            "%s: model=%s run=%d question=%s: %s; reply=%r",
            kind,
            model.config.label,
            run,
            record.id[:12],
            result.parse_error,
            result.raw_reply[:300],
        )
    return EvalRow(
        model=model.config.label,
        mode=mode,
        run=run,
        temperature=model.config.temperature,
        question_id=record.id,
        tier=record.tier,
        template=record.template,
        answer=record.answer,
        letter=result.letter,
        correct=result.letter == record.answer,
        parsed=result.parsed,
        refused_tool_call=result.refused_tool_call,
        parse_error=result.parse_error,
        raw_reply=result.raw_reply,
        input_tokens=result.usage.input_tokens,
        output_tokens=result.usage.output_tokens,
        latency_s=result.latency_s,
        model_calls=result.model_calls,
        tool_calls=result.tool_calls,
        transcript=result.transcript,
        tool_choice_fallbacks=result.tool_choice_fallbacks,
        text_fallback=result.text_fallback,
    )


Progress = Callable[[int, int], None]
"""`progress(done, total)`: questions answered so far (x runs x models) of all of them."""


def _ticker(progress: Progress | None, total: int) -> Callable[[], None]:
    """A callback that counts one more answered question and reports it to `progress`."""
    done = 0
    if progress is not None:
        progress(0, total)

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    return tick


async def evaluate(
    records: Sequence[MCQRecord],
    spec: EvalSpec,
    pool: ModelPool,
    files: Sequence[dict[str, bytes]],
    progress: Progress | None = None,
) -> list[EvalRow]:
    """Solve every question once per run with every model; rows in (model, run, question);
    `progress(done, total)` after each answer.

    Raises:
        BudgetStop: The budget ran out; answered questions are cached, rerun to continue.
    """
    solver, _ = spec.solver()
    tick = _ticker(progress, len(records) * spec.runs * len(spec.models))
    rows: list[EvalRow] = []
    for config in spec.models:
        model = pool.model(config)
        for run in range(spec.runs):

            async def one(i: int, model: ChatModel = model, run: int = run) -> EvalRow:
                result = await solver(model, posed(records[i], files[i]), run)
                tick()
                return _row(model, spec.mode, run, records[i], result)

            rows += await pool.map(range(len(records)), one)
    return rows


async def evaluate_agent(
    records: Sequence[MCQRecord],
    spec: EvalSpec,
    files: Sequence[dict[str, bytes]],
    progress: Progress | None = None,
) -> list[EvalRow]:
    """Each question once per run through the external agent, `concurrency` at a time;
    `progress(done, total)` after each answer."""
    agent = spec.agent_backend()
    gate = asyncio.Semaphore(spec.concurrency)
    tick = _ticker(progress, len(records) * spec.runs)

    async def one(i: int, run: int) -> EvalRow:
        async with gate:
            result = await asyncio.to_thread(agent.solve, posed(records[i], files[i]))
        tick()
        return _agent_row(agent, run, records[i], result)

    rows: list[EvalRow] = []
    for run in range(spec.runs):
        rows += await asyncio.gather(*(one(i, run) for i in range(len(records))))
    return rows


def _agent_row(agent: AgentCommand, run: int, record: MCQRecord, result: SolveResult) -> EvalRow:
    return EvalRow(
        model=f"agent:{agent.name}",
        mode="agent",
        run=run,
        temperature=float("nan"),  # the agent's own sampling, not ours to set
        question_id=record.id,
        tier=record.tier,
        template=record.template,
        answer=record.answer,
        letter=result.letter,
        correct=result.letter == record.answer,
        parsed=result.parsed,
        refused_tool_call=False,
        parse_error=result.parse_error,
        raw_reply=result.raw_reply,
        input_tokens=result.usage.input_tokens,
        output_tokens=result.usage.output_tokens,
        latency_s=result.latency_s,
        model_calls=result.model_calls,
        tool_calls=result.tool_calls,
        transcript=result.transcript,
    )


def write_results(rows: Sequence[EvalRow], path: Path) -> None:
    """`results.parquet`: one row per question x run, columns as `EvalRow`."""
    frame = pd.DataFrame([r.model_dump() for r in rows], columns=list(EvalRow.model_fields))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_parquet_atomic(frame, path, index=False)


def model_pool(spec: EvalSpec, out_dir: Path, retry: RetryPolicy | None) -> ModelPool:
    """The evaluation's models: one cache and one budget in `out_dir`, `concurrency` bound.

    Raises:
        ConfigError: A model is given twice.
    """
    labels = [m.label for m in spec.models]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"each --model may appear once, got {labels}")
    return ModelPool(
        budget=spec.budget,
        budget_file=out_dir / BUDGET_FILE,
        cache_path=out_dir / CACHE_FILE,
        cache_mode=spec.cache_mode,
        concurrency=spec.concurrency,
        retry=retry,
        limits=None if spec.limits is None else spec.limits.limits(),
        resume_hint=(
            "raise --max-tokens/--max-cost-usd and rerun the same command to continue "
            "(answered questions come from the cache for free)"
        ),
    )


def run_eval(
    questions: Path,
    spec: EvalSpec,
    out_dir: Path,
    *,
    limit: int | None = None,
    retry: RetryPolicy | None = None,
    report: bool = True,
    progress: Progress | None = None,
) -> EvalOutcome:
    """Evaluate a question file and write results, summary and (optionally) the report;
    `progress(done, total)` after each answered question (a progress bar).

    Raises:
        DataError: The question file or the bars it references are missing or changed.
        ConfigError: A model is given twice, or a bad model configuration.
        ProviderError: An endpoint failed after every retry (finished replies stay cached).
        BudgetStop: The budget ran out; rerun the same command to continue.
    """
    records = read_jsonl(questions)
    if limit is not None:
        records = records[:limit]
    if not records:
        raise ConfigError(f"{questions} holds no questions to evaluate")
    layers = None
    confined = spec.mode == "with_tools" or (spec.mode == "agent" and not spec.agent_unconfined)
    if confined:  # before any model call: refuse where code cannot be confined
        layers = sandbox_preflight(limits_for(spec.sandbox_timeout_s, spec.allow_weak_sandbox))
    out_dir.mkdir(parents=True, exist_ok=True)
    files = question_files(records, spec.mode)
    if spec.mode == "agent":
        rows = asyncio.run(evaluate_agent(records, spec, files, progress))
        agent = spec.agent_backend()
        args = {"name": agent.name, "argv": list(agent.argv), "confined": agent.confined}
        solver_spec = Spec("agent_command", {**args, "timeout_s": agent.timeout_s})
    else:
        with model_pool(spec, out_dir, retry) as pool:
            rows = asyncio.run(evaluate(records, spec, pool, files, progress))
        _, solver_spec = spec.solver()
    results = out_dir / RESULTS_FILE
    write_results(rows, results)
    summary = EvalSummary(
        questions_file=questions.name,
        questions_sha256=hashlib.sha256(questions.read_bytes()).hexdigest(),
        questions=len(records),
        solver={"name": solver_spec.name, "args": solver_spec.args},
        prompts_sha256=prompts_sha256(),
        sampling=sampling_note(spec.runs, [m.temperature for m in spec.models]),
        models=summarise(pd.read_parquet(results)),
        sandbox_layers=None if layers is None else list(layers),
    )
    summary_path = out_dir / SUMMARY_FILE
    text = json.dumps(summary.model_dump(mode="json"), indent=2, ensure_ascii=False)
    write_text_atomic(summary_path, text + "\n")
    html = None
    if report:
        html = mcq_report(results, out_dir / REPORT_FILE)
    return EvalOutcome(results=results, summary_path=summary_path, report=html, summary=summary)
