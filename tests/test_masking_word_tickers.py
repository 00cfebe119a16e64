"""Tickers that are English words, on the real US data: under the masks that hide stocks
they are replaced where the payload carries an identifier (the asset label, listings,
holdings, table rows, tool results) and never inside prose, in the single-stock and the
portfolio prompts as the benchmarks build them.

The oracle below is written by hand, independently of the masker's word list: every ticker
of the shared US file that reads as an English word (all one-letter tickers included).
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tradebench.benchmarks.portfolio.context import StepContext
from tradebench.benchmarks.portfolio.observation import StepInfo, user_message
from tradebench.benchmarks.portfolio.prompt_files import load_prompts as portfolio_prompts
from tradebench.benchmarks.portfolio.prompt_files import system_prompt as portfolio_system
from tradebench.benchmarks.portfolio.rules_text import constraints_line
from tradebench.benchmarks.portfolio.tools import research_tools
from tradebench.benchmarks.single_stock.config import Task
from tradebench.benchmarks.single_stock.episode import SingleStockEpisode, plan_episode
from tradebench.benchmarks.single_stock.observation import render_user
from tradebench.benchmarks.single_stock.prompt_files import load_prompts as single_prompts
from tradebench.benchmarks.single_stock.prompt_files import system_prompt as single_system
from tradebench.data import Dataset, load_dataset
from tradebench.data.importers.long import LongImport, import_long
from tradebench.market.broker import DayQuotes, ExecutionContext, execute_orders
from tradebench.market.ledger import Account
from tradebench.market.orders import Order, OrderRecord
from tradebench.market.rules import MarketRules
from tradebench.masking import Masker, build_masker, reads_as_word
from tradebench.view import MarketView

US_FILE = Path("us") / "sp500_daily_adj_2005_2025.parquet"
# fmt: off
WORD_TICKERS = frozenset({
    # one letter: always a word in prose
    "A", "C", "D", "F", "J", "K", "L", "O", "T", "V",
    # everyday words
    "ALL", "AMP", "APP", "ARE", "BALL", "CAT", "COIN", "COP", "COST", "DASH", "DAY", "DECK",
    "DELL", "DOC", "FAST", "FOX", "GILD", "HAS", "HOOD", "HUM", "ICE", "IT", "KEY", "KEYS",
    "LOW", "MAR", "MET", "NOW", "ON", "PEG", "PEP", "POOL", "SO", "SPY", "TAP", "TECH",
    "UPS", "WELL", "YUM",
    # dictionary words a reader meets less often
    "ALB", "AXON", "BRO", "COO", "DIS", "ED", "FANG", "HON", "MA", "MAS", "MU", "NEE", "TROW",
})
# fmt: on
"""Every ticker of the shared US file that is an English word (hand-written)."""
NON_WORDS = ("AAPL", "NVDA", "MSFT")
DAY = "2024-02-01"
TOKEN_RE = re.compile(r"(?<![A-Za-z0-9_$])[A-Z][A-Z0-9]*(?:-[A-Z])?(?![A-Za-z0-9_])")
ALIAS_RE = re.compile(r"asset_\d{4,}")


@pytest.fixture(scope="module")
def us_symbols(shared_data: Path) -> frozenset[str]:
    """Every symbol of the shared US file."""
    frame = pd.read_parquet(shared_data / US_FILE, columns=["symbol"])
    return frozenset(frame["symbol"].astype(str).unique())


@pytest.fixture(scope="module")
def words_ds(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    """The word tickers plus a few others, 2023-09 .. 2024-03, as bars (no index)."""
    out = tmp_path_factory.mktemp("us_words") / "us"
    import_long(
        LongImport(
            source=shared_data / US_FILE,
            out=out,
            market="us",
            symbols=tuple(sorted(WORD_TICKERS | set(NON_WORDS))),
            start="2023-09-01",
            end="2024-03-29",
        )
    )
    return load_dataset(out)


def _masker(ds: Dataset, level: str, day: Any = DAY) -> Masker:
    return build_masker(level, ds.panel.symbols, ds.panel.dates, day, 0, "words")


def _tickers_in(text: str, symbols: frozenset[str]) -> set[str]:
    """Real tickers standing as words in `text` (the test's own token rule)."""
    return {t for t in TOKEN_RE.findall(text) if t in symbols}


def test_the_oracle_is_every_word_ticker_of_the_data(us_symbols: frozenset[str]) -> None:
    assert us_symbols >= WORD_TICKERS  # the oracle names real tickers
    assert {s for s in us_symbols if len(s) == 1} <= WORD_TICKERS
    # the masker takes exactly these for words: all of them are covered below, and no
    # other ticker of the data (AAPL, NVDA, ...) is spared in free text
    assert {s for s in us_symbols if reads_as_word(s)} == WORD_TICKERS


# ------------------------------------------------------------------------- single stock
@pytest.mark.parametrize(
    ("level", "reference"), [("stock_blind", "bright"), ("blinded", "date_blind")]
)
def test_single_stock_prompts_keep_their_prose(
    words_ds: Dataset, level: str, reference: str
) -> None:
    """The masked prompts are the reference prompts with the alias as the asset label,
    character for character: the prose (`A position earns ...`) is untouched and the
    ticker is nowhere; the reference itself does name the ticker."""
    prompts = single_prompts()
    for symbol in sorted(WORD_TICKERS):
        task = Task(
            symbol=symbol, start=date(2024, 2, 1), end=date(2024, 2, 29), persona="adaptive"
        )
        plan = plan_episode(words_ds, task, 3)
        masked = SingleStockEpisode(words_ds, plan, _masker(words_ds, level, plan.days[0]), prompts)
        ref_masker = _masker(words_ds, reference, plan.days[0])
        ref = SingleStockEpisode(words_ds, plan, ref_masker, prompts, masked.price_mode)
        alias = masked.masker.alias_of[symbol]
        assert masked.asset == alias and ref.asset == symbol
        ctx, ref_ctx = masked.context(), ref.context()
        assert ctx.system == single_system(prompts, "adaptive", alias, "tool"), symbol
        assert ref_ctx.system == single_system(prompts, "adaptive", symbol, "tool")
        expected = render_user(ctx.observation, ref_masker, prompts, alias, "adaptive", ref.rebase)
        assert ctx.user == expected, symbol
        assert symbol not in _tickers_in(ctx.user, frozenset({symbol})), symbol
        assert symbol in _tickers_in(ref_ctx.user, frozenset({symbol})), symbol
    assert "A position earns" in ctx.system


# ---------------------------------------------------------------------------- portfolio
def _account(view: MarketView, rules: MarketRules) -> Account:
    """Ten shares of every other word ticker, bought at T-1's close."""
    close = view.last("close")
    account = Account(rules.initial_cash)
    for symbol in sorted(WORD_TICKERS)[::2]:
        account.record_buy(symbol, 10, float(close[view.column(symbol)]), 0.0, rules.t_plus_one)
    account.unlock()
    return account


def _previous(view: MarketView, account: Account, rules: MarketRules) -> tuple[OrderRecord, ...]:
    """Yesterday's execution through the broker: one share of every word ticker sold (a
    fill where held, a NO_POSITION rejection with its message elsewhere)."""
    close = view.window("close", 2)
    quotes = DayQuotes(
        open=close[1],
        high=view.last("high"),
        low=view.last("low"),
        close=close[1],
        prev_close=close[1],
        ref_close=close[0],
        suspended=view.last("suspended"),
        threshold=view.limit_threshold,
        column=view.column_map,
    )
    exe = ExecutionContext(rules=rules, nav_prev=rules.initial_cash, universe=frozenset())
    orders = [Order(stock_id=s, side="SELL", shares=1) for s in sorted(WORD_TICKERS)]
    copy = Account(account.cash)
    for symbol, holding in account.holdings.items():
        copy.record_buy(symbol, holding.shares, 0.0, 0.0, False)
    records = execute_orders(orders, copy, quotes, exe)
    assert {r.status for r in records} == {"filled", "rejected"}
    return tuple(records)


def _step(ds: Dataset) -> tuple[StepContext, tuple[OrderRecord, ...]]:
    view = MarketView(ds, DAY)
    rules = MarketRules.for_market("us")
    account = _account(view, rules)
    previous = _previous(view, account, rules)
    return StepContext(view, account.snapshot(view.last("close"), view.column_map), rules), previous


def _normal(text: str, real_of: dict[str, str] | None = None) -> str:
    """`text` with aliases read back (when `real_of`), listings and line blocks in a fixed
    order: what is left is the prose and every value, in place."""
    if real_of is not None:
        text = ALIAS_RE.sub(lambda m: real_of[m.group(0)], text)
    lines, block, out = text.split("\n"), [], []
    for line in [*lines, ""]:
        if line.startswith(("- ", "| ")):
            block.append(line)
            continue
        out += sorted(block)
        block = []
        if "Identifiers: " in line:
            head, items = line.split("Identifiers: ")
            line = head + "Identifiers: " + ", ".join(sorted(items.split(", ")))
        line = re.sub(
            r"Preview: (.*?)( \.\.\.)?$", lambda m: f"Preview: {m.group(1).count(',') + 1}", line
        )
        out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("mode", ["memory_only", "fixed_candidate", "open_research"])
@pytest.mark.parametrize(
    ("level", "reference"), [("stock_blind", "bright"), ("blinded", "date_blind")]
)
def test_portfolio_prompts_keep_their_prose(
    words_ds: Dataset, mode: str, level: str, reference: str
) -> None:
    """Read back, the masked user message is the reference one (prose and values in place);
    no real ticker stands anywhere in it; the system prompt is the reference's exactly."""
    ctx, previous = _step(words_ds)
    prompts, rules = portfolio_prompts(), ctx.rules
    symbols = frozenset(str(s) for s in words_ds.panel.symbols)
    info = StepInfo(2, 5, previous, 0.01, 0.002)
    masker, ref_masker = _masker(words_ds, level), _masker(words_ds, reference)
    masked = user_message(ctx, masker, prompts, mode, info, 100, currency="USD")
    ref = user_message(ctx, ref_masker, prompts, mode, info, 100, currency="USD")
    assert _normal(masked, masker.symbol_of) == _normal(ref)
    # the template and the identifier-free lines hold no ticker, so none may show at all
    assert not _tickers_in(
        prompts.user + constraints_line(rules, mode == "fixed_candidate"), symbols
    )
    assert _tickers_in(masked, symbols) == set(), mode
    assert _tickers_in(ref, symbols) >= WORD_TICKERS  # yesterday's execution names them all
    system = portfolio_system(prompts, mode, rules, "USD")
    assert masker.mask_text(system) == ref_masker.mask_text(system) == system


def _same_but_ids(real: Any, masked: Any, alias_of: dict[str, str], path: str = "") -> None:
    """`masked` is `real` with every string that is a symbol (value or key) aliased."""
    if isinstance(real, dict):
        assert isinstance(masked, dict), path
        assert list(masked) == [alias_of.get(k, k) for k in real], path
        for (k, v), w in zip(real.items(), masked.values(), strict=True):
            _same_but_ids(v, w, alias_of, f"{path}/{k}")
    elif isinstance(real, list):
        assert isinstance(masked, list) and len(masked) == len(real), path
        for i, (v, w) in enumerate(zip(real, masked, strict=True)):
            _same_but_ids(v, w, alias_of, f"{path}/{i}")
    elif isinstance(real, str):
        assert masked == alias_of.get(real, real), (path, real, masked)
    else:
        assert masked == real, path


def _tool_results(ctx: StepContext, masker: Masker) -> dict[str, Any]:
    tools = {t.name: t for t in research_tools(ctx, masker)}
    ids = [masker.symbol_label(s) for s in sorted(WORD_TICKERS)]
    calls = {
        "screen_candidates": {"feature": "ret_20d", "top_k": 30},
        "compare_candidates": {"stock_ids": ids[:10]},
        "get_stock_snapshot": {"stock_id": masker.symbol_label("T")},
        "get_portfolio_state": {},
        "risk_check": {"orders": [{"stock_id": i, "side": "SELL", "shares": 1} for i in ids]},
    }
    return {name: asyncio.run(tools[name].run(args)) for name, args in calls.items()}


def test_portfolio_tool_results_alias_every_identifier(words_ds: Dataset) -> None:
    ctx, _ = _step(words_ds)
    masker = _masker(words_ds, "stock_blind")
    symbols = frozenset(str(s) for s in words_ds.panel.symbols)
    real, masked = _tool_results(ctx, _masker(words_ds, "bright")), _tool_results(ctx, masker)
    _same_but_ids(real, masked, masker.alias_of)
    text = json.dumps(masked)
    assert _tickers_in(text, symbols) == set()
    assert {r["status"] for r in masked["risk_check"]["predicted"]} == {"filled", "rejected"}
    blinded = _masker(words_ds, "blinded")
    assert _tickers_in(json.dumps(_tool_results(ctx, blinded)), symbols) == set()
    assert np.isfinite(masked["compare_candidates"]["rows"][0]["ret_20d"])
