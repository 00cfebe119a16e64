"""`tradebench data`: import, pull, export, synthesise and inspect datasets."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.table import Table

from tradebench.cli.counting import phase_bar
from tradebench.cli.kit import console, exits_on_error
from tradebench.errors import ConfigError

if TYPE_CHECKING:
    from tradebench.data.schema import Manifest

app = typer.Typer(
    help="Create and inspect datasets (a folder of Parquet tables plus manifest.json).\n\n"
    "Example: tradebench data synth -o data/synth-cn --seed 0",
    no_args_is_help=True,
)

Market = Literal["cn", "us"]


@app.command("import")
@exits_on_error
def import_cmd(
    source: Annotated[Path, typer.Argument(help="Long CSV/Parquet file, or a Qlib data folder.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Dataset folder to write.")],
    fmt: Annotated[str, typer.Option("--format", help="`long` table or `qlib` folder.")] = "long",
    market: Annotated[str, typer.Option(help="Market rules: cn (A-share) or us.")] = "cn",
    prices: Annotated[
        str, typer.Option(help="long: are OHLC columns `adjusted` (raw = price/factor) or `raw`?")
    ] = "adjusted",
    index: Annotated[
        Path | None, typer.Option(help="Index series file (date, close, ...).")
    ] = None,
    index_symbol: Annotated[
        str | None, typer.Option(help="Index symbol (in --index, or a bars symbol such as SPY).")
    ] = None,
    membership: Annotated[
        Path | None, typer.Option(help="Membership intervals: symbol, name, opt-in, opt-out.")
    ] = None,
    sectors: Annotated[Path | None, typer.Option(help="symbol/ticker -> sector file.")] = None,
    symbols: Annotated[str | None, typer.Option(help="Comma-separated subset.")] = None,
    start: Annotated[str | None, typer.Option(help="First date kept (YYYY-MM-DD).")] = None,
    end: Annotated[str | None, typer.Option(help="Last date kept (YYYY-MM-DD).")] = None,
    universe: Annotated[str, typer.Option(help="qlib: instruments file to import.")] = "all",
    membership_universe: Annotated[
        str | None, typer.Option(help="qlib: instruments file used as membership, e.g. csi300.")
    ] = None,
    name: Annotated[str | None, typer.Option(help="Dataset name (default: source name).")] = None,
) -> None:
    """Import real bars into a dataset and report every data problem found.

    Examples:

      tradebench data import bars.parquet -o data/cn --market cn --index idx.csv
      --index-symbol SH000300 --membership csi300_membership.csv

      tradebench data import ~/.qlib/qlib_data/cn_data --format qlib -o data/qlib
      --membership-universe csi300 --index-symbol SH000300
    """
    from tradebench.data.importers.long import LongImport, import_long
    from tradebench.data.importers.qlib import QlibImport, import_qlib

    if fmt == "long":
        job, run = (
            LongImport(
                source=source,
                out=out,
                market=_market(market),
                prices=_prices(prices),
                name=name,
                index_file=index,
                index_symbol=index_symbol,
                membership_file=membership,
                sectors_file=sectors,
                start=start,
                end=end,
                symbols=tuple(s.strip() for s in symbols.split(",")) if symbols else (),
            ),
            import_long,
        )
    elif fmt == "qlib":
        job, run = (
            QlibImport(
                source=source,
                out=out,
                market=_market(market),
                universe=universe,
                membership_universe=membership_universe,
                index_symbol=index_symbol,
                name=name,
            ),
            import_qlib,
        )
    else:
        raise ConfigError(f"unknown --format {fmt!r}; use `long` or `qlib`")
    with phase_bar(f"importing {source.name}") as progress:
        manifest = run(job, progress)
    console.print(imported_line(manifest, out), highlight=False)
    _render_info(out)


def imported_line(manifest: Manifest, out: Path) -> str:
    """What an import wrote, in one line: bars, symbols, the calendar, the index days, the
    membership intervals, the findings and the folder."""
    files = manifest.files
    parts = [
        f"imported {manifest.n_bars:,} bars of {manifest.n_symbols:,} symbols",
        f"{manifest.calendar_start} .. {manifest.calendar_end}",
    ]
    if manifest.index_symbol and "index" in files:
        parts.append(f"index {manifest.index_symbol} ({files['index'].rows:,} days)")
    if "membership" in files:
        parts.append(f"{files['membership'].rows:,} membership intervals")
    parts.append(f"{len(manifest.findings)} findings")
    return ", ".join(parts) + f" into {out}"


@app.command("import-records")
@exits_on_error
def import_records_cmd(
    dataset: Annotated[
        Path, typer.Argument(help="Existing dataset folder (from `data import` or `data synth`).")
    ],
    news: Annotated[
        list[Path] | None,
        typer.Option(
            "--news",
            help="Alpaca news file (datetime, title, content, url, equity); repeat per file. "
            "ts_available = publish time + --delay-minutes.",
        ),
    ] = None,
    filings: Annotated[
        list[Path] | None,
        typer.Option(
            "--filings",
            help="EDGAR filings file (ticker, type, content, document_url, utc_timestamp); "
            "ts_available = acceptance time, ts_event = period in the document name.",
        ),
    ] = None,
    long: Annotated[
        list[Path] | None,
        typer.Option(
            "--long",
            help="Generic CSV/Parquet with kind, ts_available, title/body (optional "
            "record_id, symbols, ts_event, source, url); repeat per file.",
        ),
    ] = None,
    delay_minutes: Annotated[
        float,
        typer.Option(
            "--delay-minutes",
            min=0.0,
            max=525_600.0,
            help="News delivery delay added to the publish time.",
        ),
    ] = 30.0,
    naive_tz: Annotated[
        str, typer.Option("--naive-tz", help="--long: zone of stamps written without one.")
    ] = "UTC",
) -> None:
    """Attach timestamped evidence (news, filings, other text) to a dataset as records.parquet.

    Every record carries ts_available, the first instant an agent may see it (UTC). A view
    for trading day T shows a record only when ts_available <= T's decision time: the
    market's 09:30 open on T (New York for us, Shanghai for cn). Records without a
    ts_available are kept but never shown. Problems (missing stamps, duplicates, unknown
    symbols, stamps before the event) are listed as findings, never dropped. Re-running
    replaces the dataset's records.

    Examples:

      tradebench data import-records data/us --news alpaca_news_COIN.parquet
      --news alpaca_news_NFLX.parquet --filings filing_data.parquet --delay-minutes 30

      tradebench data import-records data/cn --long announcements.csv --naive-tz Asia/Shanghai
    """
    import pandas as pd
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from tradebench.data.importers.records import RecordsImport, import_records, source_count

    job = RecordsImport(
        dataset=dataset,
        news=tuple(news or ()),
        filings=tuple(filings or ()),
        long=tuple(long or ()),
        delay=pd.Timedelta(minutes=delay_minutes),
        naive_tz=naive_tz,
    )
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("reading record files", total=source_count(job))
        result = import_records(job, lambda name: progress.advance(task))
    kinds = ", ".join(f"{k} {n:,}" for k, n in result.by_kind.items())
    console.print(f"wrote [bold]{dataset / 'records.parquet'}[/] ({result.n_records:,}: {kinds})")
    _render_info(dataset)


@app.command("export")
@exits_on_error
def export_cmd(
    path: Annotated[Path, typer.Argument(help="Dataset folder to export.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write (new or empty).")],
    fmt: Annotated[str, typer.Option("--format", help="Only `qlib`: a Qlib data folder.")] = "qlib",
    symbols: Annotated[str | None, typer.Option(help="Comma-separated subset.")] = None,
    start: Annotated[str | None, typer.Option(help="First date kept (YYYY-MM-DD).")] = None,
    end: Annotated[str | None, typer.Option(help="Last date kept (YYYY-MM-DD).")] = None,
    membership_universe: Annotated[
        str, typer.Option(help="Instruments file written from the membership, e.g. csi300.")
    ] = "csi300",
    suspended: Annotated[
        str, typer.Option(help="Suspended bars: `nan` (Qlib sees the suspension) or `flat`.")
    ] = "nan",
) -> None:
    """Write a dataset as a Qlib binary folder (for `qlib.init(provider_uri=OUT)`).

    Example:

      tradebench data export data/cn --format qlib -o qlib_cn --start 2024-01-01
    """
    from tradebench.data.dataset import load_dataset
    from tradebench.data.exporters.qlib import QlibExport, export_qlib

    if fmt != "qlib":
        raise ConfigError(f"unknown --format {fmt!r}; only `qlib` is supported")
    if suspended not in ("nan", "flat"):
        raise ConfigError(f"unknown --suspended {suspended!r}; use nan or flat")
    result = export_qlib(
        load_dataset(path),
        QlibExport(
            out=out,
            symbols=tuple(s.strip() for s in symbols.split(",")) if symbols else (),
            start=start,
            end=end,
            membership_universe=membership_universe,
            suspended=suspended,  # type: ignore[arg-type]
        ),
    )
    console.print(
        f"wrote Qlib folder [bold]{result.root}[/]: {result.n_symbols:,} symbols, "
        f"{result.n_days:,} days ({result.calendar_start} .. {result.calendar_end}), "
        f"{result.n_bars:,} bars ({result.n_suspended_nan:,} suspended written as NaN), "
        f"instruments {', '.join(result.universes)}"
    )


@app.command("pull")
@exits_on_error
def pull_cmd(
    source: Annotated[str, typer.Option(help="akshare or baostock (A-shares), yfinance (US).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Dataset folder to write.")],
    start: Annotated[str, typer.Option(help="First day (YYYY-MM-DD).")],
    end: Annotated[str, typer.Option(help="Last day, inclusive (YYYY-MM-DD).")],
    symbols: Annotated[
        str | None,
        typer.Option(help="Comma-separated codes (600519, sh.600519, SH600519) or tickers."),
    ] = None,
    members: Annotated[
        str | None,
        typer.Option(help="CN: pull an index's membership and its members' bars (csi300)."),
    ] = None,
    index: Annotated[
        str | None, typer.Option(help="Benchmark index to pull: SH000300, ^GSPC, SPY, ...")
    ] = None,
    name: Annotated[str | None, typer.Option(help="Dataset name.")] = None,
) -> None:
    """Pull daily bars through akshare, baostock or yfinance into a dataset.

    Raw prices with the source's adjustment factor, suspensions, and membership where
    the source has it; every data problem is listed as a finding. Needs the `cn-data` or
    `us-data` extra and a connection to the source.

    Examples:

      tradebench data pull --source baostock --members csi300 --index SH000300
      --start 2023-01-01 --end 2024-12-31 -o data/cn-bs

      tradebench data pull --source yfinance --symbols AAPL,MSFT --index SPY
      --start 2020-01-01 --end 2024-12-31 -o data/us-yf
    """
    from tradebench.data.pull import PullRequest, pull_dataset
    from tradebench.data.pull.common import SOURCES

    if source not in SOURCES:
        raise ConfigError(f"unknown --source {source!r}; use one of {', '.join(SOURCES)}")
    wanted = tuple(s.strip() for s in symbols.split(",") if s.strip()) if symbols else ()
    if not wanted and not members:
        raise ConfigError("name what to pull: --symbols A,B,... or --members csi300")
    request = PullRequest(
        source=source,  # type: ignore[arg-type]
        out=out,
        start=_day(start, "--start"),
        end=_day(end, "--end"),
        symbols=wanted,
        members=members,
        index=index,
        name=name,
    )
    with console.status(f"pulling from {source} ..."):
        manifest = pull_dataset(request)
    console.print(f"wrote dataset [bold]{out}[/] ({manifest.n_bars:,} bars from {source})")
    _render_info(out)


@app.command("export-hf")
@exits_on_error
def export_hf_cmd(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder: writes OUT/mcq, OUT/runs.")],
    mcq: Annotated[
        list[Path] | None, typer.Option("--mcq", help="MCQ question file (JSONL); repeatable.")
    ] = None,
    run: Annotated[
        list[Path] | None, typer.Option("--run", help="Run folder (its summary); repeatable.")
    ] = None,
    push: Annotated[
        str | None,
        typer.Option(help="Also push to this Hub repository (token from HF_TOKEN only)."),
    ] = None,
    public: Annotated[bool, typer.Option(help="Create the Hub repository public.")] = False,
) -> None:
    """Export MCQ sets and run summaries as Hugging Face datasets (save_to_disk).

    Each kind is one dataset (`datasets.load_from_disk(OUT/mcq)`); with --push each goes
    to the repository as a config (`mcq`, `runs`). The schema is in docs/datasets.md.

    Example:

      tradebench data export-hf --mcq questions.jsonl --run runs/demo -o hf/
    """
    from tradebench.integrations.hf_datasets import HFExport, export_hf

    result = export_hf(
        HFExport(
            out=out,
            mcq_files=tuple(mcq or ()),
            run_dirs=tuple(run or ()),
            push=push,
            private=not public,
        )
    )
    for kind, folder in result.folders.items():
        console.print(f"wrote [bold]{folder}[/] ({result.rows[kind]:,} rows, {kind})")
    if result.pushed_to:
        console.print(f"pushed to https://huggingface.co/datasets/{result.pushed_to}")


@app.command()
@exits_on_error
def synth(
    out: Annotated[Path, typer.Option("--out", "-o", help="Dataset folder to write.")],
    seed: Annotated[int, typer.Option(min=0, help="Seed: same seed, same market.")] = 0,
    market: Annotated[str, typer.Option(help="Only `cn` (A-share rules) is generated.")] = "cn",
    names: Annotated[
        int, typer.Option(min=1, max=10_000, help="Number of stocks (>= 300 by default).")
    ] = 320,
    days: Annotated[
        int, typer.Option(min=2, max=20_000, help="Trading days (780 ~ 3 years).")
    ] = 780,
) -> None:
    """Generate a deterministic synthetic A-share market (no data or network needed).

    Example: tradebench data synth -o data/synth-cn --seed 0
    """
    from tradebench.data.synth import SynthConfig, synthesize

    if market != "cn":
        raise ConfigError("the synthetic generator models A-share rules only: use --market cn")
    with console.status("generating the synthetic market ..."):
        synthesize(out, SynthConfig(seed=seed, n_names=names, n_days=days))
    console.print(f"wrote synthetic dataset [bold]{out}[/]")
    _render_info(out)


@app.command()
@exits_on_error
def info(
    path: Annotated[Path, typer.Argument(help="Dataset folder.")],
    stats: Annotated[bool, typer.Option(help="Also compute market statistics.")] = False,
) -> None:
    """Summarise a dataset: manifest, tables, import findings (and market statistics).

    Example: tradebench data info data/synth-cn
    """
    _render_info(path, with_stats=stats)


def _market(value: str) -> Market:

    if value not in ("cn", "us"):
        raise ConfigError(f"unknown --market {value!r}; use cn or us")
    return value  # type: ignore[return-value]


def _day(value: str, option: str) -> str:
    from datetime import date

    try:
        return date.fromisoformat(value).isoformat()
    except ValueError:
        raise ConfigError(f"{option} {value!r} is not a date; write YYYY-MM-DD") from None


def _prices(value: str) -> Literal["adjusted", "raw"]:

    if value not in ("adjusted", "raw"):
        raise ConfigError(f"unknown --prices {value!r}; use adjusted or raw")
    return value  # type: ignore[return-value]


def _render_info(path: Path, with_stats: bool = False) -> None:
    from tradebench.data.dataset import load_dataset

    ds = load_dataset(path)
    m = ds.manifest
    table = Table(title=f"dataset {m.name}", show_header=False)
    rows = [
        ("market / currency", f"{m.market} / {m.currency}"),
        ("calendar", f"{m.calendar_start} .. {m.calendar_end}"),
        ("symbols / bars", f"{m.n_symbols:,} / {m.n_bars:,}"),
        ("price basis", m.price_basis),
        ("index", m.index_symbol or "-"),
        ("synthetic", f"yes (seed {m.seed})" if m.synthetic else "no"),
        ("files", ", ".join(f"{k}:{v.rows:,}" for k, v in m.files.items())),
    ]
    for key, value in rows:
        table.add_row(key, value)
    console.print(table)
    findings = Table(title="findings")
    for col in ("kind", "rows", "examples", "what was done"):
        findings.add_column(col, overflow="fold")
    for f in m.findings:
        findings.add_row(f.kind, f"{f.count:,}", ", ".join(f.examples[:4]), f.detail)
    console.print(findings if m.findings else "no findings")
    if with_stats:
        from tradebench.data.stats import market_stats

        stats = market_stats(ds)
        st = Table(title="market statistics", show_header=False)
        for key, value in stats.model_dump().items():
            st.add_row(key, f"{value:.4f}")
        console.print(st)
