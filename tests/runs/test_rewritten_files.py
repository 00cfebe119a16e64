"""Files the harness rewrites in place are written whole or not at all, and a damaged one is
read with one clear error: a full disk never costs the record of spend."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import yaml
from typer.testing import CliRunner

from tests.benchmarks.portfolio.conftest import trader
from tradebench.cli import app
from tradebench.llm.loopback import LoopbackServer

runner = CliRunner()

FULL_DISK = textwrap.dedent(
    """
    import json, resource, signal, sys
    from pathlib import Path
    from tradebench.llm.budget import BudgetConfig
    from tradebench.runs.models import ModelPool

    path = Path(sys.argv[1])
    pool = ModelPool(budget=BudgetConfig(max_tokens=10**9), budget_file=path)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the cap fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (40, 40))  # the disk fills after 40 bytes
    try:
        pool.save()
    except OSError as exc:
        print("failed", exc.errno)
    """
)


def test_a_save_on_a_full_disk_keeps_the_previous_record_of_spend(tmp_path: Path) -> None:
    """The write that fails part-way (a real write under a file-size cap, as on a full disk)
    leaves the old `budget.json` byte for byte, and no temporary file beside it."""
    path = tmp_path / "budget.json"
    before = (
        '{"calls": 7, "input_tokens": 1200, "output_tokens": 300, "cost_usd": 0.25, '
        '"unpriced_calls": 0, "prices": {}}\n'
    )
    path.write_text(before)
    done = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(path)], capture_output=True, text=True, check=False
    )
    assert "failed 27" in done.stdout, done.stdout + done.stderr  # EFBIG: the write did fail
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["budget.json"]


def test_a_rerun_after_the_disk_filled_is_one_line_not_a_traceback(
    synth_dataset_dir: Path, tmp_path: Path
) -> None:
    """A `budget.json` left empty (by a version without whole-file writes, or by hand) stops
    the rerun with one line naming it and the fix; following the fix resumes the run."""
    with LoopbackServer(responder=trader) as server:
        spec = {
            "dataset": str(synth_dataset_dir),
            "windows": [{"start": "2022-03-01", "end": "2022-03-03"}],
            "modes": ["memory_only"],
            "masks": ["bright"],
            "agents": [
                {"name": "m", "provider": "openai", "model": "m", "base_url": server.openai_url}
            ],
        }
        path = tmp_path / "spec.yaml"
        path.write_text(yaml.safe_dump(spec))
        out = tmp_path / "run"
        args = ["run", str(path), "-o", str(out)]
        first = runner.invoke(app, [*args, "--max-tokens", "3000"])
        assert first.exit_code == 1 and "Stopped cleanly" in first.output, first.output
        (out / "budget.json").write_bytes(b"")
        again = runner.invoke(app, args)
        assert again.exit_code == 1, again.output
        errors = [x for x in again.output.splitlines() if x.startswith("error: ")]
        assert len(errors) == 1 and "Traceback" not in again.output, again.output
        assert str(out / "budget.json") in errors[0] and "delete it" in errors[0]
        (out / "budget.json").unlink()
        resumed = runner.invoke(app, args)
    assert resumed.exit_code == 0, resumed.output
    assert (pd.read_parquet(out / "summary.parquet")["status"] == "done").all()
