"""The records gate: a view at day T shows exactly the records with ts_available <= T's open."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.data.test_view_pit import _snapshot
from tradebench.data import Dataset, load_dataset
from tradebench.data.clock import decision_time
from tradebench.data.dataset import write_manifest, write_table
from tradebench.data.importers.records import RecordsImport, attach_records, import_records
from tradebench.data.records import RECORD_COLUMNS, content_sha256
from tradebench.errors import ConfigError
from tradebench.view import MarketView

NEW_YORK, SHANGHAI = "America/New_York", "Asia/Shanghai"


def _open_utc(day: str, zone: str) -> pd.Timestamp:
    """09:30 local on `day` in UTC, computed here independently of `tradebench.data.clock`."""
    return pd.Timestamp(f"{day} 09:30:00", tz=zone).tz_convert("UTC")


@pytest.mark.parametrize(
    ("day", "market", "expected"),
    [
        ("2025-03-07", "us", "2025-03-07 14:30"),  # EST
        ("2025-03-10", "us", "2025-03-10 13:30"),  # EDT from 2025-03-09
        ("2025-10-31", "us", "2025-10-31 13:30"),
        ("2025-11-03", "us", "2025-11-03 14:30"),  # EST again from 2025-11-02
        ("2024-07-01", "cn", "2024-07-01 01:30"),  # Shanghai: UTC+8, no DST
        ("2024-12-31", "cn", "2024-12-31 01:30"),
    ],
)
def test_decision_time_is_the_open_in_utc(day: str, market: str, expected: str) -> None:
    got = decision_time(day, market)
    assert got == pd.Timestamp(expected, tz="UTC") and str(got.tz) == "UTC"
    assert got == _open_utc(day, NEW_YORK if market == "us" else SHANGHAI)


def test_decision_time_rejects_unknown_market() -> None:
    with pytest.raises(ConfigError, match="unknown market 'jp'"):
        decision_time("2025-01-02", "jp")


def _with_records(src: Path, dest: Path, rows: list[dict]) -> Dataset:
    """A copy of dataset `src` with `rows` imported through the long-format importer."""
    shutil.copytree(src, dest)
    file = dest.parent / f"{dest.name}_records.csv"
    pd.DataFrame(rows).to_csv(file, index=False)
    import_records(RecordsImport(dataset=dest, long=(file,)))
    return load_dataset(dest)


def _edge_rows(day: str, zone: str, symbol: str) -> list[dict]:
    cut = _open_utc(day, zone)
    stamps = {
        "before": cut - pd.Timedelta(seconds=1),
        "at": cut,
        "after": cut + pd.Timedelta(seconds=1),
    }
    return [
        {
            "record_id": f"{day}-{name}",
            "kind": "news",
            "symbols": symbol,
            "ts_available": ts.isoformat(),
            "title": f"{name} the open",
            "body": day,
        }
        for name, ts in stamps.items()
    ]


def _visible(view: MarketView) -> set[str]:
    return set(view.records()["record_id"])


@pytest.mark.parametrize("day", ["2024-01-08", "2024-07-08", "2024-03-11", "2024-11-04"])
def test_one_second_after_the_us_open_is_invisible(
    us_dataset_dir: Path, tmp_path: Path, day: str
) -> None:
    ds = _with_records(us_dataset_dir, tmp_path / "us", _edge_rows(day, NEW_YORK, "AAPL"))
    view = MarketView(ds, day)
    assert view.decision_time == _open_utc(day, NEW_YORK)
    assert _visible(view) == {f"{day}-before", f"{day}-at"}
    assert view.record(f"{day}-at").title == "at the open"
    with pytest.raises(KeyError, match="is available"):
        view.record(f"{day}-after")
    next_day = pd.Timestamp(day) + pd.Timedelta(days=1)
    assert _visible(MarketView(ds, next_day)) == {f"{day}-{n}" for n in ("before", "at", "after")}
    assert _visible(MarketView(ds, pd.Timestamp(day) - pd.Timedelta(days=1))) == set()


def test_one_second_after_the_shanghai_open_is_invisible(
    cn_dataset_dir: Path, tmp_path: Path
) -> None:
    day = "2024-03-11"
    ds = _with_records(cn_dataset_dir, tmp_path / "cn", _edge_rows(day, SHANGHAI, "SH600519"))
    view = MarketView(ds, day)
    assert view.decision_time == pd.Timestamp(f"{day} 01:30", tz="UTC")
    assert _visible(view) == {f"{day}-before", f"{day}-at"}


def test_a_record_without_ts_available_is_never_visible(
    us_dataset_dir: Path, tmp_path: Path
) -> None:
    rows = _edge_rows("2024-01-08", NEW_YORK, "AAPL")
    rows.append({"record_id": "never", "kind": "news", "symbols": "AAPL", "title": "no stamp"})
    ds = _with_records(us_dataset_dir, tmp_path / "us", rows)
    assert pd.isna(ds.records.set_index("record_id").loc["never", "ts_available"])
    for day in ("1990-01-01", "2024-01-09", "2262-04-10"):
        view = MarketView(ds, day)
        assert "never" not in _visible(view)
        assert "never" not in set(view.records(symbols="AAPL", kinds="news")["record_id"])
        with pytest.raises(KeyError, match="no record 'never' is available"):
            view.record("never")
    finding = next(f for f in ds.manifest.findings if f.kind == "record_missing_available")
    assert finding.count == 1 and finding.examples == ["AAPL@- never"]


def test_a_dataset_without_records_has_none(synth_dataset_dir: Path) -> None:
    ds = load_dataset(synth_dataset_dir)
    assert ds.records is None and "records" not in ds.manifest.files
    view = MarketView(ds, ds.panel.dates[100])
    frame = view.records(symbols="SH600000", limit=5)
    assert frame.empty and tuple(frame.columns) == RECORD_COLUMNS
    assert str(frame["ts_available"].dtype) == "datetime64[ns, UTC]"
    assert view.record_list() == []
    with pytest.raises(KeyError):
        view.record("news-0")


def _expected(ds: Dataset, day: str) -> pd.DataFrame:
    """Visible records computed with plain pandas from the loaded table."""
    recs = ds.records
    return recs[recs["ts_available"] <= _open_utc(day, NEW_YORK)]


@pytest.mark.parametrize("day", ["2025-01-02", "2025-03-10", "2025-07-01", "2025-10-08"])
def test_filters_limit_and_order_on_real_records(us_records_dir: Path, day: str) -> None:
    ds = load_dataset(us_records_dir)
    view = MarketView(ds, day)
    expected = _expected(ds, day)
    got = view.records()
    assert list(got["record_id"]) == list(expected["record_id"])
    assert got["ts_available"].is_monotonic_increasing  # newest last
    assert (got["ts_available"] <= view.decision_time).all()
    coin = view.records(symbols="COIN")
    assert list(coin["record_id"]) == [
        r for r, s in zip(expected["record_id"], expected["symbols"], strict=True) if "COIN" in s
    ]
    two = view.records(symbols=["COIN", "TSLA"], kinds="filing")
    named = ~expected["symbols"].map({"COIN", "TSLA"}.isdisjoint).astype(bool)
    want = expected[(expected["kind"] == "filing") & named]
    assert list(two["record_id"]) == list(want["record_id"])
    assert set(two["symbols"].map(lambda s: s[0])) <= {"COIN", "TSLA"}
    assert list(view.records(limit=7)["record_id"]) == list(expected["record_id"].tail(7))
    assert view.records(limit=0).empty
    week = view.records(lookback="7D")
    since = view.decision_time - pd.Timedelta(days=7)
    assert list(week["record_id"]) == list(
        expected.loc[expected["ts_available"] > since, "record_id"]
    )
    typed = view.record_list(symbols="NFLX", limit=3)
    assert [r.record_id for r in typed] == list(view.records(symbols="NFLX", limit=3)["record_id"])
    if typed:
        assert view.record(typed[-1].record_id) == typed[-1]


def test_bad_arguments_are_config_errors(us_records_dir: Path) -> None:
    view = MarketView(load_dataset(us_records_dir), "2025-03-10")
    with pytest.raises(ConfigError, match="limit"):
        view.records(limit=-1)
    with pytest.raises(ConfigError, match="lookback"):
        view.records(lookback="-2D")
    with pytest.raises(ConfigError, match="lookback"):
        view.records(lookback="soon")


def test_returned_frames_are_copies(us_records_dir: Path) -> None:
    view = MarketView(load_dataset(us_records_dir), "2025-03-10")
    first = view.records(limit=3)
    first.loc[0, "title"] = "tampered"
    assert view.records(limit=3).loc[0, "title"] != "tampered"


def test_the_news_delay_decides_visibility(
    us_records_dir: Path, text_dir: Path, tmp_path: Path
) -> None:
    """With delay 0 an article is visible as soon as it is published; with the default 30
    minutes, those published in the last half hour before the open are not (yet)."""
    ds_dir = tmp_path / "no_delay"
    shutil.copytree(us_records_dir, ds_dir)
    news = (text_dir / "alpaca_news_COIN.parquet",)
    import_records(RecordsImport(dataset=ds_dir, news=news, delay=pd.Timedelta(0)))
    fast, slow = load_dataset(ds_dir), load_dataset(us_records_dir)
    raw = pd.read_parquet(news[0])
    published = raw["datetime"].dt.tz_localize("UTC")
    late_total = 0
    for day in pd.bdate_range("2025-01-02", "2025-10-08"):
        cut = _open_utc(str(day.date()), NEW_YORK)
        n_fast = len(MarketView(fast, day).records(symbols="COIN", kinds="news"))
        n_slow = len(MarketView(slow, day).records(symbols="COIN", kinds="news"))
        late = int(((published > cut - pd.Timedelta(minutes=30)) & (published <= cut)).sum())
        assert n_fast == int((published <= cut).sum())
        assert n_fast - n_slow == late
        late_total += late
    assert late_total > 10  # the window matters on the real feed (pre-open articles)


# ------------------------------------------------------------ future perturbation
DAYS = ("2025-01-06", "2025-03-07", "2025-03-10", "2025-06-14", "2025-08-01", "2025-10-08")
QUERIES = (
    {},
    {"symbols": "COIN"},
    {"symbols": ["NFLX", "TSLA", "AMZN"]},
    {"kinds": "filing"},
    {"kinds": ["news"], "limit": 25},
    {"limit": 1},
    {"lookback": "3D"},
)


def _parquet_bytes(frame: pd.DataFrame) -> bytes:
    data = frame.assign(symbols=[list(s) for s in frame["symbols"]])
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(data, preserve_index=False), sink)
    return sink.getvalue()


def _view_bytes(view: MarketView) -> list[bytes]:
    """Every output of the view, serialised: bars, membership, calendar and records."""
    out = _snapshot(view)
    out.append(str(view.decision_time).encode())
    for query in QUERIES:
        frame = view.records(**query)
        out.append(_parquet_bytes(frame))
        out.append(frame.to_json(orient="records", date_format="iso", date_unit="ns").encode())
        typed = view.record_list(**query)
        out.append(json.dumps([r.model_dump(mode="json") for r in typed]).encode())
    return out


def _perturb(ds: Dataset, day: str, mode: str, seed: int) -> pd.DataFrame:
    """Records with everything available after `day`'s open rewritten or deleted."""
    rng = np.random.default_rng(seed)
    recs = ds.records.copy()
    future = (recs["ts_available"] > _open_utc(day, NEW_YORK)).to_numpy()
    if mode == "delete":
        return recs[~future].reset_index(drop=True)
    n = int(future.sum())
    jitter = pd.to_timedelta(rng.integers(1, 10**6, size=n), unit="s")
    recs.loc[future, "ts_available"] = recs.loc[future, "ts_available"] + jitter
    recs.loc[future, "ts_event"] = recs.loc[future, "ts_available"] - pd.Timedelta(days=400)
    recs.loc[future, "title"] = [f"leak {i} {rng.random()}" for i in range(n)]
    recs.loc[future, "body"] = [f"the future: {rng.random()}" for _ in range(n)]
    recs.loc[future, "symbols"] = pd.Series([("COIN", "NFLX")] * n, index=recs.index[future])
    recs.loc[future, "kind"] = rng.choice(["news", "filing", "macro"], size=n)
    recs["sha256"] = [
        content_sha256(t, b) for t, b in zip(recs["title"], recs["body"], strict=True)
    ]
    return recs


