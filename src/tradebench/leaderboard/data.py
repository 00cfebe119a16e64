"""What the leaderboard reads from run folders and MCQ evaluation folders.

From each run folder: `spec.yaml` (benchmark, dataset, which agents are the equal-weight
baseline, each model's `knowledge_cutoff`), `summary.parquet` (or the episode folders), and
`attribution_summary.parquet` when `tradebench attribute` has run (selection alpha per
episode). From each MCQ folder (`tradebench mcq eval -o DIR`): `summary.json`.
Only finished episodes count.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import ValidationError

from tradebench.benchmarks.mcq.eval.paired import paired_models
from tradebench.benchmarks.mcq.eval.run import RESULTS_FILE, EvalSummary
from tradebench.errors import ConfigError, DataError
from tradebench.report.load import read_spec, read_summary
from tradebench.report.ranking import episode_fallbacks, episode_traded
from tradebench.runs.records import NOT_APPLICABLE, ORDERS_FILE, STEPS_FILE, episode_folder
from tradebench.runs.spec import flat_agent_entry
from tradebench.runs.store import read_run_record, read_table
from tradebench.runs.summary import initial_cash

EQUAL_WEIGHT = "equal_weight"
"""Registered name of the equal-weight baseline."""
ATTRIBUTION_FILE = "attribution_summary.parquet"
MCQ_SUMMARY_FILE = "summary.json"
EPISODE_COLUMNS = [
    "run",
    "benchmark",
    "dataset",
    "agent",
    "kind",
    "mode",
    "mask",
    "seed",
    "window_start",
    "window_end",
    "n_steps",
    "value",
    "index_value",
    "selection",
    "is_equal_weight",
    "model",
    "knowledge_cutoff",
    "identity",
    "returns",
    "index_returns",
    "traded",
    "fallbacks",
]
"""One row per finished episode: `value` is the board's metric, `index_value` the index's
value of the same metric over the episode's own days (NaN where the panel has none),
`identity` what the agent is (`agent_identity`), `returns` and `index_returns` the
episode's and the index's daily returns over the episode's days (None where the episode
wrote no NAV, or no index close), `traded` whether an order of it filled within its days
and `fallbacks` its (fell back, steps) over them, None without a `fallback` column (the
facts `report.ranking.row_flags` flags a row from)."""
NOT_IDENTITY = frozenset(
    {"name", "api_key_env", "base_url", "timeout_s", "max_attempts", "knowledge_cutoff"}
)
"""Spec fields of an agent that do not change what it is (its name, where and how it is
reached, its declared cutoff)."""

__all__ = [
    "EPISODE_COLUMNS",
    "agent_identity",
    "board_episodes",
    "episode_flag_facts",
    "episode_returns",
    "mcq_pairs",
    "mcq_rows",
    "parse_cutoffs",
]


def parse_cutoffs(items: Sequence[str]) -> dict[str, date]:
    """`AGENT=YYYY-MM-DD` items as {agent: date}.

    Raises:
        ConfigError: An item is not `AGENT=YYYY-MM-DD`.
    """
    out: dict[str, date] = {}
    for item in items:
        name, sep, day = item.partition("=")
        try:
            if not sep or not name:
                raise ValueError
            out[name] = date.fromisoformat(day)
        except ValueError:
            raise ConfigError(
                f"--cutoff {item!r} is not AGENT=YYYY-MM-DD (e.g. gpt=2024-06-01)"
            ) from None
    return out


def agent_identity(entry: Mapping[str, Any]) -> str:
    """What an agent of a spec is, whatever it is named: its spec entry without
    `NOT_IDENTITY` fields, as canonical JSON (the same baseline with the same arguments,
    or the same model with the same sampling, is the same agent in any run)."""
    kept = {k: v for k, v in entry.items() if k not in NOT_IDENTITY and v is not None}
    return json.dumps(kept, sort_keys=True, default=str, separators=(",", ":"))


def _agent_facts(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per agent name: whether it is the equal-weight baseline, its model label, cutoff,
    identity."""
    facts: dict[str, dict[str, Any]] = {}
    for entry in spec.get("agents") or []:
        if not isinstance(entry, dict) or "name" not in entry:
            continue
        entry = flat_agent_entry(entry)  # any layout, compared flat
        cutoff = entry.get("knowledge_cutoff")
        model = entry.get("model")
        facts[str(entry["name"])] = {
            "is_equal_weight": entry.get("baseline") == EQUAL_WEIGHT,
            "model": f"{entry.get('provider')}:{model}" if model else None,
            "knowledge_cutoff": pd.Timestamp(cutoff).date() if cutoff else None,
            "identity": agent_identity(entry),
        }
    return facts


