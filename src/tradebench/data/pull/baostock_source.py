"""A-shares through baostock (daily k-lines, adjustment factors, CSI300 members).

Fetch (after `bs.login()`): `query_history_k_data_plus(code, FIELDS, start, end, "d",
adjustflag="3")` (raw prices) per stock, `query_adjust_factor(code, "1990-01-01", end)`
(every ex-date since listing), `query_hs300_stocks(date)` on the first day, each month
start and the last day of the window, and the index's k-lines. Codes are `sh.600000`;
every value is a string, empty where the source has none.

Convert: raw OHLC, volume (shares), amount (CNY) parsed from strings; `adj_factor` = the
`backAdjustFactor` of the last `dividOperateDate` on or before the day (1 before the
first), so adjusted = raw x factor is baostock's back-adjusted price; `pctChg` (against
the ex-right previous close) is the source's adjusted change, which the checks compare
with the factor; `tradestatus` "0" is a suspension (volume set to 0, so it is flagged);
`isST` days are counted (±5% limits are not modelled). Membership intervals come from
the snapshots' `updateDate`s: a code is a member from the first snapshot that lists it
until the first later snapshot that does not.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tradebench.data.pull.codes import baostock_code, cn_symbol
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

FIELDS = (
    "date,code,open,high,low,close,preclose,volume,amount,adjustflag,turn,tradestatus,pctChg,isST"
)
INDEX_FIELDS = "date,code,open,high,low,close,volume,amount,pctChg"
FACTOR_COLUMNS = ["code", "dividOperateDate", "backAdjustFactor"]
MEMBER_COLUMNS = ["updateDate", "code", "code_name"]
FIRST_DAY = "1990-01-01"


@dataclass(frozen=True)
class BaostockFrames:
    """What the baostock queries returned (each `ResultData.get_data()`)."""

    bars: tuple[pd.DataFrame, ...]
    factors: tuple[pd.DataFrame, ...]
    index: pd.DataFrame | None = None
    members: tuple[pd.DataFrame, ...] = ()


def _data(result: object, what: str) -> pd.DataFrame:
    """A query's rows as a frame, or a `DataError` with baostock's own message."""
    code = getattr(result, "error_code", None)
    if code != "0":
        raise DataError(f"baostock {what} failed ({code}: {getattr(result, 'error_msg', '')})")
    return result.get_data()  # type: ignore[attr-defined]


def query_days(start: str, end: str) -> list[str]:
    """Days to ask for the CSI300 list: the first day, each month start, the last day
    (so a change in the window's last weeks is seen)."""
    days = pd.date_range(start, end, freq="MS").strftime("%Y-%m-%d").tolist()
    return list(dict.fromkeys([start, *days, end]))


def fetch_baostock(req: PullRequest) -> BaostockFrames:
    """Log in, run every query for the request, log out (baostock's own prints muted:
    its answers carry the same messages, which become the errors). The request is checked
    before the library is imported, so a bad one gets the same answer without the extra."""
    codes = [baostock_code(s) for s in req.symbols]
    index_code = baostock_code(req.index) if req.index else None
    if req.members and req.members != "csi300":
        raise ConfigError(f"unknown --members {req.members!r}; baostock supports csi300")
    bs = import_library("baostock", "baostock")
    with contextlib.redirect_stdout(io.StringIO()):
        login = bs.login()
        if getattr(login, "error_code", None) != "0":
            raise DataError(f"baostock login failed ({login.error_msg}); check the connection")
        try:
            return _queries(bs, req, codes, index_code)
        finally:
            bs.logout()


def _queries(bs: Any, req: PullRequest, codes: list[str], index_code: str | None) -> BaostockFrames:
    """Every query of a pull, on a logged-in session."""
    members: list[pd.DataFrame] = []
    if req.members:
        for when in query_days(req.start, req.end):
            members.append(_data(bs.query_hs300_stocks(date=when), f"query_hs300_stocks({when})"))
        codes = [*codes, *(c for m in members for c in m["code"])]
    bars, factors = [], []
    window = {"start_date": req.start, "end_date": req.end, "frequency": "d", "adjustflag": "3"}
    for code in dict.fromkeys(codes):
        result = bs.query_history_k_data_plus(code, FIELDS, **window)
        bars.append(_data(result, f"query_history_k_data_plus({code})"))
        result = bs.query_adjust_factor(code=code, start_date=FIRST_DAY, end_date=req.end)
        factors.append(_data(result, f"query_adjust_factor({code})"))
    index = None
    if index_code:
        result = bs.query_history_k_data_plus(index_code, INDEX_FIELDS, **window)
        index = _data(result, f"index k-lines {index_code}")
    return BaostockFrames(tuple(bars), tuple(factors), index, tuple(members))


def _numbers(frame: pd.DataFrame, columns: list[str]) -> dict[str, np.ndarray]:
    """baostock's string columns as floats ('' -> NaN)."""
    return {c: pd.to_numeric(frame[c], errors="coerce").to_numpy(dtype=np.float64) for c in columns}


def _require(frame: pd.DataFrame, columns: list[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataError(f"baostock {what} lacks columns {missing} (has {list(frame.columns)})")


def _factors(frames: tuple[pd.DataFrame, ...]) -> pd.DataFrame:
    parts = [f for f in frames if not f.empty]
    if not parts:
        return pd.DataFrame(
            {"symbol": [], "date": pd.Series([], dtype="datetime64[ns]"), "back": []}
        )
    table = pd.concat(parts, ignore_index=True)
    _require(table, FACTOR_COLUMNS, "query_adjust_factor")
    return pd.DataFrame(
        {
            "symbol": [cn_symbol(c) for c in table["code"]],
            "date": day(table["dividOperateDate"]).to_numpy(),
            "back": pd.to_numeric(table["backAdjustFactor"], errors="coerce").to_numpy(),
        }
    ).sort_values("date", kind="stable")


def _bars(frames: BaostockFrames) -> tuple[pd.DataFrame, list[Finding]]:
    parts = [f for f in frames.bars if not f.empty]
    if not parts:
        raise DataError("baostock returned no k-lines for any requested code in the window")
    table = pd.concat(parts, ignore_index=True)
    _require(table, FIELDS.split(","), "query_history_k_data_plus")
    nums = _numbers(table, ["open", "high", "low", "close", "volume", "amount", "pctChg"])
    bars = pd.DataFrame(
        {
            "date": day(table["date"]).to_numpy(),
            "symbol": [cn_symbol(c) for c in table["code"]],
            **{c: nums[c] for c in ("open", "high", "low", "close", "volume", "amount")},
            "change": nums["pctChg"],
        }
    )
    factor = pd.merge_asof(
        bars.reset_index().sort_values("date", kind="stable"),
        _factors(frames.factors),
        on="date",
        by="symbol",
        direction="backward",
    ).sort_values("index")
    bars["adj_factor"] = factor["back"].fillna(1.0).to_numpy()
    halted = (table["tradestatus"] == "0").to_numpy()
    traded = halted & np.isfinite(bars["volume"].to_numpy()) & (bars["volume"].to_numpy() > 0)
    bars.loc[halted, "volume"] = 0.0
    findings = []
    if traded.any():
        rows = bars[traded]
        findings.append(
            Finding(
                kind="note",
                count=int(traded.sum()),
                examples=examples(rows["symbol"], rows["date"]),
                detail="tradestatus 0 (suspended) with volume > 0: kept as "
                "suspended, volume set to 0",
            )
        )
    st = (table["isST"] == "1").to_numpy()
    if st.any():
        rows = bars[st]
        findings.append(
            Finding(
                kind="note",
                count=int(st.sum()),
                examples=examples(rows["symbol"], rows["date"]),
                detail="isST days: the ±5% limit of ST stocks is not modelled "
                "(the board's limit applies)",
            )
        )
    return bars[[*BAR_COLUMNS, "change"]], findings


def membership_from_snapshots(
    snapshots: tuple[pd.DataFrame, ...],
) -> tuple[pd.DataFrame, dict[str, str]]:
    """Half-open intervals from member lists stamped with their `updateDate` (pure)."""
    lists = [s for s in snapshots if not s.empty]
    if not lists:
        raise DataError("query_hs300_stocks returned no member list for any queried day")
    table = pd.concat(lists, ignore_index=True)
    _require(table, MEMBER_COLUMNS, "query_hs300_stocks")
    table = table.assign(
        symbol=[cn_symbol(c) for c in table["code"]], when=day(table["updateDate"])
    )
    dates = np.sort(table["when"].unique())
    sets = [set(table.loc[table["when"] == d, "symbol"]) for d in dates]
    rows = []
    for sym in sorted(set(table["symbol"])):
        inside = [sym in s for s in sets]
        for i, member in enumerate(inside):
            if member and (i == 0 or not inside[i - 1]):
                stop = next((j for j in range(i + 1, len(dates)) if not inside[j]), None)
                rows.append((sym, dates[i], pd.NaT if stop is None else dates[stop]))
    frame = pd.DataFrame(rows, columns=["symbol", "start", "end"])
    frame = frame.astype({"start": "datetime64[ns]", "end": "datetime64[ns]"})
    names = dict(zip(table["symbol"], table["code_name"].astype(str), strict=True))
    return frame, names


def _index(frame: pd.DataFrame) -> pd.DataFrame:
    _require(frame, INDEX_FIELDS.split(","), "index k-lines")
    nums = _numbers(frame, ["open", "high", "low", "close", "volume"])
    return pd.DataFrame(
        {
            "date": day(frame["date"]).to_numpy(),
            "symbol": [cn_symbol(c) for c in frame["code"]],
            **nums,
        }
    )


def convert_baostock(frames: BaostockFrames) -> Converted:
    """Turn baostock's string frames into canonical bars, index and membership (pure)."""
    bars, findings = _bars(frames)
    membership, names = None, {}
    if frames.members:
        membership, names = membership_from_snapshots(frames.members)
        stamps = sorted({str(d)[:10] for m in frames.members for d in m["updateDate"]})
        findings.append(
            Finding(
                kind="note",
                count=len(stamps),
                examples=stamps[:10],
                detail="membership from baostock's CSI300 lists (updateDate "
                "shown): a change is seen on the first list that shows it",
            )
        )
    index = None if frames.index is None or frames.index.empty else _index(frames.index)
    calendar = bars["date"].to_numpy()
    if index is not None:
        calendar = np.concatenate([calendar, index["date"].to_numpy()])
    bars, filled = fill_missing_days(bars, calendar)
    findings = filled + findings
    return Converted(
        bars=bars,
        price_basis="raw_with_factor",
        sources=(
            "baostock:query_history_k_data_plus",
            "baostock:query_adjust_factor",
            *(("baostock:query_hs300_stocks",) if membership is not None else ()),
        ),
        index=index,
        membership=membership,
        names=names,
        findings=tuple(findings),
    )
