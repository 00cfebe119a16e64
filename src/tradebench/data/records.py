"""Timestamped text evidence (news, filings, macro releases): the `records` table.

One row per item: `record_id, kind, symbols, ts_event, ts_available, source, title, body,
url, sha256`. `ts_event` is when the thing happened or was published (nullable);
`ts_available` is the first instant an agent may see it (UTC). The view shows a record at
decision day T when `ts_available <= decision_time(T)` (`tradebench.data.clock`); a record
with no `ts_available` is kept, flagged at import and never visible.

`sha256` is the hex sha256 of `title + "\\n\\n" + body` (UTF-8) and is re-checked on load.
`record_id` is `<kind>-<16 hex>` from the item's identity (kind, source, url, ts_event,
symbols, sha256), unless the source gives its own ids; exact repeats get `-2`, `-3`, ...
On disk and in every frame rows are ordered by `ts_available` (never-available last), then
`record_id`. In memory `symbols` is a tuple of str (a list<string> column on disk).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import pandas as pd
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

from tradebench.data.schema import RECORDS
from tradebench.errors import DataError, DatasetCorruptError

RECORD_COLUMNS = tuple(RECORDS.names)
NEVER = np.iinfo(np.int64).max
"""`ts_available` of a record without one, as int64 ns: later than every decision time."""


class Record(BaseModel):
    """One evidence record, as the view hands it out."""

    model_config = ConfigDict(frozen=True)

    record_id: str = Field(description="unique id within the dataset")
    kind: str = Field(description="category: news, filing, macro, ...")
    symbols: tuple[str, ...] = Field(description="symbols the record is about (may be empty)")
    ts_event: datetime | None = Field(description="when it happened or was published, UTC")
    ts_available: datetime | None = Field(description="first instant it may be seen, UTC")
    source: str = Field(description="publisher or feed, e.g. benzinga, sec-edgar")
    title: str = Field(description="headline (may be empty)")
    body: str = Field(description="plain text (may be empty)")
    url: str | None = Field(description="where the original lives, if known")
    sha256: str = Field(description='hex sha256 of title + "\\n\\n" + body, UTF-8')


def content_sha256(title: str, body: str) -> str:
    """The `sha256` column: hex sha256 of `title + "\\n\\n" + body` in UTF-8."""
    return hashlib.sha256(f"{title}\n\n{body}".encode()).hexdigest()


def _identity(row: tuple) -> str:
    kind, source, url, ts_event, symbols, sha = row
    stamp = "" if pd.isna(ts_event) else pd.Timestamp(ts_event).isoformat()
    link = url if isinstance(url, str) else ""  # a missing url is None or NaN
    text = "\x1f".join([kind, source, link, stamp, ",".join(symbols), sha])
    return f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def canonical_records(frame: pd.DataFrame, where: str) -> pd.DataFrame:
    """Normalise importer output to the records table: types, sha256, ids and row order.

    `frame` needs `kind, symbols, ts_event, ts_available, source, title, body, url`;
    `record_id` is optional (null ids are generated).

    Raises:
        DataError: a column is missing, a kind is empty, or given ids repeat.
    """
    missing = [
        c for c in RECORD_COLUMNS if c not in frame.columns and c not in ("record_id", "sha256")
    ]
    if missing:
        raise DataError(f"{where}: records lack columns {missing}")
    out = pd.DataFrame(
        {
            "kind": [k.strip() for k in _text(frame["kind"])],
            "symbols": [_symbols(v) for v in frame["symbols"]],
            "ts_event": _utc(frame["ts_event"]),
            "ts_available": _utc(frame["ts_available"]),
            "source": _text(frame["source"]),
            "title": _text(frame["title"]),
            "body": _text(frame["body"]),
            "url": [None if _blank(v) else str(v) for v in frame["url"]],
        }
    )
    if (out["kind"] == "").any():
        raise DataError(f"{where}: {int((out['kind'] == '').sum())} records have an empty kind")
    out["sha256"] = [content_sha256(t, b) for t, b in zip(out["title"], out["body"], strict=True)]
    given = frame["record_id"] if "record_id" in frame else pd.Series([None] * len(frame))
    out.insert(0, "record_id", _ids(out, given.to_numpy(dtype=object), where))
    return sort_records(out)


def _ids(out: pd.DataFrame, given: np.ndarray, where: str) -> list[str]:
    explicit = [None if _blank(v) else str(v) for v in given]
    _refuse_repeats([i for i in explicit if i is not None], where)
    cols = ["kind", "source", "url", "ts_event", "symbols", "sha256"]
    auto = [_identity(r) for r in out[cols].itertuples(index=False, name=None)]
    order = np.lexsort((np.arange(len(out)), available_ns(out["ts_available"])))
    seen: dict[str, int] = {}
    ids: list[str] = [""] * len(out)
    for pos in order:
        if explicit[pos] is not None:
            ids[pos] = explicit[pos]
            continue
        base = auto[pos]
        seen[base] = seen.get(base, 0) + 1
        ids[pos] = base if seen[base] == 1 else f"{base}-{seen[base]}"
    _refuse_repeats(ids, where)  # a given id equal to a generated one
    return ids


def _refuse_repeats(ids: list[str], where: str) -> None:
    repeats = sorted(i for i, n in Counter(ids).items() if n > 1)
    if repeats:
        raise DataError(f"{where}: record ids repeat, e.g. {repeats[:5]}; make them unique")


def sort_records(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows in canonical order: `ts_available` ascending (missing last), then `record_id`."""
    return frame.sort_values(
        ["ts_available", "record_id"], na_position="last", kind="stable"
    ).reset_index(drop=True)[list(RECORD_COLUMNS)]


