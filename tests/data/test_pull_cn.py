"""akshare and baostock conversion on frames in each library's documented shape.

The frames are built from the shared A-share files the way each library returns them
(akshare: Chinese column names, `date` objects, volume in lots, hfq prices rounded to
0.01, suspended days absent; baostock: every value a string, `sh.600519` codes,
`tradestatus`, ex-date factor rows). The oracle is the long importer on the same rows of
the shared CSI300 file and the shared membership file, read by their own code.
"""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import pytest

from tradebench.data.dataset import load_dataset
from tradebench.data.importers.files import read_membership
from tradebench.data.importers.long import LongImport, import_long
from tradebench.data.pull import pull_dataset
from tradebench.data.pull.akshare_source import AkshareFrames, convert_akshare
from tradebench.data.pull.baostock_source import (
    BaostockFrames,
    convert_baostock,
    membership_from_snapshots,
)
from tradebench.data.pull.codes import cn_symbol
from tradebench.data.pull.common import PullRequest, write_converted
from tradebench.errors import DataError

SYMBOLS = ("SH600519", "SZ000001", "SH600460")
START, END = "2020-06-01", "2021-06-30"


@pytest.fixture(scope="module")
def shared_rows(shared_data):
    """(adjusted rows with factor, unadjusted rows in lots with amount) of SYMBOLS."""
    adj = pd.read_parquet(shared_data / "cn" / "csi300_members_daily_2018_2026.parquet")
    adj = adj[adj["symbol"].isin(SYMBOLS)].astype({"symbol": str})
    lots = pd.read_parquet(shared_data / "cn" / "ashare_319_daily_with_amount.parquet")
    lots = lots[lots["symbol"].isin(SYMBOLS)].astype({"symbol": str})
    return adj, lots


@pytest.fixture(scope="module")
def oracle(shared_data, tmp_path_factory):
    """The long importer on the same rows: the independent expectation."""
    out = tmp_path_factory.mktemp("oracle") / "cn"
    import_long(
        LongImport(
            source=shared_data / "cn" / "csi300_members_daily_2018_2026.parquet",
            out=out,
            market="cn",
            index_file=shared_data / "cn" / "csi300_index_daily.csv",
            index_symbol="SH000300",
            symbols=SYMBOLS,
            start=START,
            end=END,
        )
    )
    return load_dataset(out)


