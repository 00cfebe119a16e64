"""Real data for the horizon tests, and scripted models that answer through the loopback
server: one that remembers the facts up to a date, one that guesses."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from tests.benchmarks.mandate.conftest import mandate_dataset  # noqa: F401
from tradebench.benchmarks.horizon.check import RawData, derive
from tradebench.benchmarks.horizon.options import HorizonOptions
from tradebench.benchmarks.horizon.questions import Question, build_questions
from tradebench.benchmarks.horizon.render import identities, prompt
from tradebench.data import load_dataset
from tradebench.llm.loopback import RecordedRequest, Reply


def guess(text: str) -> str:
    """A seeded uniform guess among the prompt's options (the text is the seed)."""
    h = int(hashlib.sha256(text.encode()).hexdigest(), 16)
    return "ABCD"[h % (2 if "\nB. not higher\n" in text else 4)]


class Memory:
    """Every question of a dataset span, found by its bright or blinded prompt; answers
    come from the raw files through the independent check, never from the generator."""

    def __init__(self, dataset: Path, start: str, end: str, options: HorizonOptions) -> None:
        """Build the span's questions and index their prompts."""
        ds = load_dataset(dataset)
        questions = build_questions(
            ds, start, end, options.questions_per_month, options.question_seed, options.kinds
        )
        self.raw = RawData(dataset)
        self.by_prompt: dict[str, tuple[Question, str]] = {}
        who = identities(ds)
        for q in questions:
            for level in ("bright", "blinded"):
                self.by_prompt[prompt(q, level, ds.panel.dates, who)] = (q, level)

    def responder(self, rules: dict[str, Callable[[Question, str], bool]]) -> Callable:
        """A loopback responder: the request's model name picks a rule `(question, level)
        -> remembers?`; a remembered question is answered from the raw data, else guessed."""

        def respond(request: RecordedRequest) -> Reply:
            body = request.body or {}
            text = body["messages"][-1]["content"]
            hit = self.by_prompt.get(text)
            if hit is not None and rules[body["model"]](*hit):
                return Reply.say(derive(hit[0], self.raw) or "A")
            return Reply.say(guess(text))

        return respond


def remembers_until(day: str) -> Callable[[Question, str], bool]:
    """Knows every bright fact dated on or before `day`, nothing blinded."""
    return lambda q, level: level == "bright" and pd.Timestamp(q.day) <= pd.Timestamp(day)


def remembers_blinded(q: Question, level: str) -> bool:
    """Knows only the blinded questions (a prompt that leaks its answer)."""
    return level == "blinded"


def never(q: Question, level: str) -> bool:
    """Knows nothing."""
    return False


@pytest.fixture(scope="session")
def us_news_dir(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight S&P 500 names, SPY as the index, 2024-09 .. 2025-10, with COIN/NFLX news."""
    from tradebench.data.importers.long import LongImport, import_long
    from tradebench.data.importers.records import RecordsImport, import_records

    bars = shared_data / "us" / "sp500_daily_adj_2005_2025.parquet"
    text = shared_data / "us" / "text"
    out = tmp_path_factory.mktemp("horizon") / "us"
    import_long(
        LongImport(
            source=bars,
            out=out,
            market="us",
            index_symbol="SPY",
            membership_file=shared_data / "universe" / "sp500_membership.csv",
            sectors_file=shared_data / "universe" / "sp500_current_sectors.csv",
            symbols=("AAPL", "MSFT", "NVDA", "TSLA", "COIN", "NFLX", "AMZN", "JPM"),
            start="2024-09-01",
        )
    )
    news = (text / "alpaca_news_COIN.parquet", text / "alpaca_news_NFLX.parquet")
    import_records(RecordsImport(dataset=out, news=news))
    return out
