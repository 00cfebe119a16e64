"""The progress bar of phased work (`cli.counting.phase_bar`) draws every phase and every
finished count when it happens, not at the next timed refresh: on a terminal, phases that
pass in microseconds still show, each with its count done."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from tradebench.cli import counting


def test_quick_phases_are_each_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    terminal = Console(file=out, force_terminal=True, width=120, color_system=None)
    monkeypatch.setattr(counting, "console", terminal)
    phases = [f"phase number {i}" for i in range(6)]
    with counting.phase_bar("starting") as progress:
        for i, phase in enumerate(phases):  # no pause: far quicker than any timed refresh
            total = 1000 + i
            progress(phase, 0, total)
            progress(phase, total // 2, total)
            progress(phase, total, total)
    shown = out.getvalue()
    for i, phase in enumerate(phases):
        assert phase in shown
        assert f"{1000 + i}/{1000 + i}" in shown