def _daily(values: np.ndarray, start: float | None) -> np.ndarray | None:
    """Daily simple returns of an end-of-day series from the value the day before."""
    if start is None or not np.isfinite(start) or start <= 0 or len(values) == 0:
        return None
    path = np.concatenate([[start], values])
    if not np.isfinite(path).all() or (path <= 0).any():
        return None
    return path[1:] / path[:-1] - 1


def episode_returns(episode_dir: Path) -> tuple[np.ndarray | None, np.ndarray | None]:
    """An episode's daily returns (NAV against the start capital, then the day before)
    and the index's over the same days (close against `run.json`'s close the day before
    the window); None where the episode has no `nav` or no index close."""
    path = episode_dir / STEPS_FILE
    if not path.exists():
        return None, None
    steps = read_table(path, ("nav", "benchmark_close"))
    nav = pd.to_numeric(steps["nav"], errors="coerce").to_numpy(dtype=float)
    close = pd.to_numeric(steps["benchmark_close"], errors="coerce").to_numpy(dtype=float)
    record = read_run_record(episode_dir)
    return _daily(nav, initial_cash(episode_dir)), _daily(
        close, record.benchmark_start if record else None
    )


def episode_flag_facts(episode_dir: Path, days: int) -> tuple[bool, tuple[int, int] | None]:
    """Whether an episode traded within its first `days` decision days and its
    (fell back, steps) over them, from its `steps.parquet` and `orders.parquet`
    (`report.ranking.episode_traded`, `episode_fallbacks`), read as the report reads them
    (a column the episode did not write is null)."""
    steps = read_table(episode_dir / STEPS_FILE, ("date", "fallback"))
    orders = read_table(episode_dir / ORDERS_FILE, ("date", "status"))
    return episode_traded(steps, orders, days), episode_fallbacks(steps, days)


def _selection(run_dir: Path) -> pd.Series:
    """Selection alpha per episode id (empty without an attribution)."""
    path = run_dir / ATTRIBUTION_FILE
    if not path.exists():
        return pd.Series(dtype=float)
    frame = pd.read_parquet(path, columns=["episode_id", "selection"])
    return frame.set_index("episode_id")["selection"].astype(float)


def _run_episodes(
    run_dir: Path, metric: str, cutoffs: Mapping[str, date], label: str
) -> pd.DataFrame:
    """The finished episodes of one run folder as `EPISODE_COLUMNS` rows."""
    spec = read_spec(run_dir)
    summary = read_summary(run_dir)
    done = summary[summary["status"] == "done"].copy()
    if metric not in done.columns:
        raise ConfigError(
            f"run folder {run_dir} has no metric {metric!r}; pick one of its summary columns "
            "with --metric (e.g. total_return, sharpe)"
        )
    facts = _agent_facts(spec)
    agent_fact = [facts.get(a, {}) for a in done["agent"]]
    index_col = f"benchmark_{metric}"
    folders = [episode_folder(run_dir, str(i)) for i in done["episode_id"]]
    daily = [episode_returns(folder) for folder in folders]
    facts = [
        episode_flag_facts(folder, int(days))
        for folder, days in zip(folders, done["n_steps"], strict=True)
    ]
    frame = pd.DataFrame(
        {
            "run": label,
            "benchmark": str(spec.get("benchmark") or "portfolio"),
            "dataset": str(spec.get("dataset") or ""),
            "agent": done["agent"].astype(str),
            "kind": done["kind"].astype(str),
            "mode": done["mode"].fillna(NOT_APPLICABLE).astype(str),
            "mask": done["mask"].fillna(NOT_APPLICABLE).astype(str),
            "seed": done["seed"],
            "window_start": done["window_start"],
            "window_end": done["window_end"],
            "n_steps": done["n_steps"].astype(int),
            "value": pd.to_numeric(done[metric], errors="coerce").astype(float),
            "index_value": (
                pd.to_numeric(done[index_col], errors="coerce").astype(float)
                if index_col in done.columns
                else float("nan")
            ),
            "selection": done["episode_id"].map(_selection(run_dir)).astype(float),
            "is_equal_weight": [bool(f.get("is_equal_weight")) for f in agent_fact],
            "model": [f.get("model") for f in agent_fact],
            "knowledge_cutoff": [
                cutoffs.get(a, f.get("knowledge_cutoff"))
                for a, f in zip(done["agent"], agent_fact, strict=True)
            ],
            "identity": [
                f.get("identity") or ("index" if k == "benchmark" else f"agent:{a}")
                for a, k, f in zip(done["agent"], done["kind"], agent_fact, strict=True)
            ],
            "returns": [d[0] for d in daily],
            "index_returns": [d[1] for d in daily],
            "traded": [f[0] for f in facts],
            "fallbacks": [f[1] for f in facts],
        }
    )
    return frame.reset_index(drop=True)


