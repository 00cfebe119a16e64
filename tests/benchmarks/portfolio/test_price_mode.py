"""Price mode: rebased by default where the mask hides stocks (a raw level names a stock),
raw elsewhere; an explicit setting wins; the mode each episode ran under is on record."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from tests.benchmarks.portfolio.conftest import spec_dict, trader
from tradebench.benchmarks import run_spec
from tradebench.benchmarks.portfolio.options import PortfolioOptions, resolve_price_mode
from tradebench.llm.loopback import LoopbackServer
from tradebench.masking import MASK_LEVELS
from tradebench.runs.spec import RunSpec

ROW_RE = re.compile(r"^\| (asset_\d{4,}|S[HZ]\d{6}) \| \w+ \| ([0-9.]+|n/a) \|", re.M)


def test_auto_resolves_by_mask_and_an_explicit_setting_wins() -> None:
    assert PortfolioOptions().price_mode is None
    auto = {level: resolve_price_mode(None, level) for level in MASK_LEVELS}
    assert auto == {
        "bright": "raw",
        "stock_blind": "rebased",
        "date_blind": "raw",
        "blinded": "rebased",
    }
    for level in MASK_LEVELS:
        assert resolve_price_mode("raw", level) == "raw"
        assert resolve_price_mode("rebased", level) == "rebased"


def _closes(request_body: dict) -> tuple[str, list[str]]:
    """The first user message's kind of identifiers and its candidate table's closes."""
    user = next(m["content"] for m in request_body["messages"] if m["role"] == "user")
    rows = ROW_RE.findall(user)
    assert rows, user[:400]
    return ("masked" if rows[0][0].startswith("asset_") else "real"), [c for _, c in rows]


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        (None, {"bright": "raw", "blinded": "rebased"}),
        ("raw", {"bright": "raw", "blinded": "raw"}),
        ("rebased", {"bright": "rebased", "blinded": "rebased"}),
    ],
)
def test_each_episode_runs_and_records_its_price_mode(
    cn_dataset_dir: Path, tmp_path: Path, option: str | None, expected: dict[str, str]
) -> None:
    spec = spec_dict(
        cn_dataset_dir, "", ["bright", "blinded"], ["fixed_candidate"], end="2024-03-01"
    )
    if option is not None:
        spec["options"]["price_mode"] = option
    with LoopbackServer(responder=trader) as server:
        spec["agents"][0]["base_url"] = server.openai_url
        summary = pd.read_parquet(
            asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path / "run"))
        )
        requests = list(server.requests)
    llm = summary[summary["kind"] == "llm"].set_index("mask")
    assert llm["price_mode"].to_dict() == expected  # the summary row says it
    for mask, mode in expected.items():
        folder = tmp_path / "run" / "episodes" / llm.loc[mask, "episode_id"]
        assert json.loads((folder / "episode.json").read_text())["price_mode"] == mode
    assert summary.loc[summary["kind"] != "llm", "price_mode"].isna().all()
    shown = dict(_closes(r.body) for r in requests)  # one request per episode and step
    assert len(requests) == 2 and set(shown) == {"real", "masked"}
    for mask, ids in (("bright", "real"), ("blinded", "masked")):
        closes = shown[ids]
        if expected[mask] == "rebased":  # the first step: every close is the rebasing close
            assert set(closes) <= {"100.00", "n/a"} and "100.00" in closes, (mask, closes[:5])
        else:
            assert len(set(closes)) > len(closes) // 2, (mask, closes[:5])
