"""The inspect_ai tasks end to end: inspect's own `eval()` with its OpenAI-compatible
provider (`openai-api/loopback/...`) pointed at our loopback server, the log read back
with `read_eval_log`, and the scores checked against `tradebench run` / `tradebench mcq
eval` on the same spec and the same deterministic replies (the independent path)."""

from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from tests.benchmarks.mcq.test_mcq_eval_no_tools import question_of
from tests.benchmarks.portfolio.conftest import spec_dict, trader
from tests.leak_scan import find_leaks
from tradebench.benchmarks.mcq.records import MCQRecord, read_jsonl
from tradebench.cli import app
from tradebench.data import load_dataset
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply, default_responder

inspect_ai = pytest.importorskip(
    "inspect_ai", reason="inspect_ai is not installed: pip install 'tradebench[inspect]'"
)
from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.log import EvalLog, read_eval_log  # noqa: E402

from tradebench.errors import ConfigError  # noqa: E402
from tradebench.integrations.inspect_tasks import portfolio, single_stock  # noqa: E402

MODEL = "openai-api/loopback/test-model"
runner = CliRunner()


@pytest.fixture(scope="module")
def loopback_server():
    """One loopback server for the module, inspect's provider pointed at it (inspect keeps
    a model's client for the process, so every test must reach the same endpoint)."""
    with LoopbackServer() as server, pytest.MonkeyPatch.context() as patch:
        patch.setenv("LOOPBACK_BASE_URL", server.openai_url)
        patch.setenv("LOOPBACK_API_KEY", "loopback-key")
        patch.setenv("OPENAI_API_KEY", "loopback-key")
        yield server


@pytest.fixture
def served(loopback_server: LoopbackServer):
    """Factory: the module's loopback server answering with `responder` (None: default)."""

    def start(responder) -> LoopbackServer:
        loopback_server.responder = responder or default_responder
        return loopback_server

    return start


def run_inspect(name: str, log_dir: Path, **task_args: Any) -> EvalLog:
    """One task through inspect's `eval()`, its log read back from disk."""
    logs = inspect_eval(
        f"tradebench/{name}",
        model=MODEL,
        task_args=task_args,
        log_dir=str(log_dir),
        display="none",
        max_retries=2,  # a broken endpoint fails the test instead of backing off for hours
    )
    assert len(logs) == 1 and logs[0].status == "success", logs[0].error
    return read_eval_log(logs[0].location)


def log_text(log: EvalLog) -> str:
    """Every file inside the `.eval` archive, as one text."""
    with zipfile.ZipFile(log.location) as archive:
        return "\n".join(archive.read(n).decode("utf-8", "replace") for n in archive.namelist())


def same(a: float, b: float) -> bool:
    """Equal, NaN equal to NaN."""
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-12, abs=1e-15)


def run_cli(args: list[str]) -> None:
    """A `tradebench` command, which must succeed."""
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output


def write_spec(spec: dict[str, Any], path: Path) -> Path:
    """The spec as YAML."""
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def assert_panel_equals_run(log: EvalLog, summary: pd.DataFrame, key: str) -> None:
    """Each sample's panel equals `tradebench run`'s row of the same episode, field by field."""
    llm = summary[summary["kind"] == "llm"]
    assert len(log.samples) == len(llm)
    for sample in log.samples:
        value = sample.scores[key].value
        row = llm[
            (llm["mask"] == sample.metadata["mask"]) & (llm["seed"] == sample.metadata["seed"])
        ]
        row = row[row["mode"] == sample.metadata["mode"]].iloc[0]
        assert value, "empty panel"
        for name, got in value.items():
            assert same(got, float(row[name])), (name, got, row[name])


