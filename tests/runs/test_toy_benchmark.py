"""A new benchmark is one module plus one registry line: `tradebench run` executes, resumes
and reports this toy (guess the index's direction each day) with no harness change. Its
summary holds the harness's columns plus the one it declares (none null in every row), its
step counts come from its records, and its report has its own section and no broker one."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from pydantic import BaseModel
from typer.testing import CliRunner

from tradebench.benchmarks import BENCHMARKS
from tradebench.cli import app
from tradebench.llm.loopback import LoopbackServer, Reply
from tradebench.llm.types import Message
from tradebench.report.html import Section, table
from tradebench.runs.broker.engine import trading_days
from tradebench.runs.protocol import EpisodeRef
from tradebench.runs.store import write_json
from tradebench.runs.summary import summarise_episodes
from tradebench.view import MarketView


class ToyOptions(BaseModel):
    steps: int = 6


def toy_section(run, options):
    return Section("Toy hit rates", table(run.summary[["episode_id", "hits"]]))


class Toy:
    name, options_model, axes, report_sections = "toy", ToyOptions, (), (toy_section,)
    summary_columns, broker_files = ("hits",), False

    def expand(self, spec, options, dataset):
        return [
            EpisodeRef(id=f"{a.name}_s{s}", agent=a.name, kind="llm" if a.is_llm else "baseline",
                       seed=s, window=spec.windows[0])
            for a in spec.agents for s in spec.seeds
        ]  # fmt: skip

    async def run_episode(self, ref, ctx):
        journal, ds = ctx.journal(), ctx.dataset
        lines = journal.restore()
        days = trading_days(ds.panel, str(ref.window.start), str(ref.window.end))
        for i in range(len(lines), ctx.options.steps):
            index = MarketView(ds, as_of=ds.panel.dates[days[i]]).index_window("close", 2)
            guess = "up"
            if ctx.model is not None:
                ask = [Message(role="user", content=f"Day {i}: up or down?")]
                guess = (await ctx.model.generate(ask, sample_index=ref.seed)).message.content
            hit = (guess == "up") == bool(index[-1] > index[-2])
            lines.append({"step": i, "guess": guess, "hit": hit})
            journal.append(i, lines[-1], {"guess": guess})
            ctx.on_step()
        hits = float(np.mean([x["hit"] for x in lines]))
        write_json(ctx.folder / "metrics.json", {"hits": hits})
        return ref.record(self.name, "done", n_steps=len(lines), hits=hits)

    def summary_row(self, record, folder):
        return {"hits": record.extras.get("hits")}


BENCHMARKS.register("toy", Toy())


def _spec(tmp_path: Path, dataset: Path, url: str) -> Path:
    path = tmp_path / "toy.yaml"
    spec = {
        "benchmark": "toy",
        "dataset": str(dataset),
        "windows": [{"start": "2022-03-01", "end": "2022-03-31"}],
        "seeds": [0, 1],
        "agents": [
            {"name": "up", "baseline": "always_up"},
            {"name": "m", "provider": "openai", "model": "toy", "base_url": url},
        ],
        "options": {"steps": 6},
    }
    path.write_text(yaml.safe_dump(spec))
    return path


def _kill_after(folder: Path, steps: int) -> None:
    """Leave an episode folder as a kill during step `steps` would."""
    progress = (folder / "progress.jsonl").read_text().splitlines(keepends=True)
    (folder / "progress.jsonl").write_text("".join(progress[:steps]) + progress[steps][:9])
    (folder / "metrics.json").unlink()
    meta = json.loads((folder / "episode.json").read_text())
    (folder / "episode.json").write_text(json.dumps({**meta, "status": "running"}))


def test_toy_benchmark_runs_resumes_and_reports(synth_dataset_dir: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    with LoopbackServer(responder=lambda request: Reply.say("down")) as server:
        spec = _spec(tmp_path, synth_dataset_dir, server.openai_url)
        result = runner.invoke(app, ["run", str(spec), "-o", str(tmp_path / "a")])
        assert result.exit_code == 0, result.output
        assert len(server.requests) == 2 * 6  # two seeds, six days
        shutil.copytree(tmp_path / "a", tmp_path / "b")
        for name in ("m_s1", "up_s0"):
            _kill_after(tmp_path / "b" / "episodes" / name, steps=2)
        killed = summarise_episodes(tmp_path / "b", Toy().summary_row, ("hits",))
        killed = killed.set_index("episode_id")
        assert list(killed["n_steps"]) == [6, 2, 2, 6]  # m_s0, m_s1, up_s0, up_s1: the journal
        assert list(killed["status"]) == ["done", "running", "running", "done"]
        result = runner.invoke(app, ["run", str(spec), "-o", str(tmp_path / "b")])
        assert result.exit_code == 0, result.output
        assert len(server.requests) == 2 * 6  # the resumed model steps came from the cache
    for name in ("m_s1", "up_s0"):
        a, b = tmp_path / "a" / "episodes" / name, tmp_path / "b" / "episodes" / name
        for file in ("progress.jsonl", "trace.jsonl.zst", "metrics.json", "episode.json"):
            assert (a / file).read_bytes() == (b / file).read_bytes(), (name, file)
    summary = pd.read_parquet(tmp_path / "b" / "summary.parquet")
    common = ["episode_id", "agent", "kind", "mode", "mask", "seed"]
    common += ["window_start", "window_end", "status", "n_steps"]
    assert list(summary.columns) == [*common, "hits"]
    assert not [c for c in summary.columns if summary[c].isna().all()]
    summary = summary.set_index("episode_id")
    assert summary.loc["m_s0", "kind"] == "llm" and summary.loc["up_s1", "kind"] == "baseline"
    assert (summary["n_steps"] == 6).all() and (summary["status"] == "done").all()
    assert (summary["mode"] == "n/a").all() and (summary["mask"] == "n/a").all()
    assert summary["hits"].between(0, 1).all()
    both = summary.loc["m_s0", "hits"] + summary.loc["up_s0", "hits"]
    assert both == pytest.approx(1.0)  # opposite guesses on the same days
    result = runner.invoke(app, ["report", str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "b" / "report.html").read_text()
    titles = re.findall(r"<h2[^>]*>([^<]*)</h2>", page)
    assert titles == ["Run overview", "Episodes", "Toy hit rates"]
    assert "No finished episodes yet" not in page and "Not recorded" not in page
    assert "4 of 4 episode(s) finished" in page
    episodes = re.search(r'<section id="episodes">(.*?)</section>', page, re.S)
    assert episodes is not None
    rows = re.findall(
        r"<tr><td>(m|up)</td>.*?<td>done</td><td class=\"num\">(\d+)</td></tr>", episodes.group(1)
    )
    assert rows == [("m", "6"), ("m", "6"), ("up", "6"), ("up", "6")]
