"""Read and write probe sets (JSONL: a header line, then one probe per line)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from tradebench.errors import ConfigError, DataError
from tradebench.probe.types import Probe, ProbeSetHeader


@dataclass(frozen=True)
class ProbeSet:
    """A header and its probes."""

    header: ProbeSetHeader
    probes: tuple[Probe, ...]


def write_probe_set(probe_set: ProbeSet, path: Path) -> Path:
    """Write the set as JSONL (atomically: a temporary file, then a rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(probe_set.header.model_dump_json() + "\n")
        for probe in probe_set.probes:
            fh.write(probe.model_dump_json() + "\n")
    tmp.replace(path)
    return path


def read_probe_set(path: Path) -> ProbeSet:
    """Load a probe file written by `write_probe_set`.

    Raises:
        ConfigError: The file does not exist.
        DataError: The file is not UTF-8 text, or a line is not valid JSON or not a valid
            header / probe.
    """
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path} not found; build one with `tradebench probe build`")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise DataError(
            f"{path} is not a probe file (not UTF-8 text); build one with `tradebench probe build`"
        ) from None
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise DataError(f"{path} is empty; rebuild it with `tradebench probe build`")
    try:
        header = ProbeSetHeader.model_validate(json.loads(lines[0]))
        probes = tuple(Probe.model_validate(json.loads(line)) for line in lines[1:])
    except (json.JSONDecodeError, ValidationError) as exc:
        first = str(exc).splitlines()[0]
        raise DataError(
            f"{path} is not a probe file ({first}); rebuild it with `tradebench probe build`"
        ) from None
    return ProbeSet(header, probes)