def _future_bars_noise(ds: Dataset, day: str, seed: int) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    bars, index = ds.bars.copy(), ds.index.copy()
    late = (bars["date"] >= pd.Timestamp(day)).to_numpy()
    for col in ("open", "high", "low", "close", "volume"):
        bars.loc[late, col] = rng.uniform(1, 1000, size=late.sum())
    late_idx = (index["date"] >= pd.Timestamp(day)).to_numpy()
    index.loc[late_idx, "close"] = rng.uniform(1, 1000, size=late_idx.sum())
    return {"bars": bars, "index": index}


def _rewritten(src: Path, dest: Path, records: pd.DataFrame, tables: dict) -> Dataset:
    """A copy of the dataset with `records` and `tables` written through the real writer."""
    shutil.copytree(src, dest)
    manifest = load_dataset(dest).manifest
    attach_records(dest, manifest, records, list(manifest.findings), list(manifest.sources))
    manifest = load_dataset(dest).manifest
    files = {**manifest.files, **{n: write_table(dest, n, f) for n, f in tables.items()}}
    write_manifest(dest, manifest.model_copy(update={"files": files}))
    return load_dataset(dest)  # verified: checksums, schema, each record's sha256


@pytest.mark.parametrize("day", DAYS)
@pytest.mark.parametrize("mode", ["rewrite", "delete"])
def test_future_records_and_bars_never_change_the_view(
    us_records_dir: Path, tmp_path: Path, day: str, mode: str
) -> None:
    ds = load_dataset(us_records_dir)
    seed = sum(map(ord, day + mode))
    altered = _perturb(ds, day, mode, seed)
    other = _rewritten(
        us_records_dir, tmp_path / "other", altered, _future_bars_noise(ds, day, seed)
    )
    assert not other.records.equals(ds.records)
    assert _view_bytes(MarketView(ds, day)) == _view_bytes(MarketView(other, day))


def test_the_snapshot_sees_a_change_to_a_visible_record(
    us_records_dir: Path, tmp_path: Path
) -> None:
    """Control: altering one record available at the decision instant changes the bytes."""
    ds = load_dataset(us_records_dir)
    day = "2025-03-10"
    recs = ds.records.copy()
    last = int(np.flatnonzero((recs["ts_available"] <= _open_utc(day, NEW_YORK)).to_numpy())[-1])
    recs.loc[last, "body"] = recs.loc[last, "body"] + " (edited)"
    recs.loc[last, "sha256"] = content_sha256(recs.loc[last, "title"], recs.loc[last, "body"])
    other = _rewritten(us_records_dir, tmp_path / "other", recs, {})
    assert _view_bytes(MarketView(ds, day)) != _view_bytes(MarketView(other, day))