def test_portfolio_task_matches_tradebench_run_and_leaks_nothing(
    cn_dataset_dir: Path, tmp_path: Path, served
) -> None:
    server = served(trader)
    spec = spec_dict(
        cn_dataset_dir, server.openai_url, ["blinded"], ["open_research"], end="2024-03-05"
    )
    spec["agents"][0]["tool_protocol"] = "native"
    path = write_spec(spec, tmp_path / "spec.yaml")
    run_cli(["run", str(path), "-o", str(tmp_path / "run")])
    summary = pd.read_parquet(tmp_path / "run" / "summary.parquet")

    log = run_inspect("portfolio", tmp_path / "logs", spec=str(path), work_dir=str(tmp_path / "w"))
    assert [s.id for s in log.samples] == ["open_research_blinded_s0_w1"]
    assert_panel_equals_run(log, summary, "tradebench_panel")
    panel = log.samples[0].scores["tradebench_panel"].value
    means = {s.name: s.metrics["mean"].value for s in log.results.scores}
    assert means.keys() == panel.keys() and means["total_return"] == panel["total_return"] != 0

    sample = log.samples[0]
    roles = [m.role for m in sample.messages]
    assert roles.count("system") == 3  # one conversation per decision day
    tool_results = [m for m in sample.messages if m.role == "tool"]
    assert {m.function for m in tool_results} >= {"get_market_context", "screen_candidates"}
    offered = {t.name for e in sample.events if e.event == "model" for t in e.tools}
    assert {"screen_candidates", "submit_action"} <= offered  # our tools as inspect tools
    assert "asset_" in json.dumps([m.model_dump() for m in sample.messages])

    ds = load_dataset(cn_dataset_dir)
    symbols = [str(s) for s in ds.panel.symbols]
    assert find_leaks(log_text(log), symbols, ds.panel.dates) == []
    assert find_leaks(summary.to_json(), symbols, ds.panel.dates)  # the scan can fail


def test_single_stock_task_matches_tradebench_run(
    us_dataset_dir: Path, tmp_path: Path, served
) -> None:
    server = served(None)  # the default responder: a minimal valid forced decision
    spec = {
        "benchmark": "single_stock",
        "dataset": str(us_dataset_dir),
        "windows": [{"start": "2022-10-03", "end": "2022-12-30"}],
        "masks": ["stock_blind"],
        "agents": [
            {
                "name": "scripted",
                "provider": "openai",
                "model": "test-model",
                "base_url": server.openai_url,
                "tool_protocol": "native",
            }
        ],
        "options": {"symbols": ["TSLA"], "personas": ["adaptive"], "episode_length": 3},
    }
    path = write_spec(spec, tmp_path / "spec.yaml")
    run_cli(["run", str(path), "-o", str(tmp_path / "run")])
    summary = pd.read_parquet(tmp_path / "run" / "summary.parquet")

    log = run_inspect(
        "single_stock", tmp_path / "logs", spec=str(path), work_dir=str(tmp_path / "w")
    )
    assert_panel_equals_run(log, summary, "tradebench_panel")
    assert "composite" in log.samples[0].scores["tradebench_panel"].value
    ds = load_dataset(us_dataset_dir)
    text = log_text(log)
    assert find_leaks(text, [str(s) for s in ds.panel.symbols], ds.panel.dates, True, False) == []
    assert find_leaks(text, ["TSLA"], ds.panel.dates, False, True)  # dates are not masked here


def answering(records: list[MCQRecord]):
    """Responder: the key for questions at even positions, a wrong letter at odd ones, and
    no letter at all for the last question."""

    def respond(request: RecordedRequest) -> Reply:
        record = question_of(request, records)
        i = records.index(record)
        if i == len(records) - 1:
            return Reply.say("I cannot tell.")
        wrong = next(letter for letter in "ABCD" if letter != record.answer)
        return Reply.say(record.answer if i % 2 == 0 else wrong)

    return respond


