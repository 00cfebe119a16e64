"""Dated market facts as multiple-choice questions, generated per calendar month from a dataset.

Four kinds, each answer fixed by the month's data and absent from the prompt:

- `best_week`: which of four named stocks returned most (adjusted close to adjusted close)
  from the last close before a named calendar week's Monday to the last close on or before
  its Friday; the best beats the second by at least `MIN_GAP`.
- `index_higher`: did the index close higher on date X than on date Y (two options). Pairs
  are drawn so that half the answers are "higher" and, within each answer, half the
  questions name the later date first: the order of the dates says nothing.
- `close_of`: which of four closes (the dataset's traded close, 2 decimals) was a named
  stock's on a named date; the three distractors are the same stock's closes on other days
  within `CLOSE_SPREAD` trading days, each at least 1% from every other option.
- `headline`: which of four headlines (news records naming exactly one symbol) was
  published on a named date (UTC); distractors are the same stock's headlines from other
  days within 31 days. Headlines naming a date, a month, a quarter or a year are skipped.

Letters are balanced within each kind of a month and every draw comes from a generator
seeded by (seed, month, kind): the same dataset and seed give the same questions.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

from tradebench.data.dataset import Dataset
from tradebench.masking import DATE_RE, TEXT_DATE_RE

Kind = Literal["best_week", "index_higher", "close_of", "headline"]
KINDS: tuple[Kind, ...] = ("best_week", "index_higher", "close_of", "headline")
LETTERS = "ABCD"
MIN_GAP = 0.002
"""The best week's return beats the second best by at least this (0.2 points)."""
CLOSE_SPREAD = 120
"""Distractor closes come from days at most this many trading days away."""
MIN_OPTION_GAP = 0.01
"""Every two closes offered differ by at least 1%."""
INDEX_MIN_MOVE = 0.001
"""Index pairs whose closes differ by less than 0.1% are not asked."""
HIGHER, NOT_HIGHER = "higher", "not higher"
ROUNDS = 6
"""Rounds of a month's draw: the first gives each kind its share, later ones refill."""
_DATED_TEXT = re.compile(
    r"\b(?:19|20)\d{2}\b|\bQ[1-4]\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)"
    r"[a-z]*\b|\b(?:today|yesterday|tomorrow|monday|tuesday|wednesday|thursday|friday)\b",
    re.IGNORECASE,
)


class Question(BaseModel):
    """One dated market fact asked as a multiple-choice question."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    id: str
    """`YYYY-MM-kind-NNN`, unique within a question set."""
    month: str
    """Calendar month the fact belongs to (`YYYY-MM`)."""
    kind: Kind
    """Which template (see the module docstring)."""
    day: str
    """Last date the answer depends on (ISO): what a model must have seen to know it."""
    symbols: tuple[str, ...]
    """Stocks named: the four options (`best_week`) or the one stock asked about."""
    names: tuple[str, ...]
    """Company names aligned with `symbols` ('' when the dataset has none)."""
    dates: tuple[str, ...]
    """Dates named: (Monday, Friday), (X, Y), or (the date,)."""
    options: tuple[str, ...]
    """Option payloads in letter order: symbols, higher/not higher, closes, headlines."""
    answer: str
    """Letter of the correct option."""

    @property
    def chance(self) -> float:
        """Probability of a uniform guess being right."""
        return 1.0 / len(self.options)


@dataclass(frozen=True)
class MonthData:
    """The arrays a month's generators draw from (an offline builder, not an agent)."""

    dataset: Dataset
    month: pd.Period
    rows: np.ndarray
    """Panel rows of the month's trading days."""
    names: dict[str, str]
    """Company name per symbol."""
    headlines: pd.DataFrame
    """`headline_table(dataset)`, computed once per question set."""
    facts: set[tuple[str, tuple[str, ...], tuple[str, ...]]] = field(default_factory=set)
    """Facts the month already asks (kind, stocks, dates)."""

    def claim(self, q: Question) -> bool:
        """Record `q`'s fact; False when the month already asks it (one fact, one question)."""
        fact = (q.kind, tuple(sorted(q.symbols)), tuple(sorted(q.dates)))
        if fact in self.facts:
            return False
        self.facts.add(fact)
        return True


