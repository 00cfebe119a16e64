"""The user message of one step, shared by the three modes (masked at the end)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tradebench.benchmarks.portfolio.context import StepContext
from tradebench.benchmarks.portfolio.prompt_files import PromptSet
from tradebench.benchmarks.portfolio.rules_text import constraints_line
from tradebench.benchmarks.portfolio.shown import UNITS_NOTE, PriceScale
from tradebench.features.technical import FEATURES, TRADING_DAYS
from tradebench.market.orders import OrderRecord
from tradebench.masking import Masker

FACTORS = (
    ("ret_20d", False),
    ("ret_5d", True),
    ("dist_52w_high", False),
    ("vol_20d", True),
    ("amount_20d", False),
)


@dataclass(frozen=True)
class StepInfo:
    """Where the episode stands: step number, last outcome, performance so far."""

    index: int
    total: int
    previous: tuple[OrderRecord, ...]
    cum_return: float
    bench_return: float


def candidate_pool(ctx: StepContext, k: int, drawn_from: np.ndarray | None = None) -> np.ndarray:
    """Columns: union of the top-k names by several factors among `drawn_from` (default the
    universe; the limit filter passes the BUY candidates), plus holdings."""
    picks: set[int] = set()
    source = ctx.universe if drawn_from is None else drawn_from
    cols = source[~ctx.view.last("suspended")[source]]
    for name, ascending in FACTORS:
        values = ctx.features[name][cols]
        ok = np.isfinite(values)
        ranked = cols[ok][np.argsort(values[ok] if ascending else -values[ok], kind="stable")]
        picks.update(int(c) for c in ranked[:k])
    picks.update(ctx.view.column(s) for s in ctx.held())
    return np.array(sorted(c for c in picks if c >= 0), dtype=np.int64)


def _pct(x: float) -> str:
    return f"{x * 100:+.2f}%" if np.isfinite(x) else "n/a"


def observation_window(ctx: StepContext, masker: Masker) -> tuple[str, str, int]:
    """(first day, last day, trading days) of the data the candidate table is computed from:
    the longest feature lookback, ending at the previous close."""
    calendar = ctx.view.calendar
    days = min(TRADING_DAYS, len(calendar))
    return masker.day_label(calendar[-days]), masker.day_label(calendar[-1]), days


def feature_table(
    ctx: StepContext, masker: Masker, k: int, drawn_from: np.ndarray | None = None
) -> str:
    """Markdown table of the candidate pool, rows sorted by the identifier shown, headed by
    the pool's size, how it was drawn and the observation window."""
    cols = candidate_pool(ctx, k, drawn_from)
    close = ctx.view.last("close")
    rows = []
    for c in cols:
        f = {name: ctx.features[name][c] for name in FEATURES}
        price = ctx.scale.price(int(c), float(close[c]))
        rows.append(
            (
                masker.symbol_label(str(ctx.view.symbols[c])),
                str(ctx.view.boards[c]),
                "n/a" if price is None else f"{price:.2f}",
                _pct(f["ret_5d"]),
                _pct(f["ret_20d"]),
                _pct(f["ret_60d"]),
                _pct(f["vol_20d"]),
                f"{f['amount_20d'] / 1e6:,.1f}" if np.isfinite(f["amount_20d"]) else "n/a",
                _pct(f["dist_52w_high"]),
                f"{f['rsi_14']:.1f}" if np.isfinite(f["rsi_14"]) else "n/a",
            )
        )
    rows.sort()
    head = (
        "| id | board | close | ret_5d | ret_20d | ret_60d | vol_20d | amount_20d (M) "
        "| dist_52w_high | rsi_14 |\n|" + "---|" * 10
    )
    body = "\n".join("| " + " | ".join(r) + " |" for r in rows)
    first, last, days = observation_window(ctx, masker)
    intro = (
        f"Candidate pool: {len(rows)} stocks (the top {k} of the tradable universe by each of "
        f"{len(FACTORS)} factors, plus your holdings); every value is computed from the "
        f"observation window {first} .. {last} ({days} trading days, ending at the previous "
        "close). You may buy only these stocks."
    )
    return f"\n{intro}\n{head}\n{body}\n"


def _quantity(x: float | int | None) -> str:
    """A quantity as written: whole shares with separators, rebased units with 2 decimals."""
    if x is None:
        return "n/a"
    return f"{x:,}" if isinstance(x, int) else f"{x:,.2f}"


