"""Price mode: rebased by default where the mask hides stocks, actual elsewhere; an
explicit setting wins; episode.json, summary.parquet and a verifiers rollout's info say
what each episode ran under."""

from __future__ import annotations

import asyncio
import json
from datetime import date
from pathlib import Path

import pandas as pd
import pytest

from tests.benchmarks.single_stock.conftest import spec_dict, trader
from tradebench.benchmarks import run_spec
from tradebench.benchmarks.single_stock.config import (
    SingleStockOptions,
    resolve_price_mode,
    resolve_tasks,
)
from tradebench.benchmarks.single_stock.prompt_files import load_prompts
from tradebench.data import load_dataset
from tradebench.integrations.verifiers_env import EnvSettings, finalize
from tradebench.llm.loopback import LoopbackServer
from tradebench.masking import MASK_LEVELS
from tradebench.runs.spec import RunSpec

REBASED = "prices rebased: 100 = close before the episode"
ACTUAL = "adjusted prices"


def test_auto_resolves_by_mask_and_an_explicit_setting_wins() -> None:
    assert SingleStockOptions().price_mode is None
    auto = {level: resolve_price_mode(None, level) for level in MASK_LEVELS}
    assert auto == {
        "bright": "actual",
        "stock_blind": "rebased",
        "date_blind": "actual",
        "blinded": "rebased",
    }
    for level in MASK_LEVELS:
        assert resolve_price_mode("actual", level) == "actual"
        assert resolve_price_mode("rebased", level) == "rebased"


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        (None, {"bright": "actual", "blinded": "rebased"}),
        ("actual", {"bright": "actual", "blinded": "actual"}),
        ("rebased", {"bright": "rebased", "blinded": "rebased"}),
    ],
)
def test_each_episode_runs_and_records_its_price_mode(
    ss_dataset_dir: Path, tmp_path: Path, option: str | None, expected: dict[str, str]
) -> None:
    options = {"symbols": ["NVDA"], "personas": ["adaptive"], "episode_length": 2}
    if option is not None:
        options["price_mode"] = option
    with LoopbackServer(responder=trader) as server:
        spec = spec_dict(ss_dataset_dir, server.openai_url, **options)
        spec["masks"] = ["bright", "blinded"]
        summary = pd.read_parquet(
            asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path / "run"))
        )
        requests = list(server.requests)
    llm = summary[summary["kind"] == "llm"].set_index("mask")
    assert llm["price_mode"].to_dict() == expected
    for mask, mode in expected.items():
        folder = tmp_path / "run" / "episodes" / llm.loc[mask, "episode_id"]
        assert json.loads((folder / "episode.json").read_text())["price_mode"] == mode
    baseline = summary[summary["kind"] == "baseline"]
    assert (baseline["price_mode"] == (option or "actual")).all()  # rule agents see no mask
    users = [
        next(m["content"] for m in r.body["messages"] if m["role"] == "user") for r in requests
    ]
    masked = [u for u in users if "asset_" in u]
    bright = [u for u in users if "NVDA" in u]
    assert len(masked) == len(bright) == 2
    for mask, texts in (("blinded", masked), ("bright", bright)):
        note = REBASED if expected[mask] == "rebased" else ACTUAL
        assert all(f"({note})" in t for t in texts), (mask, texts[0][:300])


@pytest.mark.parametrize(
    ("mask", "option", "expected"),
    [("blinded", None, "rebased"), ("bright", None, "actual"), ("blinded", "actual", "actual")],
)
def test_a_verifiers_rollout_records_its_price_mode(
    ss_dataset_dir: Path, mask: str, option: str | None, expected: str
) -> None:
    options = SingleStockOptions(symbols=["NVDA"], episode_length=2, price_mode=option)
    settings = EnvSettings(load_dataset(ss_dataset_dir), options, load_prompts(), mask, 0)
    episode = settings.episode(resolve_tasks(options, [(date(2021, 1, 4), date(2021, 6, 30))])[0])
    note = REBASED if expected == "rebased" else ACTUAL
    assert f"({note})" in episode.context().user
    assert finalize({"info": {}, "tb_episode": episode})["price_mode"] == expected
