"""A-shares through akshare (East Money daily bars, CSI index members).

Fetch: `stock_zh_a_hist(symbol, "daily", start, end, adjust="")` (raw) and `adjust="hfq"`
(back-adjusted) per stock; `index_zh_a_hist` for the benchmark index;
`index_stock_cons_csindex("000300")` for the current member list. Frame shape (akshare
source): `日期` (date), `股票代码`, `开盘`, `收盘`, `最高`, `最低`, `成交量` (lots of 100
shares), `成交额` (CNY), `振幅`, `涨跌幅` (% change), `涨跌额`, `换手率`.

Convert: raw OHLC from the raw frame; `adj_factor` from hfq close / raw close, held
constant between ex-dates (`steady_factor`: hfq prices are rounded to 0.01, so a day's
ratio is only known to about 0.005 / raw close); volume x 100 -> shares; the hfq
`涨跌幅` is the source's adjusted change.
East Money omits suspended days: those inside a symbol's span become flat suspended bars.
The member list is today's, with no history: membership starts on its date (a finding says so).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tradebench.data.pull.codes import bare_code, cn_symbol
from tradebench.data.pull.common import (
    BAR_COLUMNS,
    Converted,
    PullRequest,
    day,
    examples,
    fill_missing_days,
    import_library,
)
from tradebench.data.schema import Finding
from tradebench.errors import ConfigError, DataError

HIST_COLUMNS = ["日期", "开盘", "收盘", "最高", "最低", "成交量", "成交额", "涨跌幅"]
MEMBER_COLUMNS = ["日期", "成分券代码", "成分券名称"]
INDEX_CODES = {"csi300": "000300"}
LOT = 100.0
ROUNDING = 0.005
"""East Money rounds prices to 0.01: half a tick is the rounding bound."""
SLACK = 1.02
"""Margin on the rounding bound for float noise in the source's numbers."""


@dataclass(frozen=True)
class AkshareFrames:
    """What the akshare calls returned, keyed by our symbol."""

    raw: dict[str, pd.DataFrame]
    hfq: dict[str, pd.DataFrame]
    index: pd.DataFrame | None = None
    index_symbol: str | None = None
    members: pd.DataFrame | None = None
    extra_sources: tuple[str, ...] = field(default_factory=tuple)


def fetch_akshare(req: PullRequest) -> AkshareFrames:
    """Call akshare for every requested stock (raw and hfq), the index and the members
    (the request is checked before the library is imported)."""
    start, end = req.start.replace("-", ""), req.end.replace("-", "")
    symbols = [cn_symbol(s) for s in req.symbols]
    index_symbol = cn_symbol(req.index) if req.index else None
    if req.members and req.members not in INDEX_CODES:
        raise ConfigError(f"unknown --members {req.members!r}; akshare supports csi300")
    ak = import_library("akshare", "akshare")
    members = None
    if req.members:
        members = ak.index_stock_cons_csindex(symbol=INDEX_CODES[req.members])
        symbols += [cn_symbol(c) for c in members["成分券代码"].astype(str)]
    raw, hfq = {}, {}
    for sym in dict.fromkeys(symbols):
        code = bare_code(sym)
        raw[sym] = ak.stock_zh_a_hist(code, "daily", start, end, adjust="")
        hfq[sym] = ak.stock_zh_a_hist(code, "daily", start, end, adjust="hfq")
    index = None
    if index_symbol:
        index = ak.index_zh_a_hist(
            symbol=index_symbol[2:], period="daily", start_date=start, end_date=end
        )
    return AkshareFrames(raw, hfq, index, index_symbol, members)


