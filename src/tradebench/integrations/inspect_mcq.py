"""The MCQ benchmark as inspect_ai samples, solver, scorer and metric.

One sample per question of a question file (`tradebench mcq build`). The solver is the
benchmark's own (`mcq.eval.solve`: the no-tools letter protocol, or `run_python` plus the
forced `answer`), with inspect's model; inspect epoch e is run e-1 (its sample index), as
`tradebench mcq eval --runs`. The score is correct / incorrect with the letter, the key,
the tier and why no letter was read; the metric gives accuracy overall and per tier
beside chance (1/4) and the constant-letter baseline of each slice
(`mcq.eval.summary.constant_letter`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ModelOutput, get_model
from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    Metric,
    SampleScore,
    Score,
    Scorer,
    Target,
    metric,
    scorer,
)
from inspect_ai.solver import Generate, Solver, TaskState, solver

from tradebench.benchmarks.mcq.build.builder import BuildSpec
from tradebench.benchmarks.mcq.build.files import build_file
from tradebench.benchmarks.mcq.config import DataRef
from tradebench.benchmarks.mcq.eval.run import EvalSpec, posed, question_files
from tradebench.benchmarks.mcq.eval.solve import Mode, NoToolsPrompt, user_message
from tradebench.benchmarks.mcq.eval.summary import RANDOM_BASELINE, TIERS, constant_letter
from tradebench.benchmarks.mcq.records import MCQRecord, read_jsonl
from tradebench.data.dataset import load_dataset
from tradebench.data.synth import SynthConfig, synthesize
from tradebench.errors import ConfigError
from tradebench.integrations.inspect_model import InspectChatModel, model_config_for
from tradebench.llm.types import ModelConfig

RESULT_KEY = "tradebench_mcq"
"""Where the solver leaves the attempt in the sample's store."""
DEMO_QUESTIONS = 12
"""Questions of the default set, built on the synthetic market."""


def demo_questions(work_dir: Path, seed: int = 0, count: int = DEMO_QUESTIONS) -> Path:
    """A small question file built once from the synthetic market (no shared data needed):
    `count` questions over every tier of every strategy, drawn by `seed`."""
    out = work_dir / f"mcq-synthetic-seed{seed}-{count}.jsonl"
    if out.exists():
        return out
    data = work_dir / "data" / "synthetic-cn-seed0"
    if not (data / "manifest.json").exists():
        synthesize(data, SynthConfig(seed=0))
    panel = load_dataset(data).panel
    ref = DataRef(
        kind="dataset",
        path=str(data.resolve()),
        symbol=str(panel.symbols[0]),
        start=pd.Timestamp(panel.dates[0]).date(),
        end=pd.Timestamp(panel.dates[-1]).date(),
    )
    build_file(BuildSpec(data=ref, mode="sample", num_questions=count, seed=seed), out)
    return out


def eval_spec(
    mode: Mode, no_tools_prompt: NoToolsPrompt, max_tool_calls: int, timeout_s: float, weak: bool
) -> EvalSpec:
    """The evaluation settings of `tradebench mcq eval` (its model list is unused here)."""
    return EvalSpec(
        models=(ModelConfig(provider="openai", model="inspect"),),
        mode=mode,
        no_tools_prompt=no_tools_prompt,
        max_tool_calls=max_tool_calls,
        sandbox_timeout_s=timeout_s,
        allow_weak_sandbox=weak,
    )


def load_questions(path: Path, limit: int | None) -> list[MCQRecord]:
    """The question file's records (the first `limit`).

    Raises:
        DataError: The file is missing or unreadable.
        ConfigError: It holds no question.
    """
    records = read_jsonl(Path(path))[:limit]
    if not records:
        raise ConfigError(f"{path} holds no questions to evaluate")
    return records


def mcq_dataset(records: list[MCQRecord], name: str) -> MemoryDataset:
    """One sample per question: the question and its options as the benchmark poses them."""
    samples = [
        Sample(
            id=r.id,
            input=user_message(posed(r, {})),
            target=r.answer,
            choices=[r.options[k] for k in sorted(r.options)],
            metadata={"tier": r.tier, "template": r.template},
        )
        for r in records
    ]
    return MemoryDataset(samples, name=name)


def mcq_solver(records: list[MCQRecord], spec: EvalSpec) -> Solver:
    """The benchmark's solver of `spec.mode`, one attempt per sample and epoch."""
    by_id = {r.id: r for r in records}
    files = dict(zip(by_id, question_files(records, spec.mode), strict=True))
    solve_one, _ = spec.solver()

    @solver(name="tradebench_mcq")
    def tradebench_mcq() -> Solver:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            ident = str(state.sample_id)
            inspect_model = get_model()
            model = InspectChatModel(inspect_model, model_config_for(inspect_model))
            result = await solve_one(model, posed(by_id[ident], files[ident]), state.epoch - 1)
            state.store.set(RESULT_KEY, result.model_dump(mode="json", exclude={"transcript"}))
            state.messages = model.transcript()
            state.output = ModelOutput.from_content(str(inspect_model), result.raw_reply)
            return state

        return solve

    return tradebench_mcq()


@metric(name="tradebench_mcq_accuracy")
def mcq_accuracy() -> Metric:
    """Accuracy overall and per tier beside chance and each slice's constant-letter
    baseline; `accuracy_without_excluded` leaves refused tool calls out."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        if not scores:
            return {}
        rows = pd.DataFrame(
            [
                {
                    "question_id": str(s.sample_id),
                    "tier": (s.score.metadata or {}).get("tier"),
                    "answer": (s.score.metadata or {}).get("key"),
                    "refused": bool((s.score.metadata or {}).get("refused_tool_call")),
                    "correct": s.score.as_float(),
                }
                for s in scores
            ]
        )
        out = {"accuracy": float(rows["correct"].mean()), "chance": RANDOM_BASELINE}
        _, overall = constant_letter(rows)
        out["constant_letter"] = float(overall or 0.0)
        answered = rows[~rows["refused"]]
        if len(answered):
            out["accuracy_without_excluded"] = float(answered["correct"].mean())
        for tier in TIERS:
            part = rows[rows["tier"] == tier]
            if len(part):
                out[f"accuracy_{tier}"] = float(part["correct"].mean())
                out[f"constant_letter_{tier}"] = float(constant_letter(part)[1] or 0.0)
        return out

    return compute


def mcq_scorer(records: list[MCQRecord]) -> Scorer:
    """Correct when the letter read or submitted is the key."""
    by_id = {r.id: r for r in records}

    @scorer(metrics=[mcq_accuracy()], name="tradebench_mcq_score")
    def tradebench_mcq_score() -> Scorer:
        async def score(state: TaskState, target: Target) -> Score:
            record = by_id[str(state.sample_id)]
            result = state.store.get(RESULT_KEY) or {}
            letter = result.get("letter")
            return Score(
                value=CORRECT if letter == record.answer else INCORRECT,
                answer=letter,
                explanation=result.get("parse_error"),
                metadata={
                    "tier": record.tier,
                    "template": record.template,
                    "key": record.answer,
                    "parsed": bool(result.get("parsed")),
                    "refused_tool_call": bool(result.get("refused_tool_call")),
                    "tool_calls": int(result.get("tool_calls") or 0),
                },
            )

        return score

    return tradebench_mcq_score()
