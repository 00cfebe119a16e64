"""`tradebench data import` shows its phases while it works (the bars file row by row) and
ends with what it imported, checked against the source file read here with pyarrow."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from typer.testing import CliRunner

from tradebench.cli import app
from tradebench.data.importers.long import LongImport, import_long

runner = CliRunner()
SYMBOLS = ("AAPL", "MSFT")
INDEX = "SPY"
START, END = "2024-01-02", "2024-03-28"


def _source(shared_data: Path) -> Path:
    return shared_data / "us" / "sp500_daily_adj_2005_2025.parquet"


def _args(shared_data: Path, out: Path) -> list[str]:
    return [
        "data",
        "import",
        str(_source(shared_data)),
        "-o",
        str(out),
        "--market",
        "us",
        "--index-symbol",
        INDEX,
        "--symbols",
        ",".join(SYMBOLS),
        "--start",
        START,
        "--end",
        END,
    ]


def _expected(shared_data: Path) -> tuple[int, int, str, str, int]:
    """(bars, symbols, first day, last day, index days) of the selection, from the file."""
    table = pq.read_table(_source(shared_data), columns=["date", "symbol"])
    dates = pc.cast(table["date"], "timestamp[ns]")
    day = pc.strftime(dates, "%Y-%m-%d")
    window = pc.and_(pc.greater_equal(day, START), pc.less_equal(day, END))
    bars = table.filter(pc.and_(window, pc.is_in(table["symbol"], pa.array(list(SYMBOLS)))))
    index = table.filter(pc.and_(window, pc.equal(table["symbol"], INDEX)))
    days = pc.strftime(pc.cast(bars["date"], "timestamp[ns]"), "%Y-%m-%d")
    symbols = len(pc.unique(bars["symbol"]))
    return len(bars), symbols, pc.min(days).as_py(), pc.max(days).as_py(), len(index)


def test_the_import_ends_with_what_it_imported(shared_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "us"
    result = runner.invoke(app, _args(shared_data, out))
    assert result.exit_code == 0, result.output
    bars, symbols, first, last, index_days = _expected(shared_data)
    assert (bars, symbols, index_days) == (122, 2, 61)  # 61 trading days in Q1 2024
    line = next(x for x in result.output.splitlines() if x.startswith("imported "))
    assert line == (
        f"imported {bars:,} bars of {symbols} symbols, {first} .. {last}, index {INDEX} "
        f"({index_days} days), 0 findings into {out}"
    )
    # not a terminal: no bar drawn, only the result lines
    assert "reading sp500" not in result.output and "\x1b[" not in result.output


def test_the_bar_follows_the_rows_read(shared_data: Path, tmp_path: Path) -> None:
    heard: list[tuple[str, int, int]] = []
    manifest = import_long(
        LongImport(
            source=_source(shared_data),
            out=tmp_path / "us",
            market="us",
            index_symbol=INDEX,
            symbols=SYMBOLS,
            start=START,
            end=END,
        ),
        lambda phase, done, total: heard.append((phase, done, total)),
    )
    rows = pq.ParquetFile(_source(shared_data)).metadata.num_rows
    reading = [(d, t) for p, d, t in heard if p == f"reading {_source(shared_data).name}"]
    assert reading[0] == (0, rows) and reading[-1] == (rows, rows)
    done = [d for d, _ in reading]
    assert len(reading) > 2 and done == sorted(done)  # batch by batch, never backwards
    phases = list(dict.fromkeys(p for p, _, _ in heard))
    tables = sorted(p.name for p in (tmp_path / "us").glob("*.parquet"))
    assert [p for p in phases if p.startswith("writing ")] == [
        f"writing {name}" for name in ("bars.parquet", "instruments.parquet", "index.parquet")
    ]
    assert sorted(manifest.files[t.split(".")[0]].path for t in tables) == tables
    writing = [(d, t) for p, d, t in heard if p.startswith("writing ")]
    assert writing == [(i, len(tables)) for i in range(len(tables))]
    assert phases[1:] == [
        f"selecting rows of {rows:,}",
        f"converting prices of {manifest.n_bars + 61:,} rows",
        "reading the index",
        f"checking {manifest.n_bars:,} bars",
        "checking adjustment factors",
        "sorting bars by symbol and date",
        *(f"writing {name}" for name in ("bars.parquet", "instruments.parquet", "index.parquet")),
    ]


def _on_a_terminal(args: list[str]) -> str:
    """Run the CLI with its output on a pseudo-terminal; all it wrote there."""
    main, child = pty.openpty()
    env = {**os.environ, "COLUMNS": "160", "TERM": "xterm"}
    command = [sys.executable, "-m", "tradebench.cli", *args]
    process = subprocess.Popen(command, stdout=child, stderr=child, env=env)
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(main)
    assert process.wait() == 0, b"".join(chunks).decode(errors="replace")
    return b"".join(chunks).decode(errors="replace")


def test_a_terminal_sees_the_phases(shared_data: Path, tmp_path: Path) -> None:
    shown = _on_a_terminal(_args(shared_data, tmp_path / "us"))
    # the bar draws each phase it is in and clears itself; the result line stays
    source = _source(shared_data).name
    rows = pq.ParquetFile(_source(shared_data)).metadata.num_rows
    assert f"reading {source}" in shown and f"{rows}/{rows}" in shown
    assert "writing bars.parquet" in shown
    assert "imported 122 bars of 2 symbols" in shown
