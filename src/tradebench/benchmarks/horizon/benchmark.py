"""The knowledge-horizon probe as the harness runs it.

Grid: every model agent x window (the span of months probed) x seed x mask, where the
mask is `bright` (the curve) or `blinded` (the identity-masked control). An episode asks
every question of its span once (seed s is the model's sample index), one journal line per
answered question, so a killed episode resumes where it stopped. Files: `questions.jsonl`
(the questions asked, with their answers), `answers.parquet` and `metrics.json`.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from tradebench.benchmarks.horizon.options import HorizonOptions
from tradebench.benchmarks.horizon.questions import Question, build_questions
from tradebench.benchmarks.horizon.render import identities, prompt
from tradebench.benchmarks.horizon.report import HORIZON_SECTIONS
from tradebench.benchmarks.mcq.eval.parse import parse_letter
from tradebench.data.dataset import Dataset
from tradebench.errors import ConfigError
from tradebench.llm.base import ChatModel
from tradebench.llm.types import Message
from tradebench.runs.axes import mask_axis
from tradebench.runs.protocol import EpisodeContext, EpisodeRef
from tradebench.runs.records import EpisodeRecord
from tradebench.runs.spec import RunSpec
from tradebench.runs.store import write_json

NAME = "horizon"
MASKS = ("bright", "blinded")
QUESTIONS_FILE = "questions.jsonl"
ANSWERS_FILE = "answers.parquet"


def episode_questions(dataset: Dataset, ref: EpisodeRef, options: HorizonOptions) -> list[Question]:
    """The questions of an episode's span (the same for every agent, mask and seed)."""
    return build_questions(
        dataset,
        str(ref.window.start),
        str(ref.window.end),
        options.questions_per_month,
        options.question_seed,
        options.kinds,
    )


async def _ask(model: ChatModel, text: str, seed: int) -> str:
    reply = await model.generate([Message(role="user", content=text)], sample_index=seed)
    return reply.message.content or ""


_LEADING = re.compile(r"^\s*[*_(\[]*(?P<letter>[A-D])(?:[)\].:,*_]|\s|$)")


def read_letter(reply: str) -> str | None:
    """The letter a reply chooses: an accepted MCQ form (`parse_letter`), else a reply
    that opens with the letter and a delimiter or space (`A. 17.57`, `(B)`, `C`)."""
    letter = parse_letter(reply)
    if letter is not None:
        return letter
    match = _LEADING.match(reply)
    return match.group("letter") if match else None


def _answer_line(q: Question, reply: str) -> dict[str, Any]:
    letter = read_letter(reply)
    valid = letter is not None and "ABCD".index(letter) < len(q.options)
    return {
        "id": q.id,
        "letter": letter if valid else None,
        "correct": valid and letter == q.answer,
    }


def answers_table(questions: list[Question], lines: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per answered question: id, month, kind, day, chance, answer, letter, correct."""
    by_id = {q.id: q for q in questions}
    return pd.DataFrame(
        [
            {
                "id": line["id"],
                "month": by_id[line["id"]].month,
                "kind": by_id[line["id"]].kind,
                "day": by_id[line["id"]].day,
                "chance": by_id[line["id"]].chance,
                "answer": by_id[line["id"]].answer,
                "letter": line["letter"],
                "correct": bool(line["correct"]),
            }
            for line in lines
        ],
        columns=["id", "month", "kind", "day", "chance", "answer", "letter", "correct"],
    )


class HorizonBenchmark:
    """Which months of market facts does a model remember? (`docs/horizon.md`)"""

    name = NAME
    options_model = HorizonOptions
    axes = (mask_axis(MASKS),)
    """`bright` (the curve) and `blinded` (the masked control), both by default; no modes."""
    summary_columns = ("accuracy", "chance", "n_questions")
    broker_files = False
    report_sections = HORIZON_SECTIONS

    def expand(self, spec: RunSpec, options: HorizonOptions, dataset: Dataset) -> list[EpisodeRef]:
        """Models x windows x seeds x masks; refuses rule agents and other mask levels."""
        rules = [a.name for a in spec.agents if not a.is_llm]
        if rules:
            raise ConfigError(
                f"horizon asks models; {rules} are rule agents with nothing to remember"
            )
        if "bright" not in spec.masks:
            raise ConfigError(
                "horizon runs masks `bright` (the curve) and `blinded` (the masked control); "
                f"got {list(spec.masks)}: set `masks: [bright, blinded]`"
            )
        unknown = sorted(set(options.serving_dates) - {a.name for a in spec.agents})
        if unknown:
            raise ConfigError(f"options.serving_dates names no agent of the spec: {unknown}")
        return [
            EpisodeRef(
                id=f"{a.name}_{mask}_s{seed}_{w.start:%Y%m%d}-{w.end:%Y%m%d}",
                agent=a.name, kind="llm", mask=mask, seed=seed, window=w,
            )
            for a in spec.agents for w in spec.windows for seed in spec.seeds
            for mask in [m for m in MASKS if m in spec.masks]
        ]  # fmt: skip

    async def run_episode(self, ref: EpisodeRef, ctx: EpisodeContext) -> EpisodeRecord:
        """Ask every question not yet answered, in order, `concurrency` at a time."""
        options: HorizonOptions = ctx.options
        assert ctx.model is not None
        questions = episode_questions(ctx.dataset, ref, options)
        if not questions:
            raise ConfigError(f"{ref.id}: the dataset has no trading day in {ref.window}")
        file = ctx.folder / QUESTIONS_FILE
        file.write_text("".join(q.model_dump_json() + "\n" for q in questions))
        journal = ctx.journal()
        lines = journal.restore()
        calendar, who = ctx.dataset.panel.dates, identities(ctx.dataset)
        for start in range(len(lines), len(questions), options.concurrency):
            batch = questions[start : start + options.concurrency]
            texts = [prompt(q, ref.mask, calendar, who) for q in batch]  # type: ignore[arg-type]
            replies = await asyncio.gather(*(_ask(ctx.model, t, ref.seed) for t in texts))
            for i, (q, reply) in enumerate(zip(batch, replies, strict=True)):
                lines.append(_answer_line(q, reply))
                journal.append(start + i, lines[-1], {"prompt": texts[i], "reply": reply})
                ctx.on_step()
        table = answers_table(questions, lines)
        table.to_parquet(ctx.folder / ANSWERS_FILE, index=False)
        accuracy = float(table["correct"].mean())
        chance = float(table["chance"].mean())
        write_json(ctx.folder / "metrics.json", {"accuracy": accuracy, "chance": chance})
        return ref.record(
            self.name, "done", n_steps=len(lines), accuracy=accuracy, chance=chance,
            n_questions=len(table),
        )  # fmt: skip

    def summary_row(self, record: EpisodeRecord, folder: Path) -> dict[str, Any]:
        """Accuracy, mean chance and questions answered."""
        extras = record.extras
        return {k: extras.get(k) for k in ("accuracy", "chance", "n_questions")}


def read_questions(folder: Path) -> list[Question]:
    """An episode's `questions.jsonl`."""
    text = (Path(folder) / QUESTIONS_FILE).read_text()
    return [Question.model_validate(json.loads(line)) for line in text.splitlines() if line]


BENCHMARK = HorizonBenchmark()
