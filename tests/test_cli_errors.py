"""Every failure a user can cause or meet is one `error:` line naming the file or endpoint
and the fix, with exit code 1 and no traceback; windows the data does not cover are said
on screen and the real decision days recorded."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

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


@pytest.mark.parametrize(
    ("status", "key_env", "needles"),
    [
        (500, None, ("gave up after 2 attempts", "max_attempts")),
        (401, None, ("401", "No API key was sent", "api_key_env")),
        (401, "TB_TEST_KEY", ("401", "Check the key in TB_TEST_KEY")),
    ],
)
def test_a_failing_endpoint_is_one_line_with_a_true_hint(
    synth_dataset_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    status: int,
    key_env: str | None,
    needles: tuple[str, ...],
) -> None:
    """The hint names what the user can change: the spec's `max_attempts` (not a class of
    the code), and for a 401 the key variable only when a key was sent from one."""
    monkeypatch.setenv("TB_TEST_KEY", "sk-test-not-a-real-key")
    entry: dict[str, object] = {"max_attempts": 2, "timeout_s": 5}
    if key_env:
        entry["api_key_env"] = key_env
    with LoopbackServer(responder=lambda r: Reply.error(status, body="no")) as server:
        spec = _spec(tmp_path, synth_dataset_dir, base_url=server.openai_url, **entry)
        result = runner.invoke(app, ["run", str(spec), "-o", str(tmp_path / "run")])
    line = _one_error_line(result, "openai:m", *needles)
    assert "RetryPolicy" not in line and "OPENAI_API_KEY" not in line


@pytest.mark.parametrize("url", ["htp:/127.0.0.1:8080/v1", "http://", "localhost:8080/v1"])
def test_a_base_url_that_cannot_be_valid_is_refused_when_read(tmp_path: Path, url: str) -> None:
    """Refused with the spec (before any episode), and by `llm ping`, instead of six
    attempts with backoff against a URL no server can answer."""
    spec = _spec(tmp_path, Path("synthetic:cn"), base_url=url)
    result = runner.invoke(app, ["run", str(spec), "-o", str(tmp_path / "run")])
    line = _one_error_line(result, str(spec), "base_url", "http(s) URL")
    assert "gave up" not in line and not (tmp_path / "run").exists()
    ping = runner.invoke(app, ["llm", "ping", "openai:m", "--base-url", url])
    _one_error_line(ping, "base_url", "http(s) URL")


def test_replay_from_the_cache_needs_no_key(
    synth_dataset_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replay sends nothing, so the key variable may be unset; the replayed run writes the
    same summary as the recorded one, and the server sees no request."""
    from tests.benchmarks.portfolio.conftest import trader

    monkeypatch.setenv("TB_TEST_KEY", "sk-test-not-a-real-key")
    with LoopbackServer(responder=trader) as server:
        spec = _spec(
            tmp_path, synth_dataset_dir, base_url=server.openai_url, api_key_env="TB_TEST_KEY"
        )
        cache = tmp_path / "cache.sqlite"
        raw = yaml.safe_load(spec.read_text()) | {"cache": {"path": str(cache)}}
        spec.write_text(yaml.safe_dump(raw))
        recorded = runner.invoke(app, ["run", str(spec), "-o", str(tmp_path / "a")])
        assert recorded.exit_code == 0, recorded.output
        sent = server.count()
        monkeypatch.delenv("TB_TEST_KEY")
        spec.write_text(yaml.safe_dump(raw | {"cache": {"path": str(cache), "mode": "replay"}}))
        replayed = runner.invoke(app, ["run", str(spec), "-o", str(tmp_path / "b")])
        assert replayed.exit_code == 0, replayed.output
        assert server.count() == sent
    columns = ["episode_id", "status", "total_return", "n_steps"]
    a = pd.read_parquet(tmp_path / "a" / "summary.parquet")
    b = pd.read_parquet(tmp_path / "b" / "summary.parquet")
    assert a[columns].equals(b[columns])


