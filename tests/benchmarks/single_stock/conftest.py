"""Fixtures of the single-stock tests: real US bars with SPY as a tradable symbol, a
constructed market, and a deterministic scripted trader for the loopback server."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tradebench.benchmarks.single_stock.agents import StepDecision
from tradebench.benchmarks.single_stock.config import Task
from tradebench.benchmarks.single_stock.episode import SingleStockEpisode, plan_episode
from tradebench.benchmarks.single_stock.prompt_files import load_prompts
from tradebench.data import load_dataset
from tradebench.data.importers.long import LongImport, import_long
from tradebench.llm.loopback import RecordedRequest, Reply
from tradebench.masking import build_masker

US_SYMBOLS = ("TSLA", "SPY", "NVDA", "AAPL", "NFLX", "AMZN", "MSFT")


@pytest.fixture(scope="session")
def ss_dataset_dir(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """FinMem's default cells' stocks (TSLA, NFLX, AMZN, MSFT) plus SPY, NVDA and AAPL,
    2020-2024, as bars (SPY is a tradable cell here, no index)."""
    out = tmp_path_factory.mktemp("ss") / "us"
    import_long(
        LongImport(
            source=shared_data / "us" / "sp500_daily_adj_2005_2025.parquet",
            out=out,
            market="us",
            symbols=US_SYMBOLS,
            start="2020-01-01",
            end="2024-12-31",
        )
    )
    return out


def write_long(frame: pd.DataFrame, out: Path) -> Path:
    """Import a long bars table (date, symbol, open, high, low, close, volume) as a dataset."""
    source = out.with_suffix(".parquet")
    source.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(source, index=False)
    import_long(LongImport(source=source, out=out, market="us"))
    return out


def constructed_bars(closes: list[float], symbol: str = "AAA", history: int = 25) -> pd.DataFrame:
    """Flat history at the first close, then `closes`, on consecutive business days."""
    path = [closes[0]] * history + list(closes)
    days = pd.bdate_range("2022-01-03", periods=len(path))
    c = np.asarray(path, dtype=float)
    return pd.DataFrame(
        {
            "date": days,
            "symbol": symbol,
            "open": c,
            "high": c * 1.01,
            "low": c * 0.99,
            "close": c,
            "volume": 1_000_000.0,
        }
    )


def make_episode(
    dataset: Path,
    task: Task,
    length: int,
    mask: str = "bright",
    price_mode: str = "actual",
) -> SingleStockEpisode:
    """A fresh episode outside the run executor (for unit-level tests)."""
    ds = load_dataset(dataset)
    plan = plan_episode(ds, task, length)
    masker = build_masker(mask, ds.panel.symbols, ds.panel.dates, plan.days[0], 0, "test")
    return SingleStockEpisode(ds, plan, masker, load_prompts(), price_mode)


def task(symbol: str, start: str, end: str, persona: str = "risk_seeking") -> Task:
    """A task from ISO dates."""
    return Task(
        symbol=symbol,
        start=date.fromisoformat(start),
        end=date.fromisoformat(end),
        persona=persona,
    )


def hold(valid: bool = True) -> StepDecision:
    """A hold decision."""
    return StepDecision(action="hold", valid=valid)


def _user_text(req: RecordedRequest) -> str:
    messages = (req.body or {}).get("messages") or []
    return " ".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")


def trader(req: RecordedRequest) -> Reply:
    """Deterministic scripted model: follows the sign of the 3-day momentum it was shown."""
    text = _user_text(req)
    action = "hold"
    if "3-day momentum +" in text:
        action = "buy"
    elif "3-day momentum -" in text:
        action = "sell"
    args = {"action": action, "reason": "follow the 3-day momentum", "confidence": 0.6}
    if req.forced_tool() == "submit_decision":
        return Reply.tool("submit_decision", args)
    return Reply.say(json.dumps(args))


def spec_dict(dataset: Path, url: str, **single_stock: Any) -> dict[str, Any]:
    """A single-stock run spec: the default cells and personas, one LLM and one baseline."""
    return {
        "benchmark": "single_stock",
        "dataset": str(dataset),
        "windows": [{"start": "2021-01-04", "end": "2023-06-30"}],
        "masks": ["blinded"],
        "seeds": [0],
        "agents": [
            {
                "name": "scripted",
                "provider": "openai",
                "model": "loopback",
                "base_url": url,
                "max_tokens": 128,
            },
            {"name": "mom", "baseline": "momentum"},
        ],
        "concurrency": 4,
        "options": single_stock,
    }
