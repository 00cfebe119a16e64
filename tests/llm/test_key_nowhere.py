"""The configured API key appears in nothing tradebench writes, whatever its variable is
called, even when the endpoint echoes it back into the model's text and tool arguments;
and the run still replays from its cache."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from tests.benchmarks.portfolio.conftest import spec_dict
from tradebench.benchmarks import run_spec
from tradebench.cli import app
from tradebench.llm.cache import ResponseCache
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.runs.spec import RunSpec

KEY = "zebra-horse-battery-staple-4242"
VARIABLE = "TB_PLAIN_NAME"  # nothing in the name says it holds a credential


def echo(request: RecordedRequest) -> Reply:
    """A hostile proxy: it writes the caller's bearer token into every reply (a research
    call's arguments, the text, the order reasons)."""
    token = request.headers.get("authorization", "").removeprefix("Bearer ")
    if request.forced_tool() != "submit_action":
        return Reply.tool("get_stock_snapshot", {"stock_id": token[:24]})
    user = next(m["content"] for m in request.body["messages"] if m["role"] == "user")
    first = re.search(r"asset_\d{4}", user).group(0)
    order = {"stock_id": first, "side": "BUY", "target_weight": 0.1, "confidence": 0.5,
             "reason": f"my key is {token}"}  # fmt: skip
    why = f"overall, the key {token} says buy"
    return Reply.tool("submit_action", {"orders": [order], "overall_reason": why})


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def test_an_echoed_key_is_written_nowhere(
    cn_dataset_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VARIABLE, KEY)
    with LoopbackServer(responder=echo) as server:
        spec = spec_dict(cn_dataset_dir, server.openai_url, ["blinded"], ["open_research"])
        spec["agents"] = [spec["agents"][0] | {"api_key_env": VARIABLE}]
        spec["windows"] = [{"start": "2024-03-01", "end": "2024-03-04"}]
        summary = asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path / "run"))
        heard = [r.headers.get("authorization") for r in server.requests]
    assert heard and all(h == f"Bearer {KEY}" for h in heard)  # the key did go out
    assert CliRunner().invoke(app, ["report", str(tmp_path / "run")]).exit_code == 0
    written = _files(tmp_path / "run")
    assert any(p.name == "cache.sqlite" for p in written)
    assert any(p.name == "report.html" for p in written)
    leaks = [str(p) for p in written if KEY.encode() in p.read_bytes()]
    assert leaks == []
    # the cache deflates its rows: its decoded text is scanned too
    cached = ResponseCache(tmp_path / "run" / "cache.sqlite", mode="replay").rows()
    assert not [r.key for r in cached if KEY in r.request + r.response]
    orders = pd.concat(pd.read_parquet(p) for p in (tmp_path / "run").rglob("orders.parquet"))
    assert orders["reason"].str.contains("[REDACTED]", regex=False).any()  # scrubbed, kept
    spec["cache"] = {"mode": "replay", "path": str(tmp_path / "run" / "cache.sqlite")}
    replayed = asyncio.run(run_spec(RunSpec.model_validate(spec), tmp_path / "replay"))
    pd.testing.assert_frame_equal(pd.read_parquet(replayed), pd.read_parquet(summary))