def _utc(values: pd.Series) -> pd.Series:
    stamps = pd.to_datetime(values)
    if stamps.dt.tz is None:
        raise DataError("record timestamps must be time-zone aware (UTC) before canonicalising")
    return stamps.dt.tz_convert("UTC").astype("datetime64[ns, UTC]").reset_index(drop=True)


def available_ns(stamps: pd.Series) -> np.ndarray:
    """`ts_available` as int64 ns, with `NEVER` where a record has none."""
    stamps = stamps.astype("datetime64[ns, UTC]")
    return np.where(stamps.isna().to_numpy(), NEVER, stamps.array.asi8)


def _blank(value: object) -> bool:
    if isinstance(value, str):
        return value == ""
    return value is None or bool(pd.isna(value))


def _text(values: pd.Series) -> list[str]:
    return ["" if _blank(v) else str(v) for v in values]


def _symbols(value: object) -> tuple[str, ...]:
    """Symbols from a list/tuple/array, or a `,`/`;`-separated string; blanks dropped."""
    if isinstance(value, str):
        items: Iterable[object] = value.replace(";", ",").split(",")
    elif isinstance(value, (list, tuple, np.ndarray)):
        items = value
    elif _blank(value):
        items = ()
    else:
        items = (value,)
    return tuple(str(s).strip() for s in items if str(s).strip())


def empty_records() -> pd.DataFrame:
    """A records frame with no rows and the table's column types."""
    return records_to_pandas(RECORDS.empty_table())


def records_to_pandas(table: pa.Table) -> pd.DataFrame:
    """Arrow records table -> frame: UTC ns stamps, `symbols` as tuples of str."""
    frame = table.to_pandas()
    frame["symbols"] = [tuple(str(s) for s in v) if v is not None else () for v in frame["symbols"]]
    for col in ("ts_event", "ts_available"):
        frame[col] = frame[col].astype("datetime64[ns, UTC]")
    return frame[list(RECORD_COLUMNS)]


def records_to_arrow(frame: pd.DataFrame) -> pa.Table:
    """Records frame -> Arrow table in the on-disk schema (`symbols` as list<string>)."""
    data = frame[list(RECORD_COLUMNS)].assign(symbols=[list(s) for s in frame["symbols"]])
    return pa.Table.from_pandas(data, schema=RECORDS, preserve_index=False)


