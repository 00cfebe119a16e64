"""Read an Alpaca (Benzinga) news file into records.

Input columns: `datetime` (publish time), `title`, `content` (HTML), `summary`, `url`,
`source`, `equity` (the symbol; `symbols` is also accepted, as a list or `,`-string).
`datetime` is UTC: the shared files store it naive, and their "CNBC Halftime Report Final
Trades" items (13:00 New York) sit at 17:01 in EDT months and 18:01 in EST months.

Each article becomes a `news` record with `ts_event` = publish time and `ts_available` =
publish time + `delay` (default 30 minutes: time for a feed to deliver and a reader to see
it). `body` is the article's plain text (HTML removed), or the summary when the article
text is empty. The file's own `date` column (a trading day the source assigned, rolling
over at 16:00 of the stamp's clock, i.e. mid-session in New York) is ignored: it would let
an article published during day T's session count as known before T's open.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tradebench.data.importers.files import read_table, require_columns
from tradebench.data.importers.text import SourceRecords, as_utc, html_to_text
from tradebench.errors import ConfigError

DEFAULT_DELAY = pd.Timedelta(minutes=30)
REQUIRED = ["datetime", "title"]


def read_alpaca_news(
    path: Path, delay: pd.Timedelta = DEFAULT_DELAY, naive_tz: str = "UTC"
) -> SourceRecords:
    """News records from one Alpaca news file (CSV or Parquet).

    Args:
        path: the file.
        delay: added to the publish time to get `ts_available` (>= 0).
        naive_tz: zone of time-zone-naive `datetime` values (the shared files: UTC).

    Raises:
        ConfigError: a negative delay.
        DataError: the file is unreadable or lacks `datetime`/`title`.
    """
    delay = pd.Timedelta(delay)
    if delay < pd.Timedelta(0):
        raise ConfigError(f"news delay {delay} is negative; use a delay >= 0 minutes")
    raw = read_table(path, REQUIRED)
    if "equity" not in raw and "symbols" not in raw:
        require_columns(raw, ["equity"], path)
    published = as_utc(raw["datetime"], naive_tz).reset_index(drop=True)
    content = _column(raw, "content").map(html_to_text)
    summary = _column(raw, "summary").map(html_to_text)
    symbols = raw["symbols"] if "symbols" in raw else raw["equity"]
    frame = pd.DataFrame(
        {
            "kind": "news",
            "symbols": symbols.to_numpy(dtype=object),
            "ts_event": published,
            "ts_available": published + delay,
            "source": _column(raw, "source").replace("", "alpaca").to_numpy(dtype=object),
            "title": _column(raw, "title").map(html_to_text).to_numpy(dtype=object),
            "body": content.where(content != "", summary).to_numpy(dtype=object),
            "url": _column(raw, "url").to_numpy(dtype=object),
        }
    )
    return SourceRecords(frame=frame, label=Path(path).name)


def _column(raw: pd.DataFrame, name: str) -> pd.Series:
    if name not in raw:
        return pd.Series([""] * len(raw), index=raw.index, dtype=object)
    return raw[name].astype(object).where(raw[name].notna(), "").astype(str)
