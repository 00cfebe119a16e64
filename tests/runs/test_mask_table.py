"""Mask levels are data: a fifth level is one row of `MASK_TABLE`, and a portfolio model
episode runs under it from a spec, through the files and into the report, hiding what its
row says it hides and nothing else."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from tests.benchmarks.portfolio.conftest import spec_dict, trader
from tradebench.cli import app
from tradebench.data.dataset import load_dataset
from tradebench.llm.loopback import LoopbackServer
from tradebench.masking import MaskLevelRow

runner = CliRunner()
WINDOW = ("2022-03-01", "2022-03-03")
ISO_DAY = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def _user_text(body: dict) -> str:
    return "\n".join(
        str(m.get("content") or "") for m in body.get("messages", []) if m.get("role") == "user"
    )


def test_a_fifth_level_runs_an_episode(
    synth_dataset_dir: Path, tmp_path: Path, fifth_level: MaskLevelRow
) -> None:
    symbols = [str(s) for s in load_dataset(synth_dataset_dir).panel.symbols]
    with LoopbackServer(responder=trader) as server:
        spec = spec_dict(synth_dataset_dir, server.openai_url, ["alias_raw"], ["fixed_candidate"])
        spec["windows"] = [{"start": WINDOW[0], "end": WINDOW[1]}]
        path = tmp_path / "spec.yaml"
        path.write_text(yaml.safe_dump(spec))
        result = runner.invoke(app, ["run", str(path), "-o", str(tmp_path / "run")])
        assert result.exit_code == 0, result.output
        texts = [_user_text(r.body or {}) for r in server.requests]
    assert texts and all("asset_" in t for t in texts)  # the row hides stocks
    assert not any(re.search(rf"\b{re.escape(s)}\b", t) for s in symbols for t in texts)
    days = {d for t in texts for d in ISO_DAY.findall(t)}
    assert "2022-03-01" in days and not any("day_+" in t for t in texts)  # dates shown
    run = tmp_path / "run"
    ident = "scripted_fixed_candidate_alias_raw_s0_20220301-20220303"
    record = json.loads((run / "episodes" / ident / "episode.json").read_text())
    assert record["mask"] == "alias_raw" and record["status"] == "done"
    assert record["price_mode"] == "raw"  # the row does not rebase prices
    summary = pd.read_parquet(run / "summary.parquet").set_index("episode_id")
    assert summary.loc[ident, "mask"] == "alias_raw" and summary.loc[ident, "n_steps"] == 3
    result = runner.invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    matrix = (run / "report.html").read_text().split("Mode × mask matrix")[1]
    assert "alias_raw" in matrix.split("</section>")[0]


def test_the_default_grid_leaves_out_a_level_added_later(
    synth_dataset_dir: Path, tmp_path: Path, fifth_level: MaskLevelRow
) -> None:
    spec = spec_dict(synth_dataset_dir, "http://127.0.0.1:9/v1", [], ["fixed_candidate"])
    spec["agents"] = [spec["agents"][1]]  # the baseline only: nothing is asked
    spec["windows"] = [{"start": WINDOW[0], "end": WINDOW[1]}]
    del spec["masks"]
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = runner.invoke(app, ["run", str(path), "-o", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    written = yaml.safe_load((tmp_path / "run" / "spec.yaml").read_text())
    assert written["masks"] == ["bright", "stock_blind", "date_blind", "blinded"]


@pytest.mark.parametrize("level", ["bright", "stock_blind", "date_blind", "blinded"])
def test_shipped_rows_hide_what_their_names_say(level: str) -> None:
    from tradebench.masking import hides_dates, hides_stocks, rebases_prices

    assert hides_stocks(level) == ("stock" in level or level == "blinded")
    assert hides_dates(level) == ("date" in level or level == "blinded")
    assert rebases_prices(level) == hides_stocks(level)
