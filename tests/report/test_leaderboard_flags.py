"""The leaderboard's page flags its rows as the run report does (`report.ranking.row_flags`)
and shows no ratio annualised from fewer than 20 days, through `tradebench run` and
`tradebench leaderboard` on real run folders.

Two runs on the synthetic market: a model that never answers usably (every step falls
back to cash) over 6 days beside an equal-weight baseline, and the cash and equal-weight
baselines over two seeds of a long window. Each row's expected flags are worked out here
from the run folders' own files (the decision days in each episode's steps.parquet, the
seeds in summary.parquet, the statuses in orders.parquet, the fallback column)."""

from __future__ import annotations

import html
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from tests.report.model_run import recorded_capital
from tradebench.cli import app
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply

runner = CliRunner()
SHORT = {"start": "2022-03-01", "end": "2022-03-08"}
LONG = {"start": "2022-05-02", "end": "2022-06-30"}
IDLE = "idle"
FILLED = ("filled", "partial")


def _run(spec: dict, root: Path, name: str) -> Path:
    spec_file = root / f"{name}.yaml"
    spec_file.write_text(yaml.safe_dump(spec))
    out = root / name
    result = runner.invoke(app, ["run", str(spec_file), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def _unusable(req: RecordedRequest) -> Reply:
    return Reply.garbage()


@pytest.fixture(scope="module")
def runs(synth_dataset_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("flag_runs")
    with LoopbackServer(responder=_unusable) as server:
        short = _run(
            {
                "dataset": str(synth_dataset_dir),
                "windows": [SHORT],
                "modes": ["memory_only"],
                "masks": ["blinded"],
                "seeds": [0],
                "agents": [
                    {
                        "name": IDLE,
                        "provider": "openai",
                        "model": "test-model",
                        "base_url": server.openai_url,
                        "max_tokens": 128,
                        "max_attempts": 1,
                    },
                    {"name": "ew", "baseline": "equal_weight"},
                ],
                "concurrency": 2,
            },
            root,
            "short",
        )
    long = _run(
        {
            "dataset": str(synth_dataset_dir),
            "windows": [LONG],
            "seeds": [0, 1],
            "agents": [
                {"name": "cash", "baseline": "cash"},
                {"name": "ew", "baseline": "equal_weight"},
            ],
        },
        root,
        "long",
    )
    return [short, long]


def _expected_flags(run_dir: Path) -> dict[str, str]:
    """Each row's flags from the run folder's files, by agent (`benchmark`: the index)."""
    summary = pd.read_parquet(run_dir / "summary.parquet")
    out = {}
    for (agent, kind), rows in summary.groupby(["agent", "kind"]):
        flags = []
        days = []
        traded = fell_back = False
        every_step_fell_back = True
        for episode in rows["episode_id"]:
            folder = run_dir / "episodes" / str(episode)
            steps = pd.read_parquet(folder / "steps.parquet")
            days.append(len(steps))
            orders_file = folder / "orders.parquet"
            if orders_file.exists():
                orders = pd.read_parquet(orders_file)
                traded |= bool(orders["status"].isin(FILLED).any())
            if "fallback" in steps:
                fell_back = True
                every_step_fell_back &= bool(steps["fallback"].fillna(False).astype(bool).all())
        if kind != "benchmark" and not traded:
            flags.append("no trades")
        if kind == "llm" and fell_back and every_step_fell_back:
            flags.append("all fallbacks")
        if kind == "llm" and rows["seed"].nunique() == 1:
            flags.append("one seed")
        if min(days) < 20:
            flags.append(f"{min(days)} days")
        out[str(agent)] = ", ".join(flags)
    return out


def _window_rows(page: str, start: str, end: str) -> dict[str, dict[str, str]]:
    """The ranked table of one window's section: {agent label: {header: cell text}}."""
    title = f"portfolio · {start} → {end}"
    section = page[page.index(f"<h2>{html.escape(title)}</h2>") :]
    section = section[: section.index("</section>")]
    head = [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", section.split("</thead>")[0])]
    body = section[section.index("<tbody>") : section.index("</tbody>")]
    rows = {}
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", body):
        cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr)]
        row = dict(zip(head, cells, strict=True))
        rows[row["agent"].split(" · ")[0]] = row
    return rows


def _daily_sharpe(run_dir: Path, agent: str) -> float:
    """Mean over the agent's episodes of the daily Sharpe ratio of its NAV, written out."""
    summary = pd.read_parquet(run_dir / "summary.parquet")
    values = []
    for episode in summary.loc[summary["agent"] == agent, "episode_id"]:
        nav = pd.read_parquet(run_dir / "episodes" / str(episode) / "steps.parquet")["nav"]
        path = np.concatenate([[recorded_capital(run_dir)], nav.to_numpy(dtype=float)])
        returns = path[1:] / path[:-1] - 1
        values.append(returns.mean() / returns.std(ddof=1))
    return float(np.mean(values))


def test_board_rows_carry_the_reports_flags(runs: list[Path], tmp_path: Path) -> None:
    result = runner.invoke(app, ["leaderboard", *map(str, runs), "-o", str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "b" / "leaderboard.html").read_text(encoding="utf-8")
    short, long = runs
    for run_dir, window in ((short, SHORT), (long, LONG)):
        rows = _window_rows(page, window["start"], window["end"])
        assert {label: r["flags"] for label, r in rows.items()} == _expected_flags(run_dir)
    # what the files say, spelled out: the idle model did not trade, fell back on every
    # step, ran one seed over 6 days; over the 44 days of the long window the cash
    # baseline never traded, and equal weight and the index have nothing to flag
    assert _expected_flags(short) == {
        IDLE: "no trades, all fallbacks, one seed, 6 days",
        "ew": "6 days",
        "benchmark": "6 days",
    }
    assert _expected_flags(long) == {"cash": "no trades", "ew": "", "benchmark": ""}
    board = pd.read_parquet(tmp_path / "b" / "leaderboard.parquet")
    assert set(board.loc[board["agent"] == IDLE, "flags"]) == {_expected_flags(short)[IDLE]}
    # the terminal's top rows say it too, one line per flagged row under its window's table
    assert f"  {IDLE} · memory_only · blinded: {_expected_flags(short)[IDLE]}" in result.output
    assert "  cash: no trades" in result.output and "  ew: \n" not in result.output


def test_no_board_ratio_is_annualised_from_six_days(runs: list[Path], tmp_path: Path) -> None:
    args = ["leaderboard", *map(str, runs), "-o", str(tmp_path / "b"), "--metric", "sharpe"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    page = (tmp_path / "b" / "leaderboard.html").read_text(encoding="utf-8")
    short, long = runs
    column = "mean [interval] (uncertainty)"
    shown = _window_rows(page, SHORT["start"], SHORT["end"])["ew"][column]
    daily = _daily_sharpe(short, "ew")
    assert shown.startswith(f"{daily:.4f}") and shown.endswith(" per day")
    assert f"{daily * math.sqrt(252):.4f}" not in shown
    assert "per day: rows behind fewer than 20 decision days" in page
    annual = _window_rows(page, LONG["start"], LONG["end"])["ew"][column]
    assert annual.startswith(f"{_daily_sharpe(long, 'ew') * math.sqrt(252):.4f}")
    assert not annual.endswith(" per day")
