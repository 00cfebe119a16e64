"""The measured horizon beside the stated cutoff in the mandate certificate, on the real
S&P 500 2025 data: two models with the same old stated cutoff PASS today; a probe shows that
one remembers facts into the evaluation window, and its combined verdict turns FAIL."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from tests.benchmarks.horizon.conftest import Memory, remembers_until
from tests.benchmarks.mandate.conftest import example_spec, run
from tradebench.benchmarks.horizon.options import HorizonOptions
from tradebench.benchmarks.horizon.uses import MEASURED_FILE
from tradebench.benchmarks.mandate.certificate import read_certificates
from tradebench.cli import app
from tradebench.llm.loopback import LoopbackServer

WINDOW = "20250602-20250804"
runner = CliRunner()


@pytest.fixture(scope="module")
def runs(mandate_dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A mandate run (early, late: stated cutoff 2023-01-01, margin 2 months) and a probe
    of the same two models: early remembers to 2024-09-20, late to 2025-07-10."""
    folder = tmp_path_factory.mktemp("horizon_certificate")
    with LoopbackServer(script=[]) as server:
        spec = example_spec(mandate_dataset, pool_sizes=[5], max_steps=3, cutoff_margin_months=2)
        # one stated cutoff on each model agent (the certificate and the leaderboard read it)
        model = {"provider": "openai", "base_url": server.openai_url}
        model |= {"knowledge_cutoff": "2023-01-01"}
        spec["agents"] = [
            {"name": "ew", "baseline": "equal_weight"},
            {"name": "early", "model": "early", **model},
            {"name": "late", "model": "late", **model},
        ]
        spec["modes"] = ["daily"]
        run(spec, folder / "mandate")
    memory = Memory(mandate_dataset, "2024-09", "2025-08", HorizonOptions())
    rules = {"early": remembers_until("2024-09-20"), "late": remembers_until("2025-07-10")}
    with LoopbackServer(responder=memory.responder(rules)) as server:
        probe = {
            "benchmark": "horizon",
            "dataset": str(mandate_dataset),
            "masks": ["bright"],
            "windows": [{"start": "2024-09-01", "end": "2025-08-31"}],
            "agents": [
                {
                    "name": a,
                    "provider": "openai",
                    "model": a,
                    "base_url": server.openai_url,
                    "max_tokens": 16,
                }
                for a in rules
            ],
        }
        (folder / "probe.yaml").write_text(yaml.safe_dump(probe))
        result = runner.invoke(
            app, ["run", str(folder / "probe.yaml"), "-o", str(folder / "probe")]
        )
        assert result.exit_code == 0, result.output
    return folder / "mandate", folder / "probe"


def test_same_records_and_stated_cutoff_pass_today(runs: tuple[Path, Path]) -> None:
    verdicts = {c.agent: c.verdict for c in read_certificates(runs[0])}
    assert verdicts == {"ew": "PASS", "early": "PASS", "late": "PASS"}


def test_the_measured_horizon_turns_the_late_model_fail(runs: tuple[Path, Path]) -> None:
    mandate, probe = runs
    result = runner.invoke(app, ["horizon", "certify", str(mandate), "--probe", str(probe)])
    assert result.exit_code == 0, result.output
    table = pd.read_parquet(mandate / MEASURED_FILE).set_index("agent")
    assert table["stated_verdict"].to_dict() == {"ew": "PASS", "early": "PASS", "late": "PASS"}
    assert table["verdict"].to_dict() == {"ew": "PASS", "early": "PASS", "late": "FAIL"}
    assert table.loc["late", "measured_horizon"] == "2025-07"
    assert "reaches the window starting 2025-06-02" in table.loc["late", "measured_finding"]
    assert table.loc["early", "measured_horizon"] == "2024-09"
    assert table.loc["late", "episode_id"] == f"late_daily_k5_s0_{WINDOW}"
    # the stated certificates are left as they were
    assert {c.agent: c.verdict for c in read_certificates(mandate)}["late"] == "PASS"


def test_leaderboard_split_can_use_the_measured_horizon(runs: tuple[Path, Path]) -> None:
    mandate, probe = runs
    board = mandate.parent / "board"
    args = ["leaderboard", str(mandate), "-o", str(board), "--resamples", "200"]
    result = runner.invoke(app, [*args, "--measured-horizon", str(probe)])
    assert result.exit_code == 0, result.output
    rows = pd.read_parquet(board / "leaderboard.parquet").drop_duplicates("agent")
    rows = rows.set_index("agent")
    assert rows.loc["early", "period"] == "after cutoff"  # measured 2024-09 .. early 2025
    assert rows.loc["late", "period"] in ("before cutoff", "spans cutoff")  # measured 2025-07+
    assert rows.loc["late", "knowledge_cutoff"] >= "2025-07-31"
    # without the probe the board reads the stated cutoff (2023-01-01, on the agents): the
    # window is after it for both, which the late model's measured horizon contradicts
    stated = runner.invoke(app, args)
    assert stated.exit_code == 0, stated.output
    rows = pd.read_parquet(board / "leaderboard.parquet").drop_duplicates("agent")
    assert rows.set_index("agent").loc["late", "period"] == "after cutoff"