def balanced_letters(n: int, k: int, rng: np.random.Generator, start: int = 0) -> list[str]:
    """`n` answer letters among the first `k`, shuffled: the cycle A, B, .. continued from
    position `start` (what earlier draws of the same month and kind used), so the letters
    of a month's kind stay as equal in count as their number allows."""
    letters = [LETTERS[(start + i) % k] for i in range(n)]
    return [letters[i] for i in rng.permutation(n)]


def _place(correct: str, others: list[str], letter: str) -> tuple[str, ...]:
    at = LETTERS.index(letter)
    return tuple([*others[:at], correct, *others[at:]])


def _ok(panel, t: int, j: int) -> bool:
    return bool(panel.listed[t, j] and not panel.suspended[t, j])


def best_week(md: MonthData, n: int, rng: np.random.Generator, start: int = 0) -> list[Question]:
    """`n` which-stock-returned-most questions (see the module docstring)."""
    panel = md.dataset.panel
    calendar = pd.DatetimeIndex(panel.dates)
    days = calendar[md.rows]
    weeks = []
    for monday in sorted({(d - pd.Timedelta(days=d.weekday())) for d in days}):
        if monday.to_period("M") != md.month:
            continue
        friday = monday + pd.Timedelta(days=4)  # the week may end in the next month
        rows = np.nonzero((calendar >= monday) & (calendar <= friday))[0]
        if len(rows) >= 3 and rows[0] > 0:
            weeks.append((monday, friday, rows))
    out: list[Question] = []
    if not weeks:
        return out
    close = panel.adjusted["adj_close"]
    for letter in balanced_letters(n, 4, rng, start):
        for _ in range(50):
            monday, friday, rows = weeks[rng.integers(len(weeks))]
            t0, t1 = rows[0] - 1, rows[-1]
            ok = panel.listed[t0] & np.all(panel.listed[rows] & ~panel.suspended[rows], axis=0)
            ok &= np.isfinite(close[t0]) & np.isfinite(close[t1])
            cols = np.nonzero(ok)[0]
            if len(cols) < 4:
                break
            pick = rng.choice(cols, 4, replace=False)
            ret = close[t1, pick] / close[t0, pick] - 1.0
            order = np.argsort(-ret)
            if ret[order[0]] - ret[order[1]] < MIN_GAP:
                continue
            syms = [str(panel.symbols[j]) for j in pick[order]]
            options = _place(syms[0], list(rng.permutation(syms[1:])), letter)
            q = Question(
                id="",
                month=str(md.month),
                kind="best_week",
                day=str(panel.dates[t1]),
                symbols=options,
                names=tuple(md.names.get(s, "") for s in options),
                dates=(str(monday.date()), str(friday.date())),
                options=options,
                answer=letter,
            )
            if md.claim(q):
                out.append(q)
                break
    return out


