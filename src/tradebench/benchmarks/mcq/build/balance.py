"""Balanced answer letters: move each key to a seeded target letter, then relabel.

Without this the key's letter follows the option layout (ascending numbers, chronological
dates), so a set can lean on one letter and "always answer D" beats chance. The targets are
consecutive seeded permutations of A-D, one block of four after another, so any n questions
(and any prefix of them, e.g. `mcq eval --limit`) get each letter floor(n/4) or ceil(n/4)
times. Within a question the key moves to its target and the three distractors fill the
other letters in a seeded order: every option text, and which text is correct, is kept.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tradebench.benchmarks.mcq.build.options import LETTERS
from tradebench.benchmarks.mcq.records import MCQRecord, question_id


def letter_targets(n: int, rng: np.random.Generator) -> list[str]:
    """n letters in blocks of four, each block a seeded permutation of A-D (last one cut)."""
    blocks = -(-n // 4)
    return [LETTERS[int(i)] for _ in range(blocks) for i in rng.permutation(4)][:n]


def relabel(record: MCQRecord, target: str, rng: np.random.Generator) -> MCQRecord:
    """The record with its key under `target` and its distractors in a seeded order."""
    key = record.options[record.answer]
    others = [record.options[k] for k in LETTERS if k != record.answer]
    others = [others[int(i)] for i in rng.permutation(len(others))]
    at = LETTERS.index(target)
    texts = [*others[:at], key, *others[at:]]
    options = dict(zip(LETTERS, texts, strict=True))
    return record.model_copy(
        update={
            "options": options,
            "answer": target,
            "id": question_id(record.question, options),
        }
    )


def balance_letters(records: Sequence[MCQRecord], rng: np.random.Generator) -> list[MCQRecord]:
    """Relabel every record so the answer letters are as even as the set's size allows."""
    targets = letter_targets(len(records), rng)
    return [relabel(r, t, rng) for r, t in zip(records, targets, strict=True)]
