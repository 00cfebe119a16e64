"""`tradebench leaderboard` prints the top rows it wrote: rank, mean and interval of each
printed row are the ones in leaderboard.parquet, best first, and the rest are counted."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from tradebench.cli import app


def test_printed_top_rows_are_the_files(run_dir: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["leaderboard", str(run_dir), "-o", str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    board = pd.read_parquet(tmp_path / "b" / "leaderboard.parquet")
    printed = re.findall(
        r"│ (\d+)\s+│ ([^│]+?)\s+│ (\d+)\s+│ (-?[\d.]+)\s+│ (\[[^\]]+\] \(\w+\)|–)",
        result.output,
    )
    assert len(board) > 5 and len(printed) == 5
    assert f"... {len(board) - 5} more rows in" in result.output
    for (rank, label, seeds, mean, interval), (_, row) in zip(
        printed, board.head(5).iterrows(), strict=True
    ):
        assert label.startswith(str(row["agent"]))
        assert (int(rank), int(seeds)) == (int(row["rank"]), int(row["seeds"]))
        assert mean == f"{row['mean']:.4f}"
        assert interval == f"[{row['low']:.4f}, {row['high']:.4f}] ({row['interval']})"
    ranks = [int(p[0]) for p in printed]
    assert ranks == sorted(ranks)
