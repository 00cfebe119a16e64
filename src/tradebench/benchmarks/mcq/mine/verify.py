"""Turn generated code into an answer, three distractors and four options, or reject it.

1. The code runs in the sandbox (fresh directory with the run's files, MCQ_SEED set, a
   wall-clock limit). A non-zero exit, a timeout or no output rejects it (`failed_code`);
   the last non-empty stdout line is the answer value.
2. Distractors: the code is re-run with MCQ_SEED = seed + 1009 k, k = 1..8, keeping each
   new distinct value, until three are found. If fewer than three come out (code that does
   not depend on the seed) and the answer is a number, the rest come from the paper's
   jitter: the answer times 1 +- d, d uniform in [0.07, 0.33] (seeded), printed with the
   answer's decimals, thousands separators and `%` sign.
3. Well-posedness: non-empty question text, four non-empty distinct options, exactly one of
   them equal to the answer value; otherwise `ill_posed`. Options are shuffled by a seed
   derived from the question's hash, so the answer letter is uniform.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass

from tradebench.benchmarks.mcq.build.jitter import JITTER_HIGH, JITTER_LOW
from tradebench.benchmarks.mcq.eval.sandbox_tool import run_in_thread, tool_result
from tradebench.benchmarks.mcq.mine.parse import Blocks
from tradebench.benchmarks.mcq.mine.types import DistractorSource
from tradebench.sandbox import SandboxLimits

SEED_STEP = 1009
MAX_RESEEDS = 8
JITTER_DRAWS = 40
MAX_VALUE_CHARS = 120
LETTERS = ("A", "B", "C", "D")
_NUMBER = re.compile(
    r"^(?P<sign>-?)(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<frac>\d+))?(?P<unit>%?)$"
)


@dataclass(frozen=True)
class CodeRun:
    """One run of the verification code (what the log keeps; no timings)."""

    seed: int
    result: dict[str, object]
    value: str | None


@dataclass(frozen=True)
class Verified:
    """A well-posed question: options, the key and where the distractors came from."""

    answer_value: str
    options: dict[str, str]
    answer: str
    source: DistractorSource
    runs: tuple[CodeRun, ...]


@dataclass(frozen=True)
class Rejected:
    """Why the code or the options failed: `failed_code` or `ill_posed`."""

    outcome: str
    reason: str
    runs: tuple[CodeRun, ...]


def last_line(stdout: str) -> str | None:
    """The last non-empty line of the output, stripped."""
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    return lines[-1] if lines else None


async def run_code(
    code: str, seed: int, files: Mapping[str, bytes], limits: SandboxLimits
) -> CodeRun:
    """Run the code once with MCQ_SEED = seed; `value` is None unless it succeeded."""
    result = await run_in_thread(code, files, limits, {"MCQ_SEED": str(seed)})
    shown = tool_result(result)
    value = last_line(str(shown["stdout"])) if result.ok else None
    return CodeRun(seed, shown, value)


def _failure(run: CodeRun, limits: SandboxLimits) -> str:
    result = run.result
    if result["timed_out"]:
        return f"timed out after {limits.timeout_s:g} s"
    if result["exit_code"] != 0:
        tail = last_line(str(result["stderr"])) or "no error output"
        return f"exit code {result['exit_code']}: {tail}"
    return "printed nothing (the answer must be the last line of stdout)"


def jitter_values(answer: str, order: random.Random) -> list[str]:
    """Values 7-33% from the answer (the paper's multiplicative 0.7-1.3 jitter, seeded),
    formatted like it; [] if the answer is no number or is zero."""
    match = _NUMBER.match(answer)
    if match is None:
        return []
    decimals = len(match.group("frac") or "")
    grouped = "," in match.group("int")
    value = float(answer.rstrip("%").replace(",", ""))
    if value == 0:
        return []
    spec = f"{',' if grouped else ''}.{decimals}f"
    out: list[str] = []
    for _ in range(JITTER_DRAWS):
        factor = 1 + order.uniform(JITTER_LOW, JITTER_HIGH) * order.choice((1, -1))
        text = f"{value * factor:{spec}}{match.group('unit')}"
        shown = float(text.rstrip("%").replace(",", ""))
        if JITTER_LOW <= abs(shown - value) / abs(value) <= JITTER_HIGH:
            out.append(text)
    return out


def _order(question: str, seed: int | str) -> random.Random:
    digest = hashlib.sha256(f"mine|{seed}|{question}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "little"))


async def _reseeded(
    blocks: Blocks, seed: int, answer: str, files: Mapping[str, bytes], limits: SandboxLimits
) -> tuple[list[str], list[CodeRun]]:
    found: list[str] = []
    runs: list[CodeRun] = []
    for k in range(1, MAX_RESEEDS + 1):
        run = await run_code(blocks.code, seed + SEED_STEP * k, files, limits)
        runs.append(run)
        if run.value is not None and run.value != answer and run.value not in found:
            found.append(run.value)
        if len(found) == 3:
            break
    return found, runs


def well_posed(question: str, options: list[str], answer: str) -> str | None:
    """Why the question is not well posed, or None when it is."""
    if not question.strip():
        return "empty question text"
    if len(options) != 4 or any(not o.strip() for o in options):
        return "fewer than four non-empty options"
    if len(set(options)) != 4:
        return "options are not distinct"
    if options.count(answer) != 1:
        return "not exactly one correct option"
    return None


async def verify(
    blocks: Blocks, seed: int, files: Mapping[str, bytes], limits: SandboxLimits
) -> Verified | Rejected:
    """Run, build distractors and options, check well-posedness (see the module doc)."""
    first = await run_code(blocks.code, seed, files, limits)
    if first.value is None:
        return Rejected("failed_code", _failure(first, limits), (first,))
    answer = first.value
    if len(answer) > MAX_VALUE_CHARS:
        reason = f"the answer line is longer than {MAX_VALUE_CHARS} characters"
        return Rejected("ill_posed", reason, (first,))
    distractors, reruns = await _reseeded(blocks, seed, answer, files, limits)
    runs = (first, *reruns)
    source: DistractorSource = "seeds"
    order = _order(blocks.question, seed)
    if len(distractors) < 3:
        # seeded by the question and its answer alone: a repeat of a question is a repeat
        # of its options too, so the whole-question hash finds it
        same = _order(" ".join(blocks.question.split()).casefold(), answer)
        extra = [v for v in jitter_values(answer, same) if v != answer and v not in distractors]
        source = "jitter" if not distractors else "seeds+jitter"
        distractors += list(dict.fromkeys(extra))[: 3 - len(distractors)]
    if len(distractors) < 3:
        reason = f"fewer than three distinct distractors ({len(distractors)} found)"
        return Rejected("ill_posed", reason, runs)
    options = [answer, *distractors[:3]]
    problem = well_posed(blocks.question, options, answer)
    if problem is not None:
        return Rejected("ill_posed", problem, runs)
    order.shuffle(options)
    return Verified(
        answer,
        dict(zip(LETTERS, options, strict=True)),
        LETTERS[options.index(answer)],
        source,
        runs,
    )
