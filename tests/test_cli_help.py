"""Every command and command group of `tradebench` shows an example in its `--help`."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from tradebench.cli import VERBS, app

runner = CliRunner()


def _paths() -> list[tuple[str, ...]]:
    """Every command path: each verb, and each command and subgroup under a group."""
    found: list[tuple[str, ...]] = []

    def walk(command: Any, path: tuple[str, ...]) -> None:
        found.append(path)
        if getattr(command, "commands", None):  # a group (typer's own click types)
            for name, sub in command.commands.items():
                walk(sub, (*path, name))

    for verb in VERBS:
        walk(verb.load(), (verb.name,))
    return found


PATHS = _paths()


def test_the_walk_found_the_commands() -> None:
    assert ("mcq", "build") in PATHS and ("data", "synth") in PATHS and ("run",) in PATHS
    assert len(PATHS) > 25


@pytest.mark.parametrize("path", PATHS, ids=" ".join)
def test_help_shows_an_example_of_the_command(path: tuple[str, ...]) -> None:
    result = runner.invoke(app, [*path, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "Example" in text, f"tradebench {' '.join(path)} --help has no example"
    assert f"tradebench {' '.join(path)}" in text