def _require(frame: pd.DataFrame, columns: list[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataError(
            f"akshare {what} lacks columns {missing} (has {list(frame.columns)}); "
            "the library's frame shape changed: upgrade tradebench or pin akshare"
        )


def _symbol_bars(sym: str, raw: pd.DataFrame, hfq: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """One stock's canonical rows and the count of raw rows without an hfq row."""
    _require(raw, HIST_COLUMNS, f"stock_zh_a_hist({sym}, adjust='')")
    if hfq.empty:  # no hfq answer at all: every raw day lacks its factor
        hfq = pd.DataFrame(columns=HIST_COLUMNS)
    _require(hfq, HIST_COLUMNS, f"stock_zh_a_hist({sym}, adjust='hfq')")
    left = raw[HIST_COLUMNS].assign(date=day(raw["日期"])).sort_values("date", kind="stable")
    right = hfq[["日期", "开盘", "收盘", "涨跌幅"]].assign(date=day(hfq["日期"]))
    both = left.merge(right.drop(columns="日期"), on="date", how="left", suffixes=("", "_hfq"))
    orphan = int(both["收盘_hfq"].isna().sum())
    both = both[both["收盘_hfq"].notna()]
    close = both["收盘"].to_numpy(dtype=np.float64)
    frame = pd.DataFrame(
        {
            "date": both["date"].to_numpy(),
            "symbol": sym,
            "open": both["开盘"].to_numpy(dtype=np.float64),
            "high": both["最高"].to_numpy(dtype=np.float64),
            "low": both["最低"].to_numpy(dtype=np.float64),
            "close": close,
            "adj_factor": steady_factor(both["收盘_hfq"].to_numpy(dtype=np.float64) / close, close),
            "volume": both["成交量"].to_numpy(dtype=np.float64) * LOT,
            "amount": both["成交额"].to_numpy(dtype=np.float64),
            "change": both["涨跌幅_hfq"].to_numpy(dtype=np.float64),
            "open_hfq": both["开盘_hfq"].to_numpy(dtype=np.float64),
        }
    )
    return frame, orphan


def steady_factor(ratio: np.ndarray, raw_close: np.ndarray) -> np.ndarray:
    """The factor of each day, constant between ex-dates, from hfq close / raw close.

    hfq closes are rounded to 0.01, so a day's ratio is only known within
    `ROUNDING / raw_close` of the true factor. Days are taken in order and their intervals
    intersected; a day whose interval misses the running intersection starts a new segment
    (an ex-date). Each segment gets the middle of its intersection, so rounding noise
    does not show up as factor changes (or as factor glitches).
    """
    out = np.empty_like(ratio)
    if len(ratio) == 0:
        return out
    half = ROUNDING * SLACK / raw_close + 1e-12 * ratio
    lo, hi = ratio - half, ratio + half
    start, cur_lo, cur_hi = 0, lo[0], hi[0]
    for i in range(1, len(ratio)):
        new_lo, new_hi = max(cur_lo, lo[i]), min(cur_hi, hi[i])
        if new_lo > new_hi:  # no common factor: an ex-date
            out[start:i] = (cur_lo + cur_hi) / 2
            start, new_lo, new_hi = i, lo[i], hi[i]
        cur_lo, cur_hi = new_lo, new_hi
    out[start:] = (cur_lo + cur_hi) / 2
    return out


def _ratio_mismatch(bars: pd.DataFrame) -> list[Finding]:
    """Days whose hfq open / raw open disagrees with the close's factor beyond rounding."""
    implied = bars["open"] * bars["adj_factor"]
    # hfq open rounding + raw open rounding x factor + the factor's own error (up to twice
    # the close's rounding interval) carried to the open
    factor_error = 2 * ROUNDING * SLACK * bars["open"] / bars["close"]
    bound = ROUNDING * (1.0 + bars["adj_factor"]) + factor_error + 1e-9
    bad = (implied - bars["open_hfq"]).abs() > bound
    if not bad.any():
        return []
    rows = bars[bad]
    return [
        Finding(
            kind="note",
            count=int(bad.sum()),
            examples=examples(rows["symbol"], rows["date"]),
            detail="hfq open / raw open differs from the close's factor beyond 0.01 rounding "
            "(the source's adjustment is not one ratio per day): factor taken from the close",
        )
    ]


def _membership(members: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str], Finding]:
    _require(members, MEMBER_COLUMNS, "index_stock_cons_csindex")
    symbols = [cn_symbol(c) for c in members["成分券代码"].astype(str)]
    start = day(members["日期"])
    frame = pd.DataFrame(
        {"symbol": symbols, "start": start.to_numpy(), "end": pd.Series(pd.NaT, index=start.index)}
    )
    names = dict(zip(symbols, members["成分券名称"].astype(str), strict=True))
    note = Finding(
        kind="note",
        count=len(frame),
        examples=symbols[:10],
        detail=f"membership is the index's member list of {start.min().date()} "
        "(akshare has no history): members start on that date, none before it",
    )
    return frame.astype({"end": "datetime64[ns]"}), names, note


def _index_table(frame: pd.DataFrame, symbol: str) -> pd.DataFrame:
    _require(frame, ["日期", "开盘", "收盘", "最高", "最低", "成交量"], "index_zh_a_hist")
    return (
        pd.DataFrame(
            {
                "date": day(frame["日期"]).to_numpy(),
                "symbol": symbol,
                "open": frame["开盘"].to_numpy(dtype=np.float64),
                "high": frame["最高"].to_numpy(dtype=np.float64),
                "low": frame["最低"].to_numpy(dtype=np.float64),
                "close": frame["收盘"].to_numpy(dtype=np.float64),
                "volume": frame["成交量"].to_numpy(dtype=np.float64),
            }
        )
        .sort_values("date", kind="stable")
        .reset_index(drop=True)
    )


def convert_akshare(frames: AkshareFrames) -> Converted:
    """Turn akshare's frames into canonical bars, index and membership (pure)."""
    findings: list[Finding] = []
    pieces, orphans, empty = [], {}, []
    for sym, raw in frames.raw.items():
        hfq = frames.hfq.get(sym, pd.DataFrame())
        if raw.empty:
            empty.append(sym)
            continue
        piece, orphan = _symbol_bars(sym, raw, hfq)
        pieces.append(piece)
        if orphan:
            orphans[sym] = orphan
    if empty:
        findings.append(
            Finding(
                kind="note",
                count=len(empty),
                examples=empty[:10],
                detail="akshare returned no bars for these symbols in the window",
            )
        )
    if not pieces:
        raise DataError("akshare returned no bars for any requested symbol in the window")
    if orphans:
        findings.append(
            Finding(
                kind="note",
                count=sum(orphans.values()),
                examples=[f"{s} ({n} days)" for s, n in list(orphans.items())[:10]],
                detail="raw bars without an hfq bar on the same day: no factor, rows not imported",
            )
        )
    bars = pd.concat(pieces, ignore_index=True)
    findings += _ratio_mismatch(bars)
    index = None
    calendar = bars["date"].to_numpy()
    if frames.index is not None and frames.index_symbol:
        index = _index_table(frames.index, frames.index_symbol)
        calendar = np.concatenate([calendar, index["date"].to_numpy()])
    bars, filled = fill_missing_days(bars[[*BAR_COLUMNS, "change"]], calendar)
    membership, names = None, {}
    if frames.members is not None:
        membership, names, note = _membership(frames.members)
        findings.append(note)
    return Converted(
        bars=bars,
        price_basis="raw_with_factor",
        sources=(
            "akshare:stock_zh_a_hist",
            *(("akshare:index_stock_cons_csindex",) if membership is not None else ()),
        ),
        index=index,
        membership=membership,
        names=names,
        findings=tuple(filled + findings),
    )
