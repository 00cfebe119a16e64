"""Following an example from the repository root writes nothing into the repository that git
would pick up: the data its header imports, the dataset its spec reads, the run folders and the
folders commands write by default all lie beside the repository or are ignored by git."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import typer
import yaml

from tradebench.cli import app

REPO = Path(__file__).resolve().parents[1]
OUTPUT = re.compile(r"(?:-o|--out|--data-dir|import-records)\s+(\S+)")


def _tracked_if_written(path: str) -> bool:
    """Whether a file written at `path` (from the repository root) would show in git."""
    target = (REPO / path).resolve()
    if not target.is_relative_to(REPO):
        return False
    probe = target / "probe.parquet"
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "--no-index", str(probe.relative_to(REPO))],
        cwd=REPO,
        check=False,
    )
    return ignored.returncode != 0


pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or not (REPO / ".git").exists(), reason="needs a git checkout"
)


@pytest.mark.parametrize("example", sorted(p.name for p in (REPO / "examples").glob("*.yaml")))
def test_an_example_writes_nothing_into_the_repository(example: str) -> None:
    text = (REPO / "examples" / example).read_text()
    comments = "\n".join(line.lstrip("# ") for line in text.splitlines() if line.startswith("#"))
    written = OUTPUT.findall(comments.replace("\\\n", " "))
    dataset = str(yaml.safe_load(text).get("dataset", ""))
    if dataset and not dataset.startswith("synthetic:"):
        written.append(dataset)
    assert [p for p in written if _tracked_if_written(p)] == [], example


def test_no_command_writes_into_the_repository_by_default() -> None:
    """Folder options with a relative default (the demo's output, ...)."""
    root = typer.main.get_command(app)
    defaults = []
    for name in root.list_commands(type("Ctx", (), {"meta": {}})()):
        command = root.get_command(type("Ctx", (), {"meta": {}})(), name)
        leaves = command.commands.values() if hasattr(command, "commands") else [command]
        for leaf in leaves:
            for param in leaf.params:
                default = param.default
                if isinstance(default, Path) and not default.is_absolute():
                    defaults.append(str(default))
    assert defaults, "no relative folder default found: the check is looking at nothing"
    assert [d for d in defaults if _tracked_if_written(d)] == []
