"""Export MCQ sets and run summaries as Hugging Face `datasets` datasets.

Two kinds, each a folder written by `Dataset.save_to_disk` (read back with
`datasets.load_from_disk`), or pushed to the Hub as a config of one repository:

- `mcq`: one row per question (`MCQ_FEATURES`): id, question, options A-D as columns,
  answer letter, template, tier, strategy, answer kind, build seed, schema version, and the
  record's nested parts (`params`, `config`, `alternative`) as JSON text, so every row
  rebuilds the exact `MCQRecord` (`mcq_record_from_row`).
- `runs`: one row per episode of each run's `summary.parquet` (`SUMMARY_FEATURES` for the
  common columns, a benchmark's own columns typed from the table), plus `run`, the run
  folder's name.

A push reads its token from the `HF_TOKEN` environment variable only and writes it nowhere.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from tradebench.benchmarks.mcq.records import MCQRecord, dumps_record, read_jsonl
from tradebench.errors import ConfigError, DataError
from tradebench.runs.records import SUMMARY_FILE
from tradebench.runs.store import read_parquet
from tradebench.runs.summary import (
    FAULT_COUNT_COLUMNS,
    SUMMARY_COLUMNS,
    normalise_summary,
    summarise_episodes,
)

TOKEN_ENV = "HF_TOKEN"
LETTERS = ("A", "B", "C", "D")
MCQ_TEXT = ("id", "question", "answer", "template", "tier", "strategy", "answer_kind")
MCQ_JSON = ("params", "config", "alternative")
SUMMARY_TEXT = (
    "episode_id", "agent", "kind", "mode", "mask",
    "window_start", "window_end", "first_day", "last_day", "status",
)  # fmt: skip
SUMMARY_INT = ("seed", "n_steps", *FAULT_COUNT_COLUMNS)


def _datasets() -> Any:
    try:
        import datasets
    except ImportError:
        raise ConfigError(
            "exporting to Hugging Face needs `datasets`: pip install 'tradebench[hf]'"
        ) from None
    return datasets


def mcq_features() -> Any:
    """The `datasets.Features` of an MCQ export (documented in docs/datasets.md)."""
    ds = _datasets()
    text = ds.Value("string")
    return ds.Features(
        {
            "schema_version": ds.Value("int32"),
            **{k: text for k in MCQ_TEXT[:2]},
            **{f"option_{k}": text for k in LETTERS},
            **{k: text for k in MCQ_TEXT[2:]},
            "seed": ds.Value("int64"),
            **{f"{k}_json": text for k in MCQ_JSON},
        }
    )


def mcq_row(record: MCQRecord) -> dict[str, Any]:
    """One question as an export row (nested parts as canonical JSON text)."""
    data = json.loads(dumps_record(record))
    row: dict[str, Any] = {"schema_version": data["schema_version"]}
    row |= {k: data[k] for k in MCQ_TEXT}
    row |= {f"option_{k}": data["options"][k] for k in LETTERS}
    row["seed"] = data["seed"]
    for key in MCQ_JSON:
        value = data[key]
        row[f"{key}_json"] = None if value is None else json.dumps(value, separators=(",", ":"))
    return row


def mcq_record_from_row(row: dict[str, Any]) -> MCQRecord:
    """Rebuild the exact `MCQRecord` from an export row (the inverse of `mcq_row`)."""
    data: dict[str, Any] = {k: row[k] for k in ("schema_version", *MCQ_TEXT, "seed")}
    data["options"] = {k: row[f"option_{k}"] for k in LETTERS}
    for key in MCQ_JSON:
        text = row[f"{key}_json"]
        data[key] = None if text is None else json.loads(text)
    return MCQRecord.model_validate(data)


def mcq_dataset(records: Sequence[MCQRecord]) -> Any:
    """MCQ records as a `datasets.Dataset` with `mcq_features()`."""
    ds = _datasets()
    rows = [mcq_row(r) for r in records]
    features = mcq_features()
    columns = {name: [r[name] for r in rows] for name in features}
    return ds.Dataset.from_dict(columns, features=features)


def run_summary(run_dir: Path) -> pd.DataFrame:
    """A run's summary table (`summary.parquet`, else rebuilt from the episode folders),
    with a leading `run` column naming the run folder."""
    run_dir = Path(run_dir)
    path = run_dir / SUMMARY_FILE
    if path.exists():
        table = normalise_summary(read_parquet(path))
    elif run_dir.is_dir():
        table = summarise_episodes(run_dir)
    else:
        raise ConfigError(f"run folder {run_dir} does not exist; pass a `tradebench run` folder")
    return table.assign(run=run_dir.name)[["run", *table.columns]]


def summary_features(table: pd.DataFrame) -> Any:
    """`datasets.Features` of a summary export: fixed types for the common columns, a
    benchmark's own columns typed from the table."""
    ds = _datasets()
    extra = [c for c in table.columns if c != "run" and c not in SUMMARY_COLUMNS]
    own = ds.Dataset.from_pandas(table[extra], preserve_index=False).features if extra else {}
    fixed: dict[str, Any] = {"run": ds.Value("string")}
    for col in SUMMARY_COLUMNS:
        if col in SUMMARY_TEXT:
            fixed[col] = ds.Value("string")
        elif col in SUMMARY_INT:
            fixed[col] = ds.Value("int64")
        else:
            fixed[col] = ds.Value("float64")
    return ds.Features({c: fixed[c] if c in fixed else own[c] for c in table.columns})


