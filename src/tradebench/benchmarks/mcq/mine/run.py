"""`tradebench mcq mine`: an LLM writes questions with verification code; solvers filter them.

Per round, `per_round` attempts are generated concurrently (the generator sees the outcomes
of every earlier attempt in the database), then, in attempt order:

1. parse the `<<<QUESTION>>>`/`<<<CODE>>>`/`<<<RATIONALE>>>` (and `<<<DOMAIN>>>`) blocks ->
   `malformed`;
2. verify in the sandbox (answer, distractors, well-posedness) -> `failed_code`/`ill_posed`;
3. SHA-256 of the whole question (text, options, answer value) against every earlier one,
   in attempt order -> `duplicate`;
4. stage 1, the no-tools solver: right -> `too_easy` (discarded);
5. stage 2, the tools solver (its own model when given): right -> `accepted`, else
   `review` (human queue).

Steps 2 and 4-5 of different attempts run concurrently (at most `concurrency`). Each round is
appended to the database as soon as it ends; the summary line is written last. Both
models come from one `ModelPool` (the reply cache and the budget in DB_DIR): a budget stop
leaves the finished rounds in the database and no summary line, and rerunning the same
command finishes that run from its next round (the interrupted round's replies come back
from the cache).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from tradebench.benchmarks.mcq.bars import bars_csv, load_bars, resolve
from tradebench.benchmarks.mcq.config import DataRef
from tradebench.benchmarks.mcq.eval.sandbox_tool import limits_for
from tradebench.benchmarks.mcq.eval.solve import NoToolsSolver, Posed, SolveResult, WithToolsSolver
from tradebench.benchmarks.mcq.mine.parse import (
    Blocks,
    MalformedReply,
    content_sha256,
    parse_blocks,
)
from tradebench.benchmarks.mcq.mine.parse import question_sha256 as sha
from tradebench.benchmarks.mcq.mine.store import MineDB
from tradebench.benchmarks.mcq.mine.types import (
    OUTCOMES,
    ROLES,
    AttemptRecord,
    MinedQuestion,
    MineSpec,
    MineSummary,
    TokenCount,
)
from tradebench.benchmarks.mcq.mine.verify import Rejected, Verified, verify
from tradebench.benchmarks.mcq.prompt_files import prompts_sha256, render
from tradebench.errors import BudgetExceeded
from tradebench.llm.base import ChatModel
from tradebench.llm.retry import RetryPolicy
from tradebench.llm.types import ChatResponse, Message
from tradebench.runs.models import ModelPool
from tradebench.sandbox import sandbox_preflight

log = logging.getLogger("tradebench.mcq")
EXCERPT = 160
Where = tuple[int, int, int]
"""(round, index within the round, MCQ_SEED) of one attempt."""


@dataclass(frozen=True)
class MineContext:
    """Everything one run shares: spec, database, models, files and the run's names."""

    spec: MineSpec
    db: MineDB
    run: int
    run_id: str
    generator: ChatModel
    solver: ChatModel
    """Stage 1 (no tools)."""
    solver_tools: ChatModel
    """Stage 2 (with tools): the same model as `solver` unless the spec names another."""
    files: Mapping[str, bytes]
    prompts: str


@dataclass(frozen=True)
class Draft:
    """A parsed, new generation waiting for verification and the solvers."""

    round: int
    index: int
    seed: int
    blocks: Blocks
    sha: str
    tokens: dict[str, TokenCount]
    log: dict[str, Any] = field(default_factory=dict)

    def record(self, run: int, **fields: Any) -> AttemptRecord:
        """This draft's attempt record with `fields` (outcome, reason, ...) set."""
        base = {"run": run, "round": self.round, "index": self.index, "seed": self.seed}
        base |= {"tokens": self.tokens, "question_sha256": self.sha}
        base |= {"domain": self.blocks.domain}
        return AttemptRecord(**(base | {"question": self.blocks.question} | fields))


@dataclass(frozen=True)
class Done:
    """A finished attempt: its record, the question to store (if any) and its log."""

    record: AttemptRecord
    question: MinedQuestion | None
    log: dict[str, Any]