def index_higher(md: MonthData, n: int, rng: np.random.Generator, start: int = 0) -> list[Question]:
    """Up to `n` index comparisons, answers and date order balanced by construction
    (module docstring; `start` is not needed)."""
    panel = md.dataset.panel
    closes = panel.index["close"][md.rows]
    rows = md.rows[np.isfinite(closes)]
    c = panel.index["close"][rows]
    i, j = np.triu_indices(len(rows), k=1)  # i earlier than j
    move = c[j] / c[i] - 1.0
    keep = np.abs(move) >= INDEX_MIN_MOVE
    i, j, up = i[keep], j[keep], move[keep] > 0
    ups, downs = np.nonzero(up)[0], np.nonzero(~up)[0]
    half = min(n // 2, len(ups), len(downs))
    out: list[Question] = []
    picks = [*rng.choice(ups, half, replace=False), *rng.choice(downs, half, replace=False)]
    later_first = balanced_letters(half, 2, rng) + balanced_letters(half, 2, rng)
    for p, first in zip(picks, later_first, strict=True):
        early, late = str(panel.dates[rows[i[p]]]), str(panel.dates[rows[j[p]]])
        x, y = (late, early) if first == "A" else (early, late)
        higher = bool(up[p]) == (first == "A")
        out.append(
            Question(
                id="",
                month=str(md.month),
                kind="index_higher",
                day=late,
                symbols=(str(md.dataset.manifest.index_symbol or "index"),),
                names=("",),
                dates=(x, y),
                options=(HIGHER, NOT_HIGHER),
                answer="A" if higher else "B",
            )
        )
    return [out[k] for k in rng.permutation(len(out))]


def close_of(md: MonthData, n: int, rng: np.random.Generator, start: int = 0) -> list[Question]:
    """`n` which-close-was-it questions (see the module docstring)."""
    panel = md.dataset.panel
    close = panel.fields["close"]
    live = panel.listed & ~panel.suspended & np.isfinite(close)
    cells = np.argwhere(live[md.rows])
    out: list[Question] = []
    if not len(cells):
        return out
    for letter in balanced_letters(n, 4, rng, start):
        for _ in range(50):
            r, j = cells[rng.integers(len(cells))]
            t = int(md.rows[r])
            lo, hi = max(0, t - CLOSE_SPREAD), min(len(panel.dates), t + CLOSE_SPREAD + 1)
            near = [u for u in rng.permutation(np.arange(lo, hi)) if u != t and live[u, j]]
            chosen = [round(float(close[t, j]), 2)]
            for u in near:
                value = round(float(close[u, j]), 2)
                if all(abs(value / c - 1.0) >= MIN_OPTION_GAP for c in chosen):
                    chosen.append(value)
                if len(chosen) == 4:
                    break
            if len(chosen) < 4:
                continue
            texts = [f"{v:.2f}" for v in chosen]
            sym = str(panel.symbols[j])
            q = Question(
                id="",
                month=str(md.month),
                kind="close_of",
                day=str(panel.dates[t]),
                symbols=(sym,),
                names=(md.names.get(sym, ""),),
                dates=(str(panel.dates[t]),),
                options=_place(texts[0], texts[1:], letter),
                answer=letter,
            )
            if md.claim(q):
                out.append(q)
                break
    return out


def headline_table(dataset: Dataset) -> pd.DataFrame:
    """News headlines naming exactly one symbol and no date: symbol, day, title."""
    rec = dataset.records
    if rec is None or rec.empty:
        return pd.DataFrame(columns=["symbol", "day", "title"])
    news = rec[(rec["kind"] == "news") & rec["ts_event"].notna()]
    news = news[news["symbols"].map(len) == 1]
    titles = news["title"].fillna("").str.strip()
    dated = titles.map(
        lambda s: bool(_DATED_TEXT.search(s) or DATE_RE.search(s) or TEXT_DATE_RE.search(s))
    )
    frame = pd.DataFrame(
        {
            "symbol": news["symbols"].map(lambda s: s[0]),
            "day": news["ts_event"].dt.tz_convert("UTC").dt.tz_localize(None).dt.normalize(),
            "title": titles,
        }
    )[(titles.str.len() >= 20) & ~dated]
    # a title published on several days says nothing about one day
    once = frame.groupby(["symbol", "title"])["day"].transform("nunique") == 1
    return frame[once].drop_duplicates(["symbol", "title"]).reset_index(drop=True)


def headline(md: MonthData, n: int, rng: np.random.Generator, start: int = 0) -> list[Question]:
    """Up to `n` which-headline-appeared-that-day questions (see the module docstring)."""
    news = md.headlines
    if news.empty:
        return []
    in_month = news[news["day"].dt.to_period("M") == md.month]
    out: list[Question] = []
    if in_month.empty:
        return out
    for letter in balanced_letters(n, 4, rng, start):
        for _ in range(50):
            row = in_month.iloc[rng.integers(len(in_month))]
            same = news[(news["symbol"] == row["symbol"]) & (news["day"] != row["day"])]
            same = same[(same["day"] - row["day"]).abs() <= pd.Timedelta(days=31)]
            if same["day"].nunique() < 3:
                continue
            by_day = same.groupby("day")["title"].apply(list)
            days = rng.choice(len(by_day), 3, replace=False)
            others = [str(rng.choice(by_day.iloc[d])) for d in days]
            sym, day = str(row["symbol"]), str(row["day"].date())
            q = Question(
                id="",
                month=str(md.month),
                kind="headline",
                day=day,
                symbols=(sym,),
                names=(md.names.get(sym, ""),),
                dates=(day,),
                options=_place(str(row["title"]), others, letter),
                answer=letter,
            )
            if md.claim(q):
                out.append(q)
                break
    return out


GENERATORS: dict[Kind, Callable[[MonthData, int, np.random.Generator, int], list[Question]]] = {
    "best_week": best_week,
    "index_higher": index_higher,
    "close_of": close_of,
    "headline": headline,
}


def month_questions(
    md: MonthData, per_month: int, kinds: tuple[Kind, ...], seed: int
) -> list[Question]:
    """The month's `per_month` questions: an equal share per kind; what a kind cannot make
    (no records that month, a one-way index) is shared among the kinds that made their
    whole share, for up to `ROUNDS` rounds. A fact drawn twice (same kind, stocks and dates)
    is kept once. Ids are numbered per kind. The answer letters continue one cycle from
    month to month, so they stay balanced over months even at one question a month."""
    made: dict[Kind, list[Question]] = {k: [] for k in kinds}
    wanted = {
        k: per_month // len(kinds) + (i < per_month % len(kinds)) for i, k in enumerate(kinds)
    }
    active = list(kinds)
    ordinal = md.month.year * 12 + md.month.month  # the letter cycle runs on across months
    for round_ in range(ROUNDS):
        for kind in active:
            need = wanted[kind] - len(made[kind])
            if need > 0:
                rng = np.random.default_rng(
                    [seed, md.month.year, md.month.month, KINDS.index(kind), round_]
                )
                made[kind] += GENERATORS[kind](md, need, rng, ordinal + len(made[kind]))
        short = per_month - sum(len(v) for v in made.values())
        # index pairs are drawn once a month: a refill would repeat pairs and tilt answers
        active = [k for k in active if len(made[k]) >= wanted[k] and k != "index_higher"]
        if short <= 0 or not active:
            break
        for i, kind in enumerate(active):
            wanted[kind] += short // len(active) + (i < short % len(active))
    return [
        q.model_copy(update={"id": f"{q.month}-{kind}-{n:03d}"})
        for kind in kinds
        for n, q in enumerate(made[kind])
    ]


def build_questions(
    dataset: Dataset,
    start: str,
    end: str,
    per_month: int,
    seed: int,
    kinds: tuple[Kind, ...] = KINDS,
) -> list[Question]:
    """Every question of the calendar months from `start` to `end` (inclusive) that the
    dataset's trading calendar covers, month by month in calendar order."""
    panel = dataset.panel
    months = pd.DatetimeIndex(panel.dates).to_period("M")
    names = dict(
        zip(dataset.instruments["symbol"], dataset.instruments["name"].fillna(""), strict=True)
    )
    news = headline_table(dataset)
    out: list[Question] = []
    for month in pd.period_range(pd.Period(start, "M"), pd.Period(end, "M"), freq="M"):
        rows = np.nonzero(months == month)[0]
        if len(rows):
            md = MonthData(dataset, month, rows, names, news)
            out += month_questions(md, per_month, kinds, seed)
    return out