def test_mcq_task_matches_mcq_eval(us_dataset_dir: Path, tmp_path: Path, served) -> None:
    questions = tmp_path / "q.jsonl"
    build = ["mcq", "build", "--dataset", str(us_dataset_dir), "--symbol", "AAPL"]
    run_cli([*build, "--num-questions", "6", "--strategy", "sma_cross", "-o", str(questions)])
    records = read_jsonl(questions)
    server = served(answering(records))
    run_cli(
        ["mcq", "eval", str(questions), "--model", "openai:test-model",
         "--base-url", server.openai_url, "-o", str(tmp_path / "eval"), "--no-report"]
    )  # fmt: skip
    summary = json.loads((tmp_path / "eval" / "summary.json").read_text())["models"][0]
    results = pd.read_parquet(tmp_path / "eval" / "results.parquet").set_index("question_id")

    log = run_inspect("mcq", tmp_path / "logs", questions=str(questions))
    assert sorted(s.id for s in log.samples) == sorted(r.id for r in records)
    for sample in log.samples:
        score = sample.scores["tradebench_mcq_score"]
        letter = results.loc[sample.id, "letter"]
        assert score.answer == (None if pd.isna(letter) else letter)
        assert (score.value == "C") == bool(results.loc[sample.id, "correct"])
        assert [m.role for m in sample.messages] == ["system", "user", "assistant"]
    metrics = {m.name: m.value for m in log.results.scores[0].metrics.values()}
    assert metrics["accuracy"] == pytest.approx(summary["overall"]["mean"])
    assert metrics["chance"] == summary["random_baseline"] == 0.25
    assert metrics["constant_letter"] == pytest.approx(
        summary["overall"]["constant_letter_accuracy"]
    )
    for tier, acc in summary["tiers"].items():
        assert metrics[f"accuracy_{tier}"] == pytest.approx(acc["mean"])
        assert metrics[f"constant_letter_{tier}"] == pytest.approx(acc["constant_letter_accuracy"])
    # the oracle: the replies are right at positions 0, 2 and 4 of the six questions
    assert metrics["accuracy"] == pytest.approx(3 / 6)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"window": "2022-13-01:2022-03-29"}, "use START:END, both YYYY-MM-DD"),
        ({"window": "2022-03-01"}, "use START:END"),
        ({"masks": "dim"}, "masks: .dim. not declared by benchmark .portfolio.; allowed: bright"),
        ({"spec": "missing.yaml"}, "cannot read run spec"),
    ],
)
def test_bad_task_parameters_fail_with_one_clear_line(
    tmp_path: Path, args: dict[str, str], message: str
) -> None:

    with pytest.raises(ConfigError, match=message) as raised:
        portfolio(work_dir=str(tmp_path), **args)
    assert "\n" not in str(raised.value)
    assert not (tmp_path / "episodes").exists()  # refused before any episode


def test_a_spec_of_another_benchmark_is_refused(tmp_path: Path) -> None:

    spec = write_spec(
        {
            "benchmark": "portfolio",
            "dataset": "synthetic:cn",
            "agents": [{"name": "ew", "baseline": "equal_weight"}],
        },
        tmp_path / "spec.yaml",
    )
    with pytest.raises(ConfigError, match="is a 'portfolio' spec, not 'single_stock'"):
        single_stock(spec=str(spec), work_dir=str(tmp_path / "w"))


def test_one_sample_per_model_episode_of_the_grid(cn_dataset_dir: Path, tmp_path: Path) -> None:
    spec = spec_dict(cn_dataset_dir, "http://127.0.0.1:9/v1", ["bright", "blinded"], seeds=[0, 1])
    path = write_spec(spec, tmp_path / "spec.yaml")
    made = portfolio(
        spec=str(path), modes="memory_only,open_research", work_dir=str(tmp_path / "w")
    )
    ids = [s.id for s in made.dataset]
    assert len(ids) == len(set(ids)) == 2 * 2 * 2  # modes x masks x seeds; the baseline is not one
    assert "open_research_blinded_s1_w1" in ids
    blinded = [s for s in made.dataset if s.metadata["mask"] == "blinded"]
    assert all("2024" not in str(s.input) for s in blinded)
    assert any("2024-03-01" in str(s.input) for s in made.dataset if s.metadata["mask"] == "bright")