class MineOutcome(BaseModel):
    """What a mining run wrote."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    """Timestamped run id (the log folder under DB_DIR/runs)."""
    summary: MineSummary
    """The summary line appended to db/summary."""
    db: Path
    """The database folder."""


def data_text(ref: DataRef | None) -> str:
    """One line describing the data files (also the first line solvers see)."""
    if ref is None:
        return "none; the question must be self-contained (make any data from MCQ_SEED)."
    basis = "adjusted" if ref.adjusted else "raw (unadjusted)"
    return (
        f"daily bars of {ref.symbol} from {ref.start.isoformat()} to {ref.end.isoformat()} "
        f"inclusive, {basis} prices, in bars.csv with columns date,open,high,low,close,volume."
    )


def history_text(attempts: Sequence[AttemptRecord], limit: int) -> str:
    """The last `limit` attempts as lines the generator can learn from."""
    shown = list(attempts)[-limit:] if limit else []
    if not shown:
        return "(none yet)"
    lines = []
    for a in shown:
        text = " ".join((a.question or "(no question parsed)").split())
        text = text if len(text) <= EXCERPT else text[: EXCERPT - 3] + "..."
        lines.append(f'- [{a.outcome}] "{text}": {a.reason}')
    return "\n".join(lines)


def _generator_messages(ctx: MineContext, seed: int, history: str) -> list[Message]:
    user = render(
        "mine_generator",
        data=data_text(ctx.spec.data),
        files="bars.csv" if ctx.files else "none",
        timeout=f"{ctx.spec.code_timeout_s:g}",
        seed=seed,
        history=history,
    )
    return [
        Message(role="system", content=render("mine_generator_system")),
        Message(role="user", content=user),
    ]


def _triage(
    ctx: MineContext, where: Where, messages: list[Message], response: ChatResponse
) -> Draft | Done:
    """Parse one generation: a `Draft`, or the rejected attempt."""
    tokens = {"generator": TokenCount().plus(response.usage)}
    entry: dict[str, Any] = {
        "generator_messages": [m.model_dump(mode="json") for m in messages],
        "generator_reply": response.message.content,
        "generator_parse_error": response.parse_error,
    }
    try:
        blocks = parse_blocks(response.message.content)
    except MalformedReply as exc:
        rnd, index, seed = where
        record = AttemptRecord(
            run=ctx.run, round=rnd, index=index, seed=seed, outcome="malformed", reason=str(exc)
        )
        return Done(record.model_copy(update={"tokens": tokens}), None, entry)
    entry["blocks"] = {
        "question": blocks.question,
        "code": blocks.code,
        "rationale": blocks.rationale,
        "domain": blocks.domain,
    }
    return Draft(*where, blocks=blocks, sha=sha(blocks.question), tokens=tokens, log=entry)


def _posed(ctx: MineContext, draft: Draft, options: dict[str, str], answer: str) -> Posed:
    text = draft.blocks.question
    if ctx.spec.data is not None:
        text = f"Data: {data_text(ctx.spec.data)}\n\nQuestion: {text}"
    return Posed(draft.sha, text, options, answer, ctx.files)


async def _solve(ctx: MineContext, posed: Posed) -> tuple[SolveResult, SolveResult | None]:
    """Stage 1 (no tools), then stage 2 (with tools) unless stage 1 was right."""
    first = await NoToolsSolver()(ctx.solver, posed, 0)
    if first.letter == posed.answer:
        return first, None
    limits = limits_for(ctx.spec.solver_timeout_s, ctx.spec.allow_weak_sandbox)
    tools = WithToolsSolver(ctx.spec.max_tool_calls, limits=limits)
    return first, await tools(ctx.solver_tools, posed, 0)


def _verdict(first: SolveResult, second: SolveResult | None, answer: str) -> tuple[str, str]:
    if second is None:
        return "too_easy", f"solved without tools (answered {first.letter})"
    stage1 = first.letter or "no letter"
    if second.letter == answer:
        return "accepted", f"solved only with tools (no tools: {stage1}, tools: {second.letter})"
    stage2 = second.letter or "no answer"
    return "review", f"not solved with tools either (no tools: {stage1}, tools: {stage2})"


Checked = tuple[Draft, Verified | Rejected]


async def _check(ctx: MineContext, draft: Draft) -> Checked:
    """Run the verification code: options and key, or why the question was rejected."""
    limits = limits_for(ctx.spec.code_timeout_s, ctx.spec.allow_weak_sandbox)
    return draft, await verify(draft.blocks, draft.seed, ctx.files, limits)


def _dedup(ctx: MineContext, checked: Checked, known: set[str]) -> Checked | Done:
    """The whole question's hash against every earlier one (adds it when new)."""
    draft, result = checked
    entry = dict(draft.log)
    entry["code_runs"] = [{"seed": r.seed, **r.result} for r in result.runs]
    if isinstance(result, Rejected):
        record = draft.record(ctx.run, outcome=result.outcome, reason=result.reason)
        return Done(record, None, entry)
    digest = content_sha256(draft.blocks.question, result.options, result.answer_value)
    if digest in known:
        reason = f"same question, options and answer as an earlier attempt ({digest[:12]})"
        record = draft.record(ctx.run, outcome="duplicate", reason=reason)
        return Done(record.model_copy(update={"content_sha256": digest}), None, entry)
    known.add(digest)
    return replace(draft, log=entry), result