def _money(x: float | None) -> str:
    """An amount of money as written (`PriceScale.money`), with separators and cents."""
    return "n/a" if x is None else f"{x:,.2f}"


def _first(pair: tuple[str, object]) -> str:
    return pair[0]


def account_text(ctx: StepContext, masker: Masker, currency: str, prices: bool) -> str:
    """Cash (also as a share of NAV), NAV and each holding; the holding's close only when
    the mode shows prices (memory-only shows none). Under rebased prices holdings are in
    rebased units and a line says so (`shown.UNITS_NOTE`)."""
    a, scale = ctx.account, ctx.scale
    share = (scale.weight(a.cash / a.nav) or 0.0) * 100 if a.nav > 0 else 0.0
    lines = [
        f"cash {currency} {_money(scale.money(a.cash))} ({share:.2f}% of NAV); "
        f"NAV {currency} {_money(scale.money(a.nav))}; {len(a.positions)} holdings"
    ]
    if scale.hides_levels:
        lines.append(f"({UNITS_NOTE})")
    labelled = sorted(((masker.symbol_label(p.symbol), p) for p in ctx.shown_positions), key=_first)
    for label, p in labelled:
        line = (
            f"- {label}: {_quantity(p.shares)} shares (sellable {_quantity(p.sellable)}), "
            f"weight {(p.weight or 0.0) * 100:.2f}%"
        )
        if prices:
            line += f", close {'n/a' if p.close is None else f'{p.close:.2f}'}"
        lines.append(line)
    return "\n".join(lines)


def _outcome_text(
    records: tuple[OrderRecord, ...], masker: Masker, scale: PriceScale, columns: dict[str, int]
) -> str:
    """Yesterday's orders as executed: fills in shown quantities, refusals by the broker's
    note (`PriceScale.note`: its words under raw prices, its code's under rebased)."""
    if not records:
        return "no orders"
    lines = []
    for r in records:
        ident = masker.symbol_label(r.symbol)
        note = scale.note(r)
        if r.status == "rejected":
            lines.append(
                f"- {r.side} {ident}: rejected {r.reject_code.value if r.reject_code else ''}"
                f" ({masker.mask_text(note)})"
            )
        else:
            filled = _quantity(scale.quantity(columns.get(r.symbol, -1), r.filled_shares))
            lines.append(
                f"- {r.side} {ident}: {r.status} {filled} shares, "
                f"cost {_money(scale.money(r.cost))}"
                + (f" ({masker.mask_text(note)})" if note else "")
            )
    return "\n".join(lines)


def user_message(
    ctx: StepContext,
    masker: Masker,
    prompts: PromptSet,
    mode: str,
    step: StepInfo,
    candidates_k: int = 10,
    benchmark: str = "the benchmark index",
    currency: str = "CNY",
    drawn_from: np.ndarray | None = None,
) -> str:
    """Fill the shared user template for `mode`; the result passes through the mask.
    `drawn_from` (universe columns, default all) are the BUY candidates listed and drawn
    from: the limit filter leaves limit-up names out."""
    listed = (
        ctx.universe_set if drawn_from is None else frozenset(ctx.view.symbols[drawn_from].tolist())
    )
    ids = masker.sorted_labels(listed)
    if mode == "memory_only":
        listing = "Identifiers: " + ", ".join(ids)
    else:
        listing = "Preview: " + ", ".join(ids[:20]) + (" ..." if len(ids) > 20 else "")
    text = prompts.user.format(
        step_label=f"Step {step.index} of {step.total}. Decision day "
        f"{masker.day_label(ctx.view.as_of)}, before the open.",
        constraints=constraints_line(ctx.rules, fixed_pool=mode == "fixed_candidate"),
        account=account_text(ctx, masker, currency, prices=mode != "memory_only"),
        universe_size=len(ids),
        universe_listing=listing,
        feature_table=feature_table(ctx, masker, candidates_k, drawn_from)
        if mode == "fixed_candidate"
        else "",
        previous_outcome=_outcome_text(step.previous, masker, ctx.scale, ctx.view.column_map),
        cum_return=_pct(step.cum_return),
        bench_return=_pct(step.bench_return),
        benchmark=benchmark,
    )
    return masker.mask_text(text)