def _labels(run_dirs: Sequence[Path]) -> list[str]:
    """Run labels: the folder names, made unique with their parents where two collide."""
    names = [Path(d).resolve().name for d in run_dirs]
    if len(set(names)) == len(names):
        return names
    return [f"{Path(d).resolve().parent.name}/{n}" for d, n in zip(run_dirs, names, strict=True)]


def board_episodes(
    run_dirs: Sequence[Path],
    metric: str = "total_return",
    cutoffs: Mapping[str, date] | None = None,
) -> pd.DataFrame:
    """The finished episodes of every run folder (`EPISODE_COLUMNS`); `cutoffs` override
    the specs' `knowledge_cutoff` per agent name.

    Raises:
        ConfigError: No run folders, a folder that is not a run, or no finished episodes.
    """
    if not run_dirs:
        raise ConfigError("give at least one run folder (written by `tradebench run`)")
    frames = []
    for run_dir, label in zip(run_dirs, _labels(run_dirs), strict=True):
        if not Path(run_dir).is_dir():
            raise ConfigError(f"run folder {run_dir} does not exist")
        frames.append(_run_episodes(Path(run_dir), metric, cutoffs or {}, label))
    out = pd.concat(frames, ignore_index=True)
    if out.empty:
        raise ConfigError(
            "no finished episodes in " + ", ".join(map(str, run_dirs)) + "; run them first"
        )
    return out[EPISODE_COLUMNS]


def mcq_pairs(folders: Sequence[Path]) -> pd.DataFrame:
    """McNemar comparisons of the models of each MCQ folder on its questions
    (`benchmarks.mcq.eval.paired.PAIR_COLUMNS` and the folder), from `results.parquet`;
    empty for folders without one."""
    frames = []
    for folder in folders:
        path = Path(folder) / RESULTS_FILE
        if path.exists():
            pairs = paired_models(pd.read_parquet(path))
            frames.append(pairs.assign(folder=Path(folder).resolve().name))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def mcq_rows(folders: Sequence[Path]) -> pd.DataFrame:
    """One row per MCQ folder x model x mode x slice (`overall` and each tier): accuracy
    (mean over runs), its Wilson interval, the constant-letter baseline and chance.

    Raises:
        ConfigError: A folder has no `summary.json`.
        DataError: A `summary.json` is not an MCQ evaluation summary.
    """
    rows: list[dict[str, Any]] = []
    for folder in folders:
        path = Path(folder) / MCQ_SUMMARY_FILE
        if not path.exists():
            raise ConfigError(f"{folder} has no {MCQ_SUMMARY_FILE}; pass a `mcq eval` folder")
        try:
            summary = EvalSummary.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, ValidationError) as exc:
            raise DataError(f"{path} is not an MCQ evaluation summary ({exc})") from None
        for model in summary.models:
            for tier, acc in {"overall": model.overall, **model.tiers}.items():
                rows.append(
                    {
                        "folder": Path(folder).resolve().name,
                        "questions_sha256": summary.questions_sha256,
                        "model": model.model,
                        "mode": model.mode,
                        "runs": model.runs,
                        "tier": tier,
                        "questions": acc.questions,
                        "accuracy": acc.mean,
                        "wilson_low": acc.wilson_low,
                        "wilson_high": acc.wilson_high,
                        "constant_letter": acc.constant_letter,
                        "constant_letter_accuracy": acc.constant_letter_accuracy,
                        "chance": model.random_baseline,
                    }
                )
    return pd.DataFrame(rows)
