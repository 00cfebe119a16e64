"""Questions from the real market data: every kind made, answers reproduced by the
independent check, letters balanced, the same set for the same seed, and blinded prompts
that show no real ticker, name, date, month or price level."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from tests.leak_scan import find_leaks
from tradebench.benchmarks.horizon.check import check_questions
from tradebench.benchmarks.horizon.questions import Question, build_questions
from tradebench.benchmarks.horizon.render import identities, prompt
from tradebench.cli import app
from tradebench.data import load_dataset


@pytest.fixture(scope="module")
def cn_questions(cn_dataset_dir: Path) -> list[Question]:
    return build_questions(load_dataset(cn_dataset_dir), "2023-01", "2024-12", 72, 0)


@pytest.fixture(scope="module")
def us_questions(us_news_dir: Path) -> list[Question]:
    return build_questions(load_dataset(us_news_dir), "2024-10", "2025-09", 72, 0)


def test_every_month_has_its_questions_and_the_check_agrees(
    cn_questions: list[Question],
    us_questions: list[Question],
    cn_dataset_dir: Path,
    us_news_dir: Path,
) -> None:
    for questions, months in ((cn_questions, 24), (us_questions, 12)):
        per_month = Counter(q.month for q in questions)
        assert len(per_month) == months and set(per_month.values()) == {72}
        assert len({q.id for q in questions}) == len(questions)
    assert {q.kind for q in cn_questions} == {"best_week", "index_higher", "close_of"}
    kinds = Counter(q.kind for q in us_questions)
    assert kinds["headline"] >= 100 and set(kinds) == {
        "best_week",
        "index_higher",
        "close_of",
        "headline",
    }
    assert check_questions(cn_questions, cn_dataset_dir) == []
    assert check_questions(us_questions, us_news_dir) == []


def test_the_check_catches_a_wrong_answer(us_questions: list[Question], us_news_dir: Path) -> None:
    picked = [
        next(q for q in us_questions if q.kind == k)
        for k in ("best_week", "index_higher", "close_of", "headline")
    ]
    wrong = [q.model_copy(update={"answer": "B" if q.answer == "A" else "A"}) for q in picked]
    assert [m.id for m in check_questions(wrong, us_news_dir)] == [q.id for q in picked]


def test_letters_are_balanced_within_each_month_and_kind(cn_questions, us_questions) -> None:
    for q in [*cn_questions, *us_questions]:
        assert q.answer in "ABCD"[: len(q.options)] and len(set(q.options)) == len(q.options)
    frame = pd.DataFrame([q.model_dump() for q in [*cn_questions, *us_questions]])
    for _, group in frame.groupby(["month", "kind"]):
        k = len(group["options"].iloc[0])
        counts = group["answer"].value_counts().reindex(list("ABCD"[:k]), fill_value=0)
        assert counts.max() - counts.min() <= 2, counts


def test_index_answers_say_nothing_about_the_order_of_the_dates(cn_questions) -> None:
    index = [q for q in cn_questions if q.kind == "index_higher"]
    later_first = Counter((q.dates[0] > q.dates[1], q.answer) for q in index)
    assert len(index) > 400
    assert later_first[(True, "A")] == later_first[(True, "B")]
    assert later_first[(False, "A")] == later_first[(False, "B")]


def test_same_seed_same_questions_other_seed_other_questions(cn_dataset_dir: Path) -> None:
    ds = load_dataset(cn_dataset_dir)
    a = build_questions(ds, "2023-03", "2023-04", 12, 7)
    assert a == build_questions(load_dataset(cn_dataset_dir), "2023-03", "2023-04", 12, 7)
    assert a != build_questions(ds, "2023-03", "2023-04", 12, 8)


def test_bright_names_real_identities_and_blinded_hides_them(
    cn_dataset_dir: Path, us_news_dir: Path, cn_questions, us_questions
) -> None:
    for folder, questions in ((cn_dataset_dir, cn_questions), (us_news_dir, us_questions)):
        ds = load_dataset(folder)
        symbols = list(ds.instruments["symbol"])
        names = [n for n in ds.instruments["name"].dropna() if len(n) >= 4]
        rng = np.random.default_rng(0)
        for q in [questions[i] for i in rng.choice(len(questions), 120, replace=False)]:
            bright = prompt(q, "bright", ds.panel.dates)
            assert q.symbols[0] in bright and q.dates[0] in bright
            blinded = prompt(q, "blinded", ds.panel.dates, identities(ds))
            assert find_leaks(blinded, symbols, ds.panel.dates) == [], (q.id, blinded)
            assert not [n for n in names if n.lower() in blinded.lower()], (q.id, blinded)
            month = pd.Period(q.month, "M")
            assert month.strftime("%B") not in blinded and str(month.year) not in blinded
            if q.kind == "close_of":  # the level is rescaled, the ratios kept
                shown = [float(line[3:]) for line in blinded.splitlines() if line[1:3] == ". "]
                real = [float(o) for o in q.options]
                assert not set(shown) & set(real)
                np.testing.assert_allclose(
                    np.array(shown) / shown[0], np.array(real) / real[0], rtol=1e-3
                )


def test_cli_writes_checked_questions(cn_dataset_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "q.jsonl"
    args = ["horizon", "questions", str(cn_dataset_dir), "-o", str(out)]
    result = CliRunner().invoke(
        app, [*args, "--start", "2023-05", "--end", "2023-06", "--per-month", "16"]
    )
    assert result.exit_code == 0, result.output
    assert "every answer reproduced from the raw files" in result.output
    assert len(out.read_text().splitlines()) == 32
    bad = CliRunner().invoke(
        app,
        [
            "horizon",
            "questions",
            str(cn_dataset_dir),
            "-o",
            str(out),
            "--start",
            "2030-01",
            "--end",
            "2030-02",
        ],
    )
    assert bad.exit_code == 1 and bad.output.startswith("error: ") and "Traceback" not in bad.output


def test_letters_stay_balanced_at_one_question_a_month(cn_dataset_dir: Path) -> None:
    ds = load_dataset(cn_dataset_dir)
    for kinds in (("best_week",), ("close_of", "best_week")):
        questions = build_questions(ds, "2023-01", "2024-12", len(kinds), 3, kinds)
        for kind in kinds:
            letters = Counter(q.answer for q in questions if q.kind == kind)
            assert letters == {"A": 6, "B": 6, "C": 6, "D": 6}, (kind, letters)
