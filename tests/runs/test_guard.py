"""Run folders are safe to share and to rerun: one writer at a time, a changed spec refused
with its differing keys (or only new cells added when asked), a changed dataset or an
unreadable guard file refused in one line, no orphaned workers."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from tests.benchmarks.portfolio.conftest import spec_dict, trader
from tradebench.cli import app
from tradebench.llm.loopback import LoopbackServer

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _write(path: Path, spec: dict) -> Path:
    path.write_text(yaml.safe_dump(spec))
    return path


def _wait_for(check, what: str, proc: subprocess.Popen | None = None) -> None:
    """Poll until `check()` holds (liveness, not a time bound on the code under test)."""
    for _ in range(1200):
        if check():
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the run ended before {what}")
        time.sleep(0.05)
    raise AssertionError(f"gave up waiting for {what}")


def test_a_second_writer_is_refused_with_the_holders_pid(
    cn_dataset_dir: Path, tmp_path: Path
) -> None:
    with LoopbackServer(responder=trader, latency_s=0.2) as server:
        spec = spec_dict(cn_dataset_dir, server.openai_url, ["blinded"], ["memory_only"])
        spec["agents"] = spec["agents"][:1]
        path = _write(tmp_path / "spec.yaml", spec)
        out = tmp_path / "run"
        first = subprocess.Popen(
            [sys.executable, "-m", "tradebench.cli", "run", str(path), "-o", str(out)],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        lock = out / ".lock"
        _wait_for(
            lambda: lock.exists() and lock.read_text().strip() == str(first.pid),
            "the lock",
            first,
        )
        second = runner.invoke(app, ["run", str(path), "-o", str(out)])
        assert second.exit_code == 1
        assert f"pid {first.pid}" in second.output and "Traceback" not in second.output
        assert first.wait() == 0
        steps = len(pd.bdate_range("2024-03-01", "2024-03-07"))
        assert len(server.requests) == steps  # nothing was asked twice
    assert runner.invoke(app, ["run", str(path), "-o", str(out)]).exit_code == 0  # released


def test_a_changed_spec_is_refused_unless_it_only_adds_cells(
    synth_dataset_dir: Path, tmp_path: Path
) -> None:
    spec = {
        "dataset": str(synth_dataset_dir),
        "windows": [{"start": "2022-03-01", "end": "2022-03-04"}],
        "seeds": [0],
        "agents": [{"name": "mom", "baseline": "momentum_topk", "args": {"k": 20}}],
        "options": {"initial_cash": 1_000_000},
    }
    out = tmp_path / "run"
    path = _write(tmp_path / "a.yaml", spec)
    assert runner.invoke(app, ["run", str(path), "-o", str(out)]).exit_code == 0
    changed = spec | {
        "agents": [{"name": "mom", "baseline": "momentum_topk", "args": {"k": 5}}],
        "options": {"initial_cash": 5_000_000},
    }
    result = runner.invoke(app, ["run", str(_write(tmp_path / "b.yaml", changed)), "-o", str(out)])
    assert result.exit_code == 1
    assert "options.initial_cash" in result.output and "agents" in result.output
    assert "--add-cells" in result.output
    refused = runner.invoke(
        app, ["run", str(_write(tmp_path / "b.yaml", changed)), "-o", str(out), "--add-cells"]
    )
    assert refused.exit_code == 1  # changing an existing cell is not an addition
    grown = spec | {"seeds": [0, 1], "concurrency": 2}  # a new seed; transport may change
    before = (out / "episodes" / "mom_s0_20220301-20220304" / "steps.parquet").stat().st_mtime_ns
    plain = runner.invoke(app, ["run", str(_write(tmp_path / "c.yaml", grown)), "-o", str(out)])
    assert plain.exit_code == 1 and "seeds" in plain.output
    added = runner.invoke(
        app, ["run", str(_write(tmp_path / "c.yaml", grown)), "-o", str(out), "--add-cells"]
    )
    assert added.exit_code == 0, added.output
    summary = pd.read_parquet(out / "summary.parquet")
    assert set(summary["seed"]) == {0, 1}
    after = (out / "episodes" / "mom_s0_20220301-20220304" / "steps.parquet").stat().st_mtime_ns
    assert after == before  # the old cell was not run again
    assert yaml.safe_load((out / "spec.yaml").read_text())["seeds"] == [0, 1]


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_killing_a_run_leaves_no_worker_behind(synth_dataset_dir: Path, tmp_path: Path) -> None:
    spec = {
        "benchmark": "slow",
        "dataset": str(synth_dataset_dir),
        "windows": [{"start": "2022-03-01", "end": "2022-03-04"}],
        "seeds": [0, 1, 2],
        "agents": [{"name": "sleepy", "baseline": "any"}],
        "options": {"seconds": 120},
    }
    path = _write(tmp_path / "slow.yaml", spec)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.runs.slow_benchmark", "run", str(path), "-o",
         str(tmp_path / "run")],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    workers: set[int] = set()

    def pool_started() -> bool:
        workers.update(_children(proc.pid))
        return len(workers) >= 2

    _wait_for(pool_started, "the worker pool", proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    _wait_for(lambda: not any(_alive(w) for w in workers), "the workers to die")


def _one_error_line(result, *needles: str) -> str:
    assert result.exit_code == 1, result.output
    lines = [x for x in result.output.splitlines() if x.strip()]
    errors = [x for x in lines if x.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` with its bytes (the lock file aside)."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def test_a_dataset_reimported_under_a_half_finished_run_is_refused(
    synth_dataset_dir: Path, tmp_path: Path
) -> None:
    """The resume would run the model's remaining steps on the new data beside baselines
    finished on the old: the folder guard compares the dataset's manifest and refuses."""
    from tradebench.data.synth import SynthConfig, synthesize

    data = tmp_path / "data"
    shutil.copytree(synth_dataset_dir, data)
    with LoopbackServer(responder=trader) as server:
        spec = {
            "dataset": str(data),
            "windows": [{"start": "2022-03-01", "end": "2022-03-10"}],
            "modes": ["memory_only"],
            "masks": ["bright"],
            "agents": [
                {"name": "m", "provider": "openai", "model": "m", "base_url": server.openai_url},
                {"name": "ew", "baseline": "equal_weight"},
            ],
        }
        path = _write(tmp_path / "spec.yaml", spec)
        out = tmp_path / "run"
        args = ["run", str(path), "-o", str(out)]
        stopped = runner.invoke(app, [*args, "--max-tokens", "4000"])
        _one_error_line(stopped, "Stopped cleanly")
        before = _tree(out)
        shutil.rmtree(data)
        synthesize(data, SynthConfig(seed=1))  # re-imported: same path, other prices
        refused = runner.invoke(app, args)
        _one_error_line(refused, str(out), "dataset", "changed", "new --out folder")
        assert _tree(out) == before  # nothing written, nothing mixed
        shutil.rmtree(data)
        shutil.copytree(synth_dataset_dir, data)  # the data it was written with: resumes
        resumed = runner.invoke(app, args)
    assert resumed.exit_code == 0, resumed.output
    summary = pd.read_parquet(out / "summary.parquet")
    assert (summary["status"] == "done").all() and len(summary) == 3