def _window(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[(frame["date"] >= START) & (frame["date"] <= END)].sort_values(["symbol", "date"])


def _akshare_frames(shared_data, adj, lots) -> AkshareFrames:
    raw, hfq = {}, {}
    both = _window(adj).merge(lots, on=["date", "symbol"], suffixes=("_adj", ""))
    both = both[both["volume_adj"].fillna(0) > 0]  # East Money leaves suspended days out
    for sym, rows in both.groupby("symbol"):
        shape = {"日期": rows["date"].dt.date.to_numpy(), "股票代码": sym[2:]}
        prices = {
            k: rows[c].astype("float64").round(2).to_numpy()
            for k, c in (("开盘", "open"), ("收盘", "close"), ("最高", "high"), ("最低", "low"))
        }
        rest = {
            "成交量": rows["volume"].round().astype("int64").to_numpy(),
            "成交额": rows["amount"].astype("float64").to_numpy(),
            "振幅": np.nan,
            "涨跌幅": np.nan,
            "涨跌额": np.nan,
            "换手率": np.nan,
        }
        raw[sym] = pd.DataFrame({**shape, **prices, **rest})
        factor = rows["factor"].astype("float64").to_numpy()
        hfq[sym] = pd.DataFrame(
            {
                **shape,
                **{k: np.round(v * factor, 2) for k, v in prices.items()},
                **rest,
                "涨跌幅": rows["change"].astype("float64").to_numpy(),
            }
        )
    idx = pd.read_csv(shared_data / "cn" / "csi300_index_daily.csv")
    idx = idx[(idx["date"] >= START) & (idx["date"] <= END)]
    index = pd.DataFrame(
        {
            "日期": idx["date"].astype(str),
            "开盘": idx["open"],
            "收盘": idx["close"],
            "最高": idx["high"],
            "最低": idx["low"],
            "成交量": idx["volume"],
            "成交额": np.nan,
            "振幅": np.nan,
            "涨跌幅": np.nan,
            "涨跌额": np.nan,
            "换手率": np.nan,
        }
    )
    members, _ = read_membership(shared_data / "universe" / "csi300_membership.csv")
    at = pd.Timestamp(END)
    now = members[(members["start"] <= at) & (members["end"].isna() | (members["end"] > at))]
    cons = pd.DataFrame(
        {
            "日期": at.date(),
            "指数代码": "000300",
            "指数名称": "沪深300",
            "成分券代码": now["symbol"].str[2:].to_numpy(),
            "成分券名称": now["symbol"].to_numpy(),
            "交易所": "",
        }
    )
    return AkshareFrames(raw, hfq, index, "SH000300", cons)


def _without_trailing_suspension(bars: pd.DataFrame) -> pd.DataFrame:
    """East Money has no bar after a stock's last traded day: nothing to fill there."""
    last = bars[~bars["suspended"]].groupby("symbol")["date"].max()
    return bars[bars["date"] <= bars["symbol"].map(last)]


def test_akshare_conversion_matches_the_long_importer(shared_data, shared_rows, oracle, tmp_path):
    adj, lots = shared_rows
    frames = _akshare_frames(shared_data, adj, lots)
    req = PullRequest(source="akshare", out=tmp_path / "ak", start=START, end=END)
    write_converted(req, convert_akshare(frames))
    ds = load_dataset(req.out)
    ours = ds.bars.set_index(["symbol", "date"]).sort_index()
    want = _without_trailing_suspension(oracle.bars).set_index(["symbol", "date"]).sort_index()
    assert ours.index.equals(want.index)  # suspended days inside the span come back as bars
    np.testing.assert_allclose(ours["close"], want["close"], atol=0.0051)
    # hfq closes are rounded to 0.01: a factor is known to 0.005 / raw close, and a
    # segment's middle is within twice that of the truth
    bound = 2 * 0.0052 / want["close"] + 1e-6
    assert ((ours["adj_factor"] - want["adj_factor"]).abs() <= bound).all()
    np.testing.assert_allclose(ours["volume"], want["volume"], rtol=1e-3)
    assert (ours["suspended"] == want["suspended"]).all()
    assert ours["suspended"].sum() > 0
    flat = ours[ours["suspended"]]
    assert (flat["open"] == flat["close"]).all() and (flat["volume"] == 0).all()
    pd.testing.assert_frame_equal(ds.index[["date", "close"]], oracle.index[["date", "close"]])
    found = ds.manifest.findings
    filled = [f for f in found if "absent from the source" in f.detail]
    assert filled[0].count == int(want["suspended"].sum())  # each one reported
    assert filled[0].examples[0] == "SH600460@2020-07-13"
    glitch = [f for f in found if f.kind == "factor_glitch"]
    oracle_glitch = [f for f in oracle.manifest.findings if f.kind == "factor_glitch"]
    assert "SZ000001@2020-12-31" in glitch[0].examples
    assert set(glitch[0].examples) <= set(oracle_glitch[0].examples)
    assert not [f for f in found if "hfq open" in f.detail]  # one ratio a day here
    assert set(ds.membership["start"]) == {pd.Timestamp(END)}
    assert len(ds.membership) == 300


def test_akshare_reports_what_it_cannot_convert(shared_data, shared_rows, tmp_path):
    adj, lots = shared_rows
    frames = _akshare_frames(shared_data, adj, lots)
    hfq = frames.hfq["SH600519"].copy()
    hfq.loc[hfq.index[5], "开盘"] += 3.0  # an hfq open off the close's ratio
    hfq = hfq.drop(index=hfq.index[7])  # a raw day without its hfq day
    no_hfq = {k: v for k, v in frames.hfq.items() if k != "SH600460"}  # no hfq answer
    frames = AkshareFrames(
        {**frames.raw, "SZ000002": pd.DataFrame()},
        {**no_hfq, "SH600519": hfq},
        frames.index,
        "SH000300",
    )
    conv = convert_akshare(frames)
    notes = {f.detail.split(":")[0]: f for f in conv.findings if f.kind == "note"}
    ratio = [f for d, f in notes.items() if d.startswith("hfq open")]
    assert ratio[0].count == 1 and ratio[0].examples == ["SH600519@2020-06-08"]
    orphan = [f for d, f in notes.items() if d.startswith("raw bars without")]
    n_460 = len(frames.raw["SH600460"])
    assert orphan[0].count == 1 + n_460
    assert orphan[0].examples == [f"SH600460 ({n_460} days)", "SH600519 (1 days)"]
    assert "SH600460" not in set(conv.bars["symbol"])
    empty = next(f for d, f in notes.items() if d.startswith("akshare returned no bars"))
    assert empty.examples == ["SZ000002"]
    # the day without a factor comes back as a flat suspended bar, and is listed
    day = pd.Timestamp(frames.raw["SH600519"]["日期"].iloc[7])
    row = conv.bars[(conv.bars["symbol"] == "SH600519") & (conv.bars["date"] == day)]
    assert row["volume"].isna().all()
    broken = {**frames.raw, "SH600519": frames.raw["SH600519"].drop(columns="收盘")}
    with pytest.raises(DataError, match="lacks columns \\['收盘'\\]"):
        convert_akshare(AkshareFrames(broken, frames.hfq))


def _bs_number(values: pd.Series, fmt: str) -> list[str]:
    return ["" if pd.isna(v) else format(float(v), fmt) for v in values]


def _baostock_frames(shared_data, adj, lots) -> BaostockFrames:
    bars, factors = [], []
    for sym, rows in adj.groupby("symbol"):
        code = f"{sym[:2].lower()}.{sym[2:]}"
        factor = rows["factor"].astype("float64")
        steps = rows[factor.ne(factor.shift())]
        factors.append(
            pd.DataFrame(
                {
                    "code": code,
                    "dividOperateDate": steps["date"].dt.strftime("%Y-%m-%d"),
                    "foreAdjustFactor": "",
                    "backAdjustFactor": [repr(float(f)) for f in steps["factor"]],
                    "adjustFactor": "",
                }
            )
        )
        win = _window(rows).merge(
            lots[["date", "symbol", "amount"]], on=["date", "symbol"], how="left"
        )
        f = win["factor"].astype("float64")
        vol = win["volume"].astype("float64")
        halted = ~(vol > 0)
        bars.append(
            pd.DataFrame(
                {
                    "date": win["date"].dt.strftime("%Y-%m-%d"),
                    "code": code,
                    **{
                        c: _bs_number((win[c].astype("float64") / f).round(2), ".4f")
                        for c in ("open", "high", "low", "close")
                    },
                    "preclose": "",
                    "volume": _bs_number(vol.round(), ".0f"),
                    "amount": _bs_number(win["amount"], ".4f"),
                    "adjustflag": "3",
                    "turn": "",
                    "tradestatus": np.where(halted, "0", "1"),
                    "pctChg": _bs_number(win["change"].where(~halted), ".6f"),
                    "isST": "1" if sym == "SH600460" else "0",
                }
            )
        )
    first = bars[0]
    halted_at = first.index[first["tradestatus"] == "0"][0]
    first.loc[halted_at, "volume"] = "1200"  # suspended, yet a volume: still suspended
    return BaostockFrames(tuple(bars), tuple(factors), None, _snapshots(shared_data))


def _snapshots(shared_data) -> tuple[pd.DataFrame, ...]:
    members, _ = read_membership(shared_data / "universe" / "csi300_membership.csv")
    lo, hi = pd.Timestamp(START), pd.Timestamp(END)
    changes = pd.concat([members["start"], members["end"]]).dropna()
    stamps = sorted({lo, *changes[(changes > lo) & (changes <= hi)]})
    out = []
    for when in stamps:
        now = members[
            (members["start"] <= when) & (members["end"].isna() | (members["end"] > when))
        ]
        codes = [f"{s[:2].lower()}.{s[2:]}" for s in now["symbol"]]
        out.append(
            pd.DataFrame(
                {
                    "updateDate": when.strftime("%Y-%m-%d"),
                    "code": codes,
                    "code_name": now["symbol"].to_numpy(),
                }
            )
        )
    return tuple(out)


def test_baostock_conversion_matches_the_long_importer(shared_data, shared_rows, oracle, tmp_path):
    adj, lots = shared_rows
    req = PullRequest(source="baostock", out=tmp_path / "bs", start=START, end=END)
    write_converted(req, convert_baostock(_baostock_frames(shared_data, adj, lots)))
    ds = load_dataset(req.out)
    ours = ds.bars.set_index(["symbol", "date"]).sort_index()
    want = oracle.bars.set_index(["symbol", "date"]).sort_index()
    assert ours.index.equals(want.index)
    for col in ("open", "high", "low", "close"):
        np.testing.assert_allclose(ours[col], want[col], rtol=0, atol=1e-9)
    np.testing.assert_allclose(ours["adj_factor"], want["adj_factor"], rtol=1e-12)
    np.testing.assert_allclose(ours["volume"], want["volume"], atol=0.5)
    assert (ours["suspended"] == want["suspended"]).all()
    kinds = {f.kind: f for f in ds.manifest.findings}
    want_kinds = {f.kind: f for f in oracle.manifest.findings}
    assert kinds["factor_glitch"].examples == want_kinds["factor_glitch"].examples
    assert kinds["suspension_filled"].count == want_kinds["suspension_filled"].count
    traded = [f for f in ds.manifest.findings if "tradestatus 0" in f.detail]
    assert traded[0].count == 1 and traded[0].examples == ["SH600460@2020-07-13"]
    st = [f for f in ds.manifest.findings if "isST" in f.detail]
    assert st and st[0].count == int((ours.index.get_level_values(0) == "SH600460").sum())


def test_baostock_membership_snapshots_rebuild_the_intervals(shared_data):
    ours, _ = membership_from_snapshots(_snapshots(shared_data))
    members, _ = read_membership(shared_data / "universe" / "csi300_membership.csv")

    def at(table: pd.DataFrame, when: pd.Timestamp) -> set[str]:
        inside = (table["start"] <= when) & (table["end"].isna() | (table["end"] > when))
        return set(table.loc[inside, "symbol"])

    days = pd.bdate_range(START, END)
    assert all(at(ours, d) == at(members, d) for d in days)
    assert {len(at(ours, d)) for d in days} == {300}


def _binding(real, answer):
    """Stand-in for a library's network function: the call must bind to the installed
    function's own signature, and gets frames in the library's documented shape."""
    signature = inspect.signature(real)

    def call(*args, **kwargs):
        return answer(signature.bind(*args, **kwargs).arguments)

    return call


def test_fetch_akshare_calls_the_library_and_writes_the_dataset(
    shared_data, shared_rows, oracle, tmp_path, monkeypatch
):
    ak = pytest.importorskip("akshare", reason="needs the `cn-data` extra")
    frames = _akshare_frames(shared_data, *shared_rows)
    calls: list[tuple[str, str]] = []

    def hist(args):
        assert (args["period"], args["start_date"], args["end_date"]) == (
            "daily",
            "20200601",
            "20210630",
        )
        calls.append((args["symbol"], args["adjust"]))
        sym = cn_symbol(args["symbol"])
        source = frames.raw if args["adjust"] == "" else frames.hfq
        return source.get(sym, pd.DataFrame())

    monkeypatch.setattr(ak, "stock_zh_a_hist", _binding(ak.stock_zh_a_hist, hist))
    monkeypatch.setattr(ak, "index_zh_a_hist", _binding(ak.index_zh_a_hist, lambda a: frames.index))
    monkeypatch.setattr(
        ak,
        "index_stock_cons_csindex",
        _binding(ak.index_stock_cons_csindex, lambda a: frames.members),
    )
    req = PullRequest(
        source="akshare",
        out=tmp_path / "ak",
        start=START,
        end=END,
        symbols=("600519", "sz.000001", "SH600460"),
        index="SH000300",
        members="csi300",
    )
    pull_dataset(req)
    ds = load_dataset(req.out)
    assert ("600519", "") in calls and ("600519", "hfq") in calls
    assert len(calls) == 2 * len(set(frames.members["成分券代码"]) | {"600519", "000001", "600460"})
    assert set(ds.bars["symbol"]) == set(SYMBOLS)
    assert ds.manifest.sources[0] == "akshare:stock_zh_a_hist"
    assert len(ds.membership) == 300 and ds.manifest.index_symbol == "SH000300"
    want = _without_trailing_suspension(oracle.bars)
    assert len(ds.bars) == len(want)


def _hs300_at(members: pd.DataFrame, when: pd.Timestamp) -> pd.DataFrame:
    """baostock's answer to query_hs300_stocks(date): the list in force, stamped with the
    day it took effect."""
    changes = pd.concat([members["start"], members["end"]]).dropna()
    stamp = changes[changes <= when].max()
    now = members[(members["start"] <= when) & (members["end"].isna() | (members["end"] > when))]
    return pd.DataFrame(
        {
            "updateDate": stamp.strftime("%Y-%m-%d"),
            "code": [f"{s[:2].lower()}.{s[2:]}" for s in now["symbol"]],
            "code_name": now["symbol"].to_numpy(),
        }
    )


def test_fetch_baostock_calls_the_library_and_writes_the_dataset(
    shared_data, shared_rows, tmp_path, monkeypatch
):
    bs = pytest.importorskip("baostock", reason="needs the `cn-data` extra")
    from baostock.data.resultset import ResultData

    frames = _baostock_frames(shared_data, *shared_rows)
    members, _ = read_membership(shared_data / "universe" / "csi300_membership.csv")
    by_code = {f["code"].iloc[0]: f for f in frames.bars}
    factors = {f["code"].iloc[0]: f for f in frames.factors}
    idx = pd.read_csv(shared_data / "cn" / "csi300_index_daily.csv")
    idx = idx[(idx["date"] >= START) & (idx["date"] <= END)]
    index = pd.DataFrame(
        {
            "date": idx["date"].astype(str),
            "code": "sh.000300",
            **{c: _bs_number(idx[c], ".4f") for c in ("open", "high", "low", "close", "volume")},
            "amount": "",
            "pctChg": "",
        }
    )
    empty_bars = frames.bars[0].iloc[:0]

    def result(frame: pd.DataFrame | None = None) -> ResultData:
        out = ResultData()
        out.error_code, out.error_msg = "0", "success"
        if frame is not None:
            out.fields, out.data = list(frame.columns), frame.astype(str).values.tolist()
        return out

    def k_lines(args):
        assert (args["frequency"], args["adjustflag"]) == ("d", "3")
        assert (args["start_date"], args["end_date"]) == (START, END)
        if args["code"] == "sh.000300":
            assert args["fields"] == "date,code,open,high,low,close,volume,amount,pctChg"
            return result(index)
        return result(by_code.get(args["code"], empty_bars))

    def factor(args):
        assert args["start_date"] <= "1991-01-01"  # every ex-date since listing
        return result(factors.get(args["code"], frames.factors[0].iloc[:0]))

    asked: list[str] = []

    def hs300(args):
        asked.append(args["date"])
        return result(_hs300_at(members, pd.Timestamp(args["date"])))

    for name, answer in (
        ("login", lambda a: result()),
        ("logout", lambda a: result()),
        ("query_history_k_data_plus", k_lines),
        ("query_adjust_factor", factor),
        ("query_hs300_stocks", hs300),
    ):
        monkeypatch.setattr(bs, name, _binding(getattr(bs, name), answer))
    req = PullRequest(
        source="baostock",
        out=tmp_path / "bs",
        start=START,
        end=END,
        symbols=SYMBOLS,
        members="csi300",
        index="SH000300",
    )
    pull_dataset(req)
    ds = load_dataset(req.out)
    assert asked == [*pd.date_range(START, END, freq="MS").strftime("%Y-%m-%d"), END]
    assert set(ds.bars["symbol"]) == set(SYMBOLS)
    assert ds.manifest.index_symbol == "SH000300" and len(ds.index) == len(idx)

    def at(table: pd.DataFrame, when: pd.Timestamp) -> set[str]:
        inside = (table["start"] <= when) & (table["end"].isna() | (table["end"] > when))
        return set(table.loc[inside, "symbol"])

    # monthly lists carry the day each composition took effect: the history is exact
    # when changes are at least a month apart, as CSI300's are in this window
    days = pd.bdate_range(START, END)
    assert all(at(ds.membership, d) == at(members, d) for d in days)


def test_no_member_list_on_any_queried_day_is_one_clear_error() -> None:
    """baostock answering every `query_hs300_stocks` with an empty list is a data error
    naming the query, not a pandas traceback."""
    empty = pd.DataFrame(columns=["updateDate", "code", "code_name"])
    with pytest.raises(DataError, match="query_hs300_stocks returned no member list"):
        membership_from_snapshots((empty, empty))