async def _finish(ctx: MineContext, draft: Draft, checked: Verified) -> Done:
    """Both solver stages on a verified, new question; the attempt, the question, the log."""
    entry = dict(draft.log)
    posed = _posed(ctx, draft, checked.options, checked.answer)
    first, second = await _solve(ctx, posed)
    outcome, reason = _verdict(first, second, checked.answer)
    tokens = dict(draft.tokens) | {"solver_no_tools": TokenCount().plus(first.usage)}
    if second is not None:
        tokens["solver_with_tools"] = TokenCount().plus(second.usage)
    entry |= {"options": checked.options, "answer": checked.answer, "stage1": first.model_dump()}
    entry["stage2"] = second.model_dump() if second is not None else None
    record = draft.record(
        ctx.run,
        outcome=outcome,
        reason=reason,
        answer_value=checked.answer_value,
        answer=checked.answer,
        stage1_letter=first.letter,
        stage2_letter=second.letter if second is not None else None,
        distractor_source=checked.source,
        tokens=tokens,
        content_sha256=content_sha256(draft.blocks.question, checked.options, checked.answer_value),
    )
    stored = None
    if outcome in ("accepted", "review"):
        stored = _question(ctx, draft, posed, record, checked.source)
    return Done(record, stored, entry)


def _question(
    ctx: MineContext, draft: Draft, posed: Posed, record: AttemptRecord, source: Any
) -> MinedQuestion:
    return MinedQuestion(
        id=record.content_sha256 or draft.sha,
        domain=draft.blocks.domain,
        status=record.outcome,  # type: ignore[arg-type]
        question=posed.question,
        stem=draft.blocks.question,
        options=dict(posed.options),
        answer=posed.answer,
        answer_value=record.answer_value or "",
        distractor_source=source,
        code=draft.blocks.code,
        rationale=draft.blocks.rationale,
        seed=draft.seed,
        data=ctx.spec.data,
        run=ctx.run,
        round=draft.round,
        generator=ctx.generator.config.label,
        solver=ctx.solver.config.label,
        solver_with_tools=ctx.solver_tools.config.label,
        stage1_letter=record.stage1_letter,
        stage2_letter=record.stage2_letter,
        prompts_sha256=ctx.prompts,
    )


async def _generate(
    ctx: MineContext, rnd: int, history: list[AttemptRecord]
) -> list[tuple[Where, list[Message], ChatResponse]]:
    """The round's generations: (round, index, seed), prompt messages and reply, in order."""
    gate = asyncio.Semaphore(ctx.spec.concurrency)
    text = history_text(history, ctx.spec.history)
    where = [(rnd, i, ctx.spec.seed + len(history) + i) for i in range(ctx.spec.per_round)]
    prompts = [_generator_messages(ctx, seed, text) for _, _, seed in where]

    async def one(i: int) -> ChatResponse:
        async with gate:
            return await ctx.generator.generate(prompts[i], (), "auto", i)

    replies = await asyncio.gather(*(one(i) for i in range(len(where))))
    return list(zip(where, prompts, replies, strict=True))


def _store(ctx: MineContext, rnd: int, done: Sequence[Done]) -> None:
    """Write each attempt's log, then append the round to the database files."""
    for d in done:
        record = d.record
        log.info("mine round %d.%d: %s (%s)", rnd, record.index, record.outcome, record.reason)
        payload = {"attempt": record.model_dump(mode="json"), **d.log}
        ctx.db.write_log(ctx.run_id, f"r{rnd:03d}-{record.index:02d}", payload)
    stored = [d.question for d in done if d.question is not None]
    ctx.db.append(ctx.db.attempts, [d.record for d in done])
    ctx.db.append(ctx.db.accepted, [q for q in stored if q.status == "accepted"])
    ctx.db.append(ctx.db.review, [q for q in stored if q.status == "review"])


async def _round(
    ctx: MineContext, rnd: int, history: list[AttemptRecord], seen: frozenset[str]
) -> list[AttemptRecord]:
    """One round: generate, parse, verify concurrently, dedup in attempt order, solve
    concurrently, store."""
    parsed = [_triage(ctx, *item) for item in await _generate(ctx, rnd, history)]
    gate = asyncio.Semaphore(ctx.spec.concurrency)

    async def check(item: Draft | Done) -> Checked | Done:
        if isinstance(item, Done):
            return item
        async with gate:
            return await _check(ctx, item)

    known = set(seen)
    deduped = [
        item if isinstance(item, Done) else _dedup(ctx, item, known)
        for item in await asyncio.gather(*(check(item) for item in parsed))
    ]

    async def finish(item: Checked | Done) -> Done:
        if isinstance(item, Done):
            return item
        async with gate:
            return await _finish(ctx, item[0], item[1])  # type: ignore[arg-type]

    done = await asyncio.gather(*(finish(item) for item in deduped))
    _store(ctx, rnd, done)
    return [d.record for d in done]


