"""An answer check written apart from the generator: it reads the dataset folder's own
Parquet files (bars, index, records) with pyarrow, never `load_dataset` or the panel, and
recomputes every question's answer from the facts the question names."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict

from tradebench.benchmarks.horizon.questions import LETTERS, Question


class Mismatch(BaseModel):
    """A question whose stored answer the check does not reproduce."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    id: str
    """The question."""
    stored: str
    """The letter the question file gives."""
    derived: str | None
    """The letter the check derives (None: no unique answer)."""
    why: str
    """What the check found."""


class RawData:
    """The dataset folder's tables, read directly and lazily."""

    def __init__(self, folder: Path) -> None:
        """Read from `folder` (a dataset folder)."""
        self.folder = Path(folder)
        self._bars: dict[str, pd.DataFrame] | None = None
        self._index: pd.DataFrame | None = None
        self._records: pd.DataFrame | None = None

    def bars(self, symbol: str) -> pd.DataFrame:
        """One symbol's date, close, adj_factor, suspended, in date order."""
        if self._bars is None:
            cols = ["date", "symbol", "close", "adj_factor", "suspended"]
            frame = pq.read_table(self.folder / "bars.parquet", columns=cols).to_pandas()
            frame["date"] = pd.to_datetime(frame["date"])
            self._bars = {
                str(s): g.sort_values("date").reset_index(drop=True)
                for s, g in frame.groupby("symbol")
            }
        return self._bars.get(symbol, pd.DataFrame(columns=["date", "close"]))

    def index(self) -> pd.Series:
        """Index close by date."""
        if self._index is None:
            frame = pq.read_table(self.folder / "index.parquet", columns=["date", "close"])
            index = frame.to_pandas()
            index["date"] = pd.to_datetime(index["date"])
            self._index = index  # assigned whole: a reader in another thread sees all or none
        return self._index.set_index("date")["close"]

    def records(self) -> pd.DataFrame:
        """News titles with their symbols and UTC publication day."""
        if self._records is None:
            cols = ["kind", "symbols", "ts_event", "title"]
            frame = pq.read_table(self.folder / "records.parquet", columns=cols).to_pandas()
            frame = frame[frame["kind"] == "news"].copy()
            frame["day"] = pd.to_datetime(frame["ts_event"], utc=True).dt.strftime("%Y-%m-%d")
            frame["symbol"] = frame["symbols"].map(lambda s: s[0] if len(s) == 1 else None)
            self._records = frame
        return self._records


def _best_week(q: Question, raw: RawData) -> str | None:
    monday, friday = pd.Timestamp(q.dates[0]), pd.Timestamp(q.dates[1])
    returns = []
    for sym in q.symbols:
        rows = raw.bars(sym)
        adj = rows["close"] * rows["adj_factor"]
        before = adj[rows["date"] < monday]
        week = rows[(rows["date"] >= monday) & (rows["date"] <= friday)]
        if before.empty or week.empty or week["suspended"].any():
            return None
        returns.append(adj[week.index[-1]] / before.iloc[-1] - 1.0)
    order = np.argsort(returns)[::-1]
    if returns[order[0]] - returns[order[1]] <= 0:
        return None
    return LETTERS[int(order[0])]


def _index_higher(q: Question, raw: RawData) -> str | None:
    close = raw.index()
    x, y = close.get(pd.Timestamp(q.dates[0])), close.get(pd.Timestamp(q.dates[1]))
    if x is None or y is None or x == y:
        return None
    return LETTERS[q.options.index("higher" if x > y else "not higher")]


def _close_of(q: Question, raw: RawData) -> str | None:
    bars = raw.bars(q.symbols[0])
    row = bars[bars["date"] == pd.Timestamp(q.dates[0])]
    if len(row) != 1:
        return None
    text = f"{float(row['close'].iloc[0]):.2f}"
    hits = [i for i, o in enumerate(q.options) if o == text]
    return LETTERS[hits[0]] if len(hits) == 1 else None


def _headline(q: Question, raw: RawData) -> str | None:
    news = raw.records()
    mine = news[news["symbol"] == q.symbols[0]]
    hits = []
    for i, title in enumerate(q.options):
        days = set(mine.loc[mine["title"].str.strip() == title, "day"])
        if not days:
            return None
        if q.dates[0] in days:
            hits.append(i)
    return LETTERS[hits[0]] if len(hits) == 1 else None


CHECKS = {
    "best_week": _best_week,
    "index_higher": _index_higher,
    "close_of": _close_of,
    "headline": _headline,
}


def derive(q: Question, raw: RawData) -> str | None:
    """The letter the raw data gives `q`, or None when it gives no unique answer."""
    return CHECKS[q.kind](q, raw)


def check_questions(questions: Sequence[Question], folder: Path) -> list[Mismatch]:
    """Every question whose stored answer differs from the raw data's (empty: all agree)."""
    raw = RawData(folder)
    out = []
    for q in questions:
        got = derive(q, raw)
        if got != q.answer:
            why = "no unique answer in the raw data" if got is None else "a different answer"
            out.append(Mismatch(id=q.id, stored=q.answer, derived=got, why=why))
    return out
