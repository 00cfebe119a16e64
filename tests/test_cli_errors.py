"""Every failure a user can cause or meet is one `error:` line naming the file or endpoint
and the fix, with exit code 1 and no traceback; windows the data does not cover are said
on screen and the real decision days recorded."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from tradebench.cli import app
from tradebench.data import load_dataset
from tradebench.llm.loopback import LoopbackServer, Reply

runner = CliRunner()


def _one_error_line(result, *needles: str) -> str:
    assert result.exit_code == 1, result.output
    lines = [x for x in result.output.splitlines() if x.strip()]
    errors = [x for x in lines if x.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


def _spec(tmp_path: Path, dataset: Path, **agent: object) -> Path:
    spec = {
        "dataset": str(dataset),
        "windows": [{"start": "2022-03-01", "end": "2022-03-03"}],
        "modes": ["memory_only"],
        "masks": ["bright"],
        "agents": [{"name": "m", "provider": "openai", "model": "m", **agent}],
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.parametrize(("status", "needle"), [(500, "gave up after 2 attempts"), (401, "401")])
def test_a_failing_endpoint_is_one_line(
    synth_dataset_dir: Path, tmp_path: Path, status: int, needle: str
) -> None:
    with LoopbackServer(responder=lambda r: Reply.error(status, body="no")) as server:
        spec = _spec(
            tmp_path, synth_dataset_dir, base_url=server.openai_url, max_attempts=2,
            timeout_s=5,
        )  # fmt: skip
        result = runner.invoke(app, ["run", str(spec), "-o", str(tmp_path / "run")])
    _one_error_line(result, "openai:m", needle)


def test_a_replay_miss_is_one_line(synth_dataset_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    spec = _spec(tmp_path, synth_dataset_dir, base_url="http://127.0.0.1:9/v1")
    raw = yaml.safe_load(spec.read_text()) | {"cache": {"mode": "replay"}}
    spec.write_text(yaml.safe_dump(raw))
    result = runner.invoke(app, ["run", str(spec), "-o", str(tmp_path / "run")])
    _one_error_line(result, "replay")


def test_an_impossible_date_in_a_spec_is_one_line(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "dataset: synthetic:cn\nwindows: [{start: 2024-13-45, end: 2024-03-01}]\n"
        "agents: [{name: ew, baseline: equal_weight}]\n"
    )
    result = runner.invoke(app, ["run", str(spec), "-o", str(tmp_path / "run")])
    _one_error_line(result, str(spec), "YYYY-MM-DD")
    args = ["backtest", "--dataset", str(tmp_path), "--agent", "equal_weight"]
    args += ["--start", "2024-13-45", "--end", "2024-03-01", "--out", str(tmp_path / "bt")]
    _one_error_line(runner.invoke(app, args))


def test_a_cache_that_is_not_a_database_is_one_line(
    synth_dataset_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "cache.sqlite").write_text("this is not SQLite")
    spec = _spec(tmp_path, synth_dataset_dir, base_url="http://127.0.0.1:9/v1")
    result = runner.invoke(app, ["run", str(spec), "-o", str(tmp_path / "run")])
    _one_error_line(result, "cache.sqlite", "not a reply cache")


@pytest.mark.parametrize("name", ["summary.parquet", "steps.parquet"])
def test_a_truncated_table_given_to_report_is_one_line(
    synth_dataset_dir: Path, tmp_path: Path, name: str
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "dataset": str(synth_dataset_dir),
                "windows": [{"start": "2022-03-01", "end": "2022-03-04"}],
                "agents": [{"name": "ew", "baseline": "equal_weight"}],
            }
        )
    )
    assert runner.invoke(app, ["run", str(spec), "-o", str(tmp_path / "run")]).exit_code == 0
    target = next((tmp_path / "run").rglob(name))
    target.write_bytes(target.read_bytes()[:100])  # a partial write
    result = runner.invoke(app, ["report", str(tmp_path / "run")])
    _one_error_line(result, str(target), "delete")


def test_the_whole_us_file_imports(shared_data: Path, tmp_path: Path) -> None:
    """Not a subset: the full file (2.3M rows, delisted names) as a fresh install reads it."""
    source = shared_data / "us" / "sp500_daily_adj_2005_2025.parquet"
    out = tmp_path / "us"
    result = runner.invoke(app, ["data", "import", str(source), "-o", str(out), "--market", "us"])
    assert result.exit_code == 0, result.output
    bars = pd.read_parquet(out / "bars.parquet", columns=["symbol"])
    assert len(bars) == len(pd.read_parquet(source, columns=["symbol"]))
    instruments = load_dataset(out).instruments
    delisted = instruments["delist_date"].notna()
    assert delisted.any() and pd.api.types.is_datetime64_any_dtype(instruments["delist_date"])


def test_a_window_past_the_data_is_said_and_its_real_end_recorded(
    synth_dataset_dir: Path, tmp_path: Path
) -> None:
    last = pd.Timestamp(load_dataset(synth_dataset_dir).panel.dates[-1])
    start = (last - pd.Timedelta(days=6)).date()
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "dataset": str(synth_dataset_dir),
                "windows": [
                    {"start": str(start), "end": str((last + pd.Timedelta(days=90)).date())}
                ],
                "agents": [{"name": "ew", "baseline": "equal_weight"}],
            }
        )
    )
    result = runner.invoke(app, ["run", str(spec), "-o", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert "warning: window" in result.output and "is not covered by the data" in result.output
    summary = pd.read_parquet(tmp_path / "run" / "summary.parquet")
    assert set(summary["last_day"]) == {str(last.date())}
    assert (summary["window_end"] > summary["last_day"]).all()
    shutil.rmtree(tmp_path / "run")


def test_ctrl_c_says_what_was_saved_and_the_rerun_resumes(
    synth_dataset_dir: Path, tmp_path: Path
) -> None:
    """SIGINT mid-run (a real process, as a terminal sends it): one line naming the folder
    and the rerun; the rerun then finishes every episode from what was saved."""
    import signal
    import subprocess
    import sys
    import time

    from tests.benchmarks.portfolio.conftest import trader

    with LoopbackServer(responder=trader, latency_s=0.2) as server:
        spec = _spec(tmp_path, synth_dataset_dir, base_url=server.openai_url)
        raw = yaml.safe_load(spec.read_text())
        raw["windows"] = [{"start": "2022-03-01", "end": "2022-03-10"}]
        spec.write_text(yaml.safe_dump(raw))
        out = tmp_path / "run"
        args = [sys.executable, "-m", "tradebench.cli", "run", str(spec), "-o", str(out)]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(1200):  # liveness: wait for the first journaled step
            if any(p.stat().st_size for p in out.rglob("progress.jsonl")):
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 130, stderr
        lines = [x for x in (stdout + stderr).splitlines() if x.strip()]
        assert len(lines) == 1 and "Traceback" not in stderr, stderr
        assert lines[0].startswith("interrupted") and str(out) in lines[0] and "rerun" in lines[0]
        assert not (out / "summary.parquet").exists()  # it really stopped part-way
        resumed = runner.invoke(app, ["run", str(spec), "-o", str(out)])
    assert resumed.exit_code == 0, resumed.output
    summary = pd.read_parquet(out / "summary.parquet")
    assert (summary["status"] == "done").all()
    steps = pd.read_parquet(next(out.glob("episodes/m_*/steps.parquet")))
    assert len(steps) == 8  # 2022-03-01 .. 03-10: every decision day, none twice