@pytest.mark.parametrize(
    ("name", "damage"),
    [
        ("spec.yaml", b"agents: [unclosed\n"),  # not YAML
        ("spec.yaml", b"- just\n- a list\n"),  # YAML, not a spec
        ("spec.yaml", b""),  # a full disk's leftover
        ("guard.json", b""),
        ("guard.json", b'{"dataset_manifest_sha256": 3}'),
    ],
)
def test_an_unreadable_guard_file_refuses_the_run(
    synth_dataset_dir: Path, tmp_path: Path, name: str, damage: bytes
) -> None:
    """Without its record the folder cannot tell a changed spec or dataset from the same one:
    the run stops in one line and leaves the folder as it was (the file is not rewritten)."""
    spec = {
        "dataset": str(synth_dataset_dir),
        "windows": [{"start": "2022-03-01", "end": "2022-03-04"}],
        "agents": [{"name": "ew", "baseline": "equal_weight"}],
    }
    out = tmp_path / "run"
    args = ["run", str(_write(tmp_path / "a.yaml", spec)), "-o", str(out)]
    assert runner.invoke(app, args).exit_code == 0
    (out / name).write_bytes(damage)
    before = _tree(out)
    changed = spec | {"agents": [{"name": "ew", "baseline": "momentum_topk"}]}
    for path in (tmp_path / "a.yaml", _write(tmp_path / "b.yaml", changed)):
        result = runner.invoke(app, ["run", str(path), "-o", str(out)])
        _one_error_line(result, str(out / name), "restore it")
        assert _tree(out) == before


def test_a_spec_refused_before_running_leaves_its_out_folder_free(
    synth_dataset_dir: Path, tmp_path: Path
) -> None:
    """An unknown baseline is found before the folder is claimed: the corrected spec then
    runs in the same --out folder."""
    spec = {
        "dataset": str(synth_dataset_dir),
        "windows": [{"start": "2022-03-01", "end": "2022-03-04"}],
        "agents": [{"name": "ew", "baseline": "equal_wieght"}],
    }
    out = tmp_path / "run"
    wrong = runner.invoke(app, ["run", str(_write(tmp_path / "a.yaml", spec)), "-o", str(out)])
    _one_error_line(wrong, "unknown agent 'equal_wieght'")
    assert not out.exists()
    spec["agents"] = [{"name": "ew", "baseline": "equal_weight"}]
    fixed = runner.invoke(app, ["run", str(_write(tmp_path / "a.yaml", spec)), "-o", str(out)])
    assert fixed.exit_code == 0, fixed.output
    assert len(pd.read_parquet(out / "summary.parquet")) == 2


def test_a_folder_written_by_another_results_version_is_refused(
    synth_dataset_dir: Path, tmp_path: Path
) -> None:
    """Code that computes results differently does not finish a folder begun by the old."""
    import json

    spec = {
        "dataset": str(synth_dataset_dir),
        "windows": [{"start": "2022-03-01", "end": "2022-03-04"}],
        "agents": [{"name": "ew", "baseline": "equal_weight"}],
    }
    out = tmp_path / "run"
    args = ["run", str(_write(tmp_path / "a.yaml", spec)), "-o", str(out)]
    assert runner.invoke(app, args).exit_code == 0
    guard = json.loads((out / "guard.json").read_text())
    (out / "guard.json").write_text(json.dumps(guard | {"results_version": 0}))
    _one_error_line(runner.invoke(app, args), "results version 0", "new --out folder")