def test_a_window_before_the_data_names_the_datasets_real_first_day(
    synth_dataset_dir: Path, tmp_path: Path
) -> None:
    bars = pd.read_parquet(synth_dataset_dir / "bars.parquet", columns=["date"])
    first = pd.Timestamp(bars["date"].min())
    start = (first - pd.Timedelta(days=200)).date()
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "dataset": str(synth_dataset_dir),
                "windows": [
                    {"start": str(start), "end": str((first + pd.Timedelta(days=9)).date())}
                ],
                "agents": [{"name": "ew", "baseline": "equal_weight"}],
            }
        )
    )
    result = runner.invoke(app, ["run", str(spec), "-o", str(tmp_path / "run")])
    line = _one_error_line(result, f"starts before the dataset's first day {first.date()}")
    assert f"{start} is the dataset's first day" not in line


def test_an_index_symbol_missing_from_the_index_file_is_one_line(
    shared_data: Path, tmp_path: Path
) -> None:
    """Not a dataset without an index and no finding: the symbols the file holds are named."""
    bars = pd.read_parquet(shared_data / "cn" / "csi300_members_daily_2018_2026.parquet")
    bars = bars[(bars["date"] >= "2024-01-02") & (bars["date"] <= "2024-01-31")]
    bars = bars[bars["symbol"].isin(sorted(bars["symbol"].unique())[:5])]
    source = tmp_path / "bars.parquet"
    bars.to_parquet(source)
    index = shared_data / "cn" / "csi300_index_daily.csv"
    held = sorted(pd.read_csv(index, usecols=["symbol"])["symbol"].astype(str).unique())
    args = ["data", "import", str(source), "-o", str(tmp_path / "ds"), "--market", "cn"]
    args += ["--index", str(index), "--index-symbol", "SH000905"]
    line = _one_error_line(runner.invoke(app, args), "SH000905", str(index), held[0])
    assert not (tmp_path / "ds" / "manifest.json").exists(), line
    args[-1] = held[0]
    assert runner.invoke(app, args).exit_code == 0
    assert load_dataset(tmp_path / "ds").index is not None


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


def _sigint_as_in_a_terminal() -> None:
    """In the child before exec: SIGINT at its default, as a terminal's foreground job has
    it. An ignored SIGINT is inherited through exec, and a suite started in the background
    by a shell without job control (`pytest ... &` in a script) ignores it in every xdist
    worker; Python then keeps it ignored and Ctrl-C could never reach the run."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_says_what_was_saved_and_the_rerun_resumes(
    synth_dataset_dir: Path, tmp_path: Path
) -> None:
    """SIGINT mid-run (a real process, as a terminal sends it): one line naming the folder
    and the rerun; the rerun then finishes every episode from what was saved."""
    import signal
    import subprocess
    import sys
    import threading
    import time

    from tests.benchmarks.portfolio.conftest import trader

    out = tmp_path / "run"
    release = threading.Event()

    def journaled() -> bool:
        return any(p.stat().st_size for p in out.rglob("progress.jsonl"))

    def held(request: Any) -> Any:
        """The trader, except that once a step is journaled the next calls wait until the
        signal has been sent: the run is surely mid-way when it arrives, however slow or
        fast the machine."""
        if journaled():
            release.wait(120)
        return trader(request)

    with LoopbackServer(responder=held, latency_s=0.2) as server:
        spec = _spec(tmp_path, synth_dataset_dir, base_url=server.openai_url)
        raw = yaml.safe_load(spec.read_text())
        raw["windows"] = [{"start": "2022-03-01", "end": "2022-03-10"}]
        spec.write_text(yaml.safe_dump(raw))
        # faulthandler: a run that does not stop is aborted below with every thread's stack
        run = ["-m", "tradebench.cli", "run", str(spec), "-o", str(out)]
        args = [sys.executable, "-X", "faulthandler", *run]
        proc = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_sigint_as_in_a_terminal,
        )
        for _ in range(6000):  # liveness: wait for the first journaled step
            if journaled() or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert journaled() and proc.poll() is None, "no step was journaled, or the run ended"
        proc.send_signal(signal.SIGINT)
        try:
            stdout, stderr = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            stdout, stderr = proc.communicate(timeout=60)
            stack = f"the run did not stop on SIGINT; its threads:\n{stderr}"
            raise AssertionError(stack) from None
        finally:
            release.set()
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