def validate_records(frame: pd.DataFrame, where: str) -> None:
    """Reject repeated or missing ids, empty kinds and rows whose text no longer matches
    their `sha256`.

    Raises:
        DatasetCorruptError: naming the file and example record ids.
    """
    fix = "re-import the records with `tradebench data import-records` (or restore the file)"
    dup = frame["record_id"].duplicated(keep=False)
    if dup.any():
        ids = sorted(set(frame.loc[dup, "record_id"]))[:5]
        raise DatasetCorruptError(f"{where}: {int(dup.sum())} rows repeat record ids {ids}; {fix}")
    if frame["record_id"].isna().any() or (frame["kind"].fillna("") == "").any():
        raise DatasetCorruptError(f"{where}: records without an id or a kind; {fix}")
    actual = [
        content_sha256(t or "", b or "") for t, b in zip(frame["title"], frame["body"], strict=True)
    ]
    bad = frame["sha256"].to_numpy(dtype=object) != np.asarray(actual, dtype=object)
    if bad.any():
        ids = list(frame.loc[bad, "record_id"].head(5))
        raise DatasetCorruptError(
            f"{where}: {int(bad.sum())} records' title/body no longer match their sha256 "
            f"(e.g. {ids}); {fix}"
        )


def to_record_list(frame: pd.DataFrame) -> list[Record]:
    """Typed `Record`s from a records frame (e.g. the output of `MarketView.records`)."""
    out = []
    for row in frame[list(RECORD_COLUMNS)].itertuples(index=False):
        data = row._asdict()
        for col in ("ts_event", "ts_available"):
            data[col] = None if pd.isna(data[col]) else data[col].to_pydatetime()
        data["url"] = None if _blank(data["url"]) else data["url"]
        out.append(Record(**data))
    return out


@dataclass(frozen=True)
class RecordIndex:
    """Records sorted for the point-in-time gate, built once per dataset.

    Attributes:
        frame: the records in canonical order (see module docstring).
        available_ns: `ts_available` as int64 ns, ascending; `NEVER` where missing.
        kinds: `kind` per row.
        by_symbol: symbol -> ascending row positions of the records naming it.
        by_id: record id -> row position.
    """

    frame: pd.DataFrame
    available_ns: np.ndarray
    kinds: np.ndarray
    by_symbol: dict[str, np.ndarray]
    by_id: dict[str, int]

    def visible(
        self,
        cutoff_ns: int,
        symbols: Iterable[str] | None = None,
        kinds: Iterable[str] | None = None,
        after_ns: int | None = None,
        limit: int | None = None,
    ) -> np.ndarray:
        """Row positions with `after_ns < ts_available <= cutoff_ns`, filtered, ascending."""
        stop = int(np.searchsorted(self.available_ns, cutoff_ns, side="right"))
        start = (
            0 if after_ns is None else int(np.searchsorted(self.available_ns, after_ns, "right"))
        )
        if symbols is None:
            pos = np.arange(start, stop, dtype=np.int64)
        else:
            hits = [self.by_symbol.get(s, np.empty(0, np.int64)) for s in symbols]
            pos = np.unique(np.concatenate([np.empty(0, np.int64), *hits]))
            pos = pos[(pos >= start) & (pos < stop)]
        if kinds is not None:
            pos = pos[np.isin(self.kinds[pos], np.asarray(list(kinds), dtype=object))]
        if limit is not None:
            pos = pos[len(pos) - min(limit, len(pos)) :]
        return pos


def build_record_index(frame: pd.DataFrame) -> RecordIndex:
    """Sort the records and index them by availability, symbol and id."""
    frame = sort_records(frame)
    ns = available_ns(frame["ts_available"])
    exploded = frame["symbols"].explode()
    exploded = exploded[exploded.notna()]
    by_symbol = {
        str(sym): np.unique(pos.to_numpy(dtype=np.int64))
        for sym, pos in pd.Series(exploded.index, index=exploded.to_numpy()).groupby(level=0)
    }
    for arr in (ns, *by_symbol.values()):
        arr.flags.writeable = False
    kinds = frame["kind"].to_numpy(dtype=object)
    kinds.flags.writeable = False
    by_id = {str(r): i for i, r in enumerate(frame["record_id"])}
    return RecordIndex(frame=frame, available_ns=ns, kinds=kinds, by_symbol=by_symbol, by_id=by_id)
