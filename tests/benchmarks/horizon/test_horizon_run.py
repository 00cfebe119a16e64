"""The probe through the harness and the loopback server, on the real CSI300 2023-2024:
a model that remembers facts up to a date D has its horizon measured within a month of D at
the default size; a guessing model shows no horizon and never a FAIL; a model that answers
only the blinded controls has its curve declared invalid; a killed run resumes."""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from tests.benchmarks.horizon.conftest import Memory, never, remembers_blinded, remembers_until
from tradebench.benchmarks.horizon.curve import Horizon
from tradebench.benchmarks.horizon.options import HorizonOptions
from tradebench.benchmarks.horizon.results import read_horizons
from tradebench.benchmarks.horizon.uses import first_window_start, measured_reason
from tradebench.cli import app
from tradebench.llm.loopback import LoopbackServer

D = "2023-09-14"
runner = CliRunner()


def _spec(folder: Path, dataset: Path, url: str, agents: list[str], **fields) -> Path:
    spec = {
        "benchmark": "horizon",
        "dataset": str(dataset),
        "seeds": [0],
        "agents": [
            {"name": a, "provider": "openai", "model": a, "base_url": url, "max_tokens": 16}
            for a in agents
        ],
        **fields,
    }
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _run(spec: Path, out: Path) -> None:
    result = runner.invoke(app, ["run", str(spec), "-o", str(out)])
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def default_run(cn_dataset_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`rem` remembers every fact dated up to D, `guess` nothing; 18 months at 72 a month."""
    folder = tmp_path_factory.mktemp("horizon_default")
    memory = Memory(cn_dataset_dir, "2023-01", "2024-06", HorizonOptions())
    respond = memory.responder({"rem": remembers_until(D), "guess": never})
    with LoopbackServer(responder=respond) as server:
        spec = _spec(
            folder,
            cn_dataset_dir,
            server.openai_url,
            ["rem", "guess"],
            windows=[{"start": "2023-01-01", "end": "2024-06-30"}],
            masks=["bright"],
            options={"serving_dates": {"rem": "2024-02-20", "guess": "2024-02-20"}},
        )
        _run(spec, folder / "run")
        assert len(server.requests) == 2 * 18 * 72
    result = runner.invoke(app, ["horizon", "show", str(folder / "run")])
    assert result.exit_code == 0, result.output
    return folder / "run"


def test_remembering_model_horizon_is_within_a_month_of_d(default_run: Path) -> None:
    h = read_horizons(default_run)["rem"]
    assert h.valid and h.powered and not h.censored
    assert abs((pd.Period(h.horizon, "M") - pd.Period(D, "M")).n) <= 1, h.horizon
    assert h.horizon_low <= D[:7] <= h.horizon_high
    months = {m.month: m for m in h.months}
    assert months["2023-08"].accuracy == 1.0 and months["2023-08"].above
    assert [m.role for m in h.months].count("after_serving") == 4  # 2024-03 .. 2024-06
    assert not {c.name: c for c in h.controls}["after_serving"].above
    assert first_window_start(h) == (pd.Period(h.horizon_high, "M") + 1).start_time.date()


def test_guessing_model_has_no_horizon_and_never_a_fail(default_run: Path) -> None:
    h = read_horizons(default_run)["guess"]
    assert h.valid and h.powered and h.horizon is None
    assert all(abs(m.accuracy - m.chance) < 0.2 for m in h.months)
    for start in pd.date_range("2023-01-01", "2025-06-01", freq="MS"):
        reason = measured_reason(h, start.date(), 0)
        assert reason is None or reason.verdict != "FAIL"
    assert measured_reason(h, date(2024, 3, 4), 0) is None  # clear of the window: no finding


def test_report_and_files_show_the_curve(default_run: Path) -> None:
    result = runner.invoke(app, ["report", str(default_run)])
    assert result.exit_code == 0, result.output
    page = (default_run / "report.html").read_text()
    assert "Knowledge horizon" in page and "measured horizon 2023-0" in page
    plot = (default_run / "horizon_rem.html").read_text()
    assert (
        "horizon 2023-0" in plot
        and "blinded"
        not in json.loads((default_run / "horizon.json").read_text())["agents"][0]["controls"][0][
            "note"
        ][:3]
    )


@pytest.fixture(scope="module")
def masked_run(cn_dataset_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four months, bright and blinded: `rem` remembers bright facts up to 2023-02-10,
    `leaky` answers only the blinded controls."""
    folder = tmp_path_factory.mktemp("horizon_masked")
    options = {"questions_per_month": 24}
    memory = Memory(cn_dataset_dir, "2023-01", "2023-04", HorizonOptions(**options))
    respond = memory.responder({"rem": remembers_until("2023-02-10"), "leaky": remembers_blinded})
    with LoopbackServer(responder=respond) as server:
        spec = _spec(
            folder,
            cn_dataset_dir,
            server.openai_url,
            ["rem", "leaky"],
            windows=[{"start": "2023-01-01", "end": "2023-04-30"}],
            masks=["bright", "blinded"],
            options=options,
        )
        _run(spec, folder / "run")
        assert len(server.requests) == 2 * 2 * 4 * 24
    return folder / "run"


def test_a_model_that_knows_only_the_blinded_questions_is_invalid(masked_run: Path) -> None:
    found = read_horizons(masked_run)
    leaky, rem = found["leaky"], found["rem"]
    blinded = {c.name: c for c in leaky.controls}["blinded"]
    assert blinded.above and blinded.accuracy == 1.0 and not leaky.valid
    assert measured_reason(leaky, date(2024, 1, 2), 0).verdict == "UNKNOWN"
    assert "controls are above chance" in measured_reason(leaky, date(2024, 1, 2), 0).evidence
    with pytest.raises(ValueError, match="above chance"):
        first_window_start(leaky)
    assert rem.valid and not {c.name: c for c in rem.controls}["blinded"].above
    assert not rem.powered  # 24 questions a month cannot detect +15 points at 80%


def test_a_killed_episode_resumes_with_the_same_answers(
    masked_run: Path, cn_dataset_dir: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "run"
    shutil.copytree(masked_run, copy)
    episode = copy / "episodes" / "rem_bright_s0_20230101-20230430"
    lines = (episode / "progress.jsonl").read_text().splitlines(keepends=True)
    (episode / "progress.jsonl").write_text("".join(lines[:30]) + lines[30][:7])
    (episode / "answers.parquet").unlink()
    meta = json.loads((episode / "episode.json").read_text())
    (episode / "episode.json").write_text(json.dumps({**meta, "status": "running"}))
    spec = yaml.safe_load((copy / "spec.yaml").read_text())
    with LoopbackServer() as server:  # a request would get a tool call, not a letter
        spec["agents"] = [
            {**a, "model": {**a["model"], "base_url": server.openai_url}} for a in spec["agents"]
        ]
        (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
        _run(tmp_path / "spec.yaml", copy)
        assert server.requests == []  # the cache answered the unfinished questions
    progress = [json.loads(x) for x in (episode / "progress.jsonl").read_text().splitlines()]
    assert [line["id"] for line in progress] == [
        line["id"] for line in map(json.loads, lines)
    ]  # none asked twice
    before = pd.read_parquet(masked_run / "episodes" / episode.name / "answers.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(episode / "answers.parquet"), before)


@pytest.mark.parametrize(
    ("masks", "expected"),
    [
        (["stock_blind"], "masks: 'stock_blind' not declared by benchmark 'horizon'; allowed: "
         "bright, blinded"),
        (["blinded"], "set `masks: [bright, blinded]`"),
    ],
)  # fmt: skip
def test_bad_specs_are_one_error_line(
    cn_dataset_dir: Path, tmp_path: Path, masks: list[str], expected: str
) -> None:
    spec = _spec(
        tmp_path,
        cn_dataset_dir,
        "http://127.0.0.1:9/v1",
        ["m"],
        windows=[{"start": "2023-01-01", "end": "2023-02-28"}],
        masks=masks,
    )
    result = runner.invoke(app, ["run", str(spec), "-o", str(tmp_path / "run")])
    assert result.exit_code != 0 and expected in result.output
    assert len([line for line in result.output.splitlines() if line.strip()]) == 1
    assert "Traceback" not in result.output


def test_horizon_record_round_trips(default_run: Path) -> None:
    text = (default_run / "horizon.json").read_text()
    agents = json.loads(text)["agents"]
    assert [Horizon.model_validate(a).agent for a in agents] == ["rem", "guess"]