def summary_dataset(run_dirs: Sequence[Path]) -> Any:
    """The summary rows of every run as one `datasets.Dataset`."""
    ds = _datasets()
    tables = [run_summary(d) for d in run_dirs]
    table = pd.concat(tables, ignore_index=True) if len(tables) > 1 else tables[0]
    features = summary_features(table)
    columns = {c: [None if pd.isna(v) else v for v in table[c].tolist()] for c in table.columns}
    return ds.Dataset.from_dict(columns, features=features)


@dataclass(frozen=True)
class HFExport:
    """What to export and where.

    Attributes:
        out: folder; each kind is saved under `out/mcq` and `out/runs`.
        mcq_files: MCQ question files (JSONL from `tradebench mcq build`).
        run_dirs: run folders (from `tradebench run`).
        push: Hub repository (`user/name`) to push each kind to as a config; None = local only.
        private: create the Hub repository private.
    """

    out: Path
    mcq_files: tuple[Path, ...] = ()
    run_dirs: tuple[Path, ...] = ()
    push: str | None = None
    private: bool = True


@dataclass(frozen=True)
class HFExportResult:
    """Rows written per kind, the folders, and the Hub repository pushed to (if any)."""

    rows: dict[str, int]
    folders: dict[str, Path]
    pushed_to: str | None


def hub_token() -> str:
    """The Hub token from `HF_TOKEN`; refuses to push without one."""
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise ConfigError(
            f"--push needs a Hugging Face token in the {TOKEN_ENV} environment variable"
        )
    return token


def export_hf(job: HFExport) -> HFExportResult:
    """Build the datasets, save each with `save_to_disk` and optionally push them."""
    if not job.mcq_files and not job.run_dirs:
        raise ConfigError("nothing to export: pass --mcq FILE and/or --run DIR")
    token = hub_token() if job.push else None
    built: dict[str, Any] = {}
    if job.mcq_files:
        records = [r for f in job.mcq_files for r in read_jsonl(Path(f))]
        if not records:
            raise DataError(f"no questions in {', '.join(map(str, job.mcq_files))}")
        built["mcq"] = mcq_dataset(records)
    if job.run_dirs:
        built["runs"] = summary_dataset(job.run_dirs)
    folders = {}
    for kind, dataset in built.items():
        folders[kind] = Path(job.out) / kind
        dataset.save_to_disk(str(folders[kind]))
    for kind, dataset in built.items():
        if job.push:
            try:
                dataset.push_to_hub(job.push, config_name=kind, token=token, private=job.private)
            except Exception as exc:  # the Hub client's network, auth and HTTP errors
                raise DataError(
                    f"push of {kind} to {job.push} failed ({type(exc).__name__}: {exc}); "
                    f"the local copy is in {folders[kind]}"
                ) from None
    return HFExportResult({k: len(d) for k, d in built.items()}, folders, job.push)