def summarise_run(ctx: MineContext, records: Sequence[AttemptRecord]) -> MineSummary:
    """Counts per outcome, acceptance rate and tokens per role of one run."""
    counts = {o: sum(r.outcome == o for r in records) for o in OUTCOMES}
    tokens = {role: TokenCount() for role in ROLES}
    for record in records:
        for role, count in record.tokens.items():
            tokens[role] = tokens[role].plus(count)
    return MineSummary(
        run=ctx.run,
        generator=ctx.generator.config.label,
        solver=ctx.solver.config.label,
        solver_with_tools=ctx.solver_tools.config.label,
        rounds=ctx.spec.rounds,
        attempts=len(records),
        outcomes=counts,
        acceptance_rate=counts["accepted"] / len(records) if records else 0.0,
        tokens=tokens,
        prompts_sha256=ctx.prompts,
    )


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _context(
    spec: MineSpec,
    db: MineDB,
    run: int,
    pool: ModelPool,
    now: Callable[[], dt.datetime],
) -> MineContext:
    files: dict[str, bytes] = {}
    if spec.data is not None:  # record the bars' digest so stored questions pin their data
        ref, bars = resolve(spec.data)
        if spec.data.bars_sha256 and ref.bars_sha256 != spec.data.bars_sha256:
            load_bars(spec.data, verify=True)  # raises the digest-mismatch DataError
        spec = spec.model_copy(update={"data": ref})
        files["bars.csv"] = bars_csv(bars)
    return MineContext(
        spec=spec,
        db=db,
        run=run,
        run_id=db.run_folder(run) or f"{now():%Y%m%dT%H%M%SZ}-run{run:03d}",
        generator=pool.model(spec.generator),
        solver=pool.model(spec.solver),
        solver_tools=pool.model(spec.solver_with_tools or spec.solver),
        files=files,
        prompts=prompts_sha256(),
    )


async def _rounds(
    ctx: MineContext, history: list[AttemptRecord], first: int = 1
) -> list[AttemptRecord]:
    """Rounds `first`..`rounds` of the run in one event loop (the model clients are bound
    to it); `history` holds every attempt recorded before them."""
    seen = frozenset(ctx.db.seen(history))
    records: list[AttemptRecord] = []
    for rnd in range(first, ctx.spec.rounds + 1):
        new = await _round(ctx, rnd, history + records, seen)
        seen |= {r.content_sha256 for r in new if r.content_sha256}
        records += new
    return records


def run_mine(
    spec: MineSpec,
    root: Path,
    *,
    retry: RetryPolicy | None = None,
    now: Callable[[], dt.datetime] = _utc_now,
) -> MineOutcome:
    """Mine `spec.rounds` rounds into the database at `root` and append the run's summary.

    A run stopped before its summary (a budget stop, a provider failure, a kill) is finished
    first: its recorded rounds are kept and mining continues from the next one.

    Raises:
        DataError: A database file is corrupt, or the data bars changed since recorded.
        ProviderError: An endpoint failed after every retry (finished rounds are kept).
        BudgetStop: The budget ran out (finished rounds are kept); rerun to continue.
    """
    sandbox_preflight(limits_for(spec.code_timeout_s, spec.allow_weak_sandbox))
    db = MineDB(root)
    history = db.prior_attempts()
    run = db.unfinished_run(history)
    done = [a for a in history if a.run == run] if run is not None else []
    first = max((a.round for a in done), default=0) + 1
    pool = ModelPool(
        budget=spec.budget,
        budget_file=db.budget,
        cache_path=db.cache,
        cache_mode=spec.cache_mode,
        concurrency=spec.concurrency,
        retry=retry,
        limits=None if spec.limits is None else spec.limits.limits(),
        resume_hint=(
            "finished rounds are kept; raise --max-tokens/--max-cost-usd and rerun the same "
            "command to finish the run"
        ),
    )
    with pool:
        ctx = _context(spec, db, run if run is not None else db.next_run(history), pool, now)
        try:
            records = asyncio.run(_rounds(ctx, history, first))
        except BudgetExceeded as exc:
            raise pool.stopped(exc) from None
    summary = summarise_run(ctx, done + records)
    db.append(db.summary, [summary])
    return MineOutcome(run_id=ctx.run_id, summary=summary, db=db.root)
