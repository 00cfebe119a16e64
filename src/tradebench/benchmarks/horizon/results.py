"""A horizon run folder's verdicts: `horizon.json` (one `Horizon` per agent) and plots.

Per agent the curve pools the bright answers of every window of the spec's first seed
(later seeds resample the same questions, so pooling them would count one fact twice); the
blinded control pools the agent's blinded answers of that seed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from pydantic import BaseModel, ConfigDict

from tradebench.benchmarks.horizon.curve import HORIZON_VERSION, Horizon, analyse
from tradebench.benchmarks.horizon.options import HorizonOptions
from tradebench.benchmarks.horizon.plot import write_plot
from tradebench.errors import ConfigError
from tradebench.files import write_bytes_atomic
from tradebench.report.load import read_spec
from tradebench.runs.store import read_episode_record

HORIZON_FILE = "horizon.json"
ANSWERS_FILE = "answers.parquet"


class HorizonFile(BaseModel):
    """`RUN_DIR/horizon.json`."""

    model_config = ConfigDict(
        frozen=True, use_attribute_docstrings=True, ser_json_inf_nan="constants"
    )

    schema_version: int = HORIZON_VERSION
    """Version of this file."""
    agents: list[Horizon]
    """One entry per model agent, in spec order."""


def _answers(run_dir: Path) -> dict[tuple[str, str, int], list[pd.DataFrame]]:
    out: dict[tuple[str, str, int], list[pd.DataFrame]] = {}
    for folder in sorted((run_dir / "episodes").glob("*")):
        record = read_episode_record(folder)
        if record is None or record.benchmark != "horizon" or record.status != "done":
            continue
        key = (record.agent, record.mask, int(record.seed or 0))
        out.setdefault(key, []).append(pd.read_parquet(folder / ANSWERS_FILE))
    return out


def analyse_run(run_dir: Path) -> HorizonFile:
    """Every agent's horizon from the finished episodes of a horizon run.

    Raises:
        ConfigError: The folder is not a horizon run or has no finished episode.
    """
    run_dir = Path(run_dir)
    spec = read_spec(run_dir)
    if spec.get("benchmark") != "horizon":
        raise ConfigError(
            f"{run_dir} is not a horizon run (its spec.yaml names no `benchmark: horizon`)"
        )
    options = HorizonOptions.model_validate(spec.get("options") or {})
    seed = int((spec.get("seeds") or [0])[0])
    answers = _answers(run_dir)
    out = []
    for entry in spec.get("agents") or []:
        name = entry["name"]
        bright = answers.get((name, "bright", seed))
        if not bright:
            continue
        blinded = answers.get((name, "blinded", seed))
        served = options.serving_dates.get(name)
        out.append(
            analyse(
                name,
                pd.concat(bright, ignore_index=True),
                pd.concat(blinded, ignore_index=True) if blinded else None,
                served.isoformat() if served else None,
                options.alpha, options.run, options.lift, options.target_power,
            )
        )  # fmt: skip
    if not out:
        raise ConfigError(
            f"{run_dir} has no finished horizon episode; run it with `tradebench run`"
        )
    return HorizonFile(agents=out)


def write_results(run_dir: Path) -> tuple[HorizonFile, list[Path]]:
    """Analyse the run, write `horizon.json` and one plot per agent; returns the files."""
    result = analyse_run(run_dir)
    path = Path(run_dir) / HORIZON_FILE
    write_bytes_atomic(path, (result.model_dump_json(indent=2) + "\n").encode())
    files = [path]
    for h in result.agents:
        files += write_plot(h, Path(run_dir) / f"horizon_{h.agent}")
    return result, files


def read_horizons(path: Path) -> dict[str, Horizon]:
    """Per agent, the horizon of a run folder (or of its `horizon.json`), analysing the
    run when the file is not written yet.

    Raises:
        ConfigError: Neither a horizon run folder nor a `horizon.json`.
    """
    path = Path(path)
    file = path / HORIZON_FILE if path.is_dir() else path
    if file.exists():
        try:
            result = HorizonFile.model_validate(json.loads(file.read_text()))
        except ValueError as exc:
            raise ConfigError(f"{file} is not a horizon file: {str(exc).splitlines()[0]}") from None
    elif path.is_dir():
        result = analyse_run(path)
    else:
        raise ConfigError(f"{path} is neither a horizon run folder nor a horizon.json")
    return {h.agent: h for h in result.agents}
