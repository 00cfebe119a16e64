"""Prices: genai-prices by default, the spec's table overrides it, an unknown price is
unknown (never 0) and a cost cap refuses it unless told otherwise.

The oracle for every rate is genai-prices' own `calc_price`, called here directly."""

from __future__ import annotations

import asyncio
import json
import math
from datetime import UTC, date, datetime
from pathlib import Path

import genai_prices
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from tradebench.benchmarks import build_report
from tradebench.cli import app
from tradebench.llm.base import get_model
from tradebench.llm.budget import Budget, BudgetConfig, BudgetState, Price
from tradebench.llm.loopback import LoopbackServer, RecordedRequest, Reply
from tradebench.llm.prices import quote_price
from tradebench.llm.types import Message, ModelConfig, Usage

KNOWN = "gpt-4.1-mini"
UNKNOWN = "no-such-model-7b"
ASK = [Message(role="user", content="y" * 400)]
runner = CliRunner()


def genai_usd(model: str, provider: str, inp: int, out: int, day: date | None = None) -> float:
    """What genai-prices itself charges for one request."""
    when = datetime(day.year, day.month, day.day, 12, tzinfo=UTC) if day else None
    calc = genai_prices.calc_price(
        genai_prices.Usage(input_tokens=inp, output_tokens=out),
        model,
        provider_id=provider,
        genai_request_timestamp=when,
    )
    return float(calc.total_price)


def test_known_model_is_charged_genai_prices_price(loopback):
    today = datetime.now(tz=UTC).date()
    budget = Budget(BudgetConfig(max_cost_usd=5.0))
    config = ModelConfig(provider="openai", model=KNOWN, base_url=loopback.openai_url)
    model = get_model(config, budget=budget)
    for i in range(3):
        asyncio.run(model.generate(ASK, sample_index=i))
    spent = budget.snapshot()
    assert spent.calls == 3 == len(loopback.requests) and spent.unpriced_calls == 0
    expected = genai_usd(KNOWN, "openai", spent.input_tokens, spent.output_tokens)
    assert expected > 0 and spent.cost_usd == pytest.approx(expected, rel=1e-12)
    quote = spent.prices[f"openai:{KNOWN}"]
    assert quote.source == "genai-prices" and quote.matched == f"openai:{KNOWN}"
    assert quote.source_version == f"genai-prices {genai_prices.__version__}"
    assert quote.priced_on in (today, datetime.now(tz=UTC).date())  # the day it was read


def test_the_spec_table_overrides_genai_prices(loopback):
    table = {f"openai:{KNOWN}": Price(input_per_mtok=1000.0, output_per_mtok=4000.0)}
    budget = Budget(BudgetConfig(max_cost_usd=50.0, prices=table))
    config = ModelConfig(provider="openai", model=KNOWN, base_url=loopback.openai_url)
    asyncio.run(get_model(config, budget=budget).generate(ASK))
    spent = budget.snapshot()
    assert spent.cost_usd == pytest.approx(
        (spent.input_tokens * 1000.0 + spent.output_tokens * 4000.0) / 1e6
    )
    assert spent.prices[f"openai:{KNOWN}"].source == "spec"


def test_prices_are_dated_by_the_source():
    # o3's price changed in genai-prices' data: read it before and after that day
    before, after = date(2025, 6, 1), date(2026, 11, 30)
    config = ModelConfig(provider="openai", model="o3")
    old, new = (quote_price(config, {}, d) for d in (before, after))
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert old.price.cost(usage) == pytest.approx(genai_usd("o3", "openai", 10**6, 10**6, before))
    assert new.price.cost(usage) == pytest.approx(genai_usd("o3", "openai", 10**6, 10**6, after))
    assert old.price != new.price and new.effective_from is not None
    assert before < new.effective_from <= after and old.effective_from is None


def test_tiered_prices_apply_per_request():
    config = ModelConfig(provider="anthropic", model="claude-sonnet-4-5")
    price = quote_price(config, {}, date(2026, 11, 30)).price
    assert price.tiers, "genai-prices lists a large-request tier for this model"
    for inp in (1_000, 150_000, 250_000):
        got = price.request_cost(Usage(input_tokens=inp, output_tokens=2_000))
        want = genai_usd("claude-sonnet-4-5", "anthropic", inp, 2_000, date(2026, 11, 30))
        assert got == pytest.approx(want, rel=1e-12)


def test_unknown_model_has_unknown_cost_not_zero():
    budget = Budget(BudgetConfig())  # no cap: it runs, charged no cost
    config = ModelConfig(provider="openai", model=UNKNOWN)
    held = budget.reserve(config, Usage(input_tokens=10, output_tokens=10))
    budget.settle(config, held, Usage(input_tokens=7, output_tokens=3))
    spent = budget.snapshot()
    assert spent.total_cost_usd is None and spent.unpriced_calls == 1
    assert spent.prices[f"openai:{UNKNOWN}"].source == "unknown"
    resumed = Budget(BudgetConfig(), BudgetState.model_validate_json(spent.model_dump_json()))
    assert resumed.snapshot().total_cost_usd is None


def _hold(req: RecordedRequest) -> Reply:
    return Reply.tool(
        "submit_action",
        {"orders": [], "overall_reason": "hold cash: nothing stands out over this window"},
    )


def _spec(tmp_path: Path, dataset: Path, url: str, model: str, budget: dict) -> Path:
    spec = {
        "dataset": str(dataset),
        "windows": [{"start": "2022-03-01", "end": "2022-03-03"}],
        "modes": ["memory_only"],
        "masks": ["blinded"],
        "agents": [
            {"name": "m", "provider": "openai", "model": model, "base_url": url, "max_steps": 2}
        ],
        "budget": budget,
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_unknown_price_under_a_cost_cap_is_refused_then_allowed(
    synth_dataset_dir: Path, tmp_path: Path
):
    with LoopbackServer(responder=_hold) as server:
        spec = _spec(tmp_path, synth_dataset_dir, server.openai_url, UNKNOWN, {"max_cost_usd": 1})
        out = tmp_path / "run"
        refused = runner.invoke(app, ["run", str(spec), "--out", str(out)])
        assert refused.exit_code == 1
        lines = refused.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: a cost cap is set")
        assert f"openai:{UNKNOWN}" in lines[0] and "--allow-unknown-price" in lines[0]
        assert "budget.allow_unknown_price" in lines[0] and "Traceback" not in refused.output
        assert not server.requests and not (out / "episodes").exists()

        allowed = runner.invoke(app, ["run", str(spec), "--out", str(out), "--allow-unknown-price"])
        assert allowed.exit_code == 0, allowed.output
        assert server.requests
    summary = pd.read_parquet(out / "summary.parquet")
    llm = summary[summary["kind"] == "llm"]
    assert len(llm) == 1 and llm["tokens_in"].iloc[0] > 0 and math.isnan(llm["cost_usd"].iloc[0])
    state = json.loads((out / "budget.json").read_text())
    assert state["unpriced_calls"] > 0 and state["prices"][f"openai:{UNKNOWN}"]["price"] is None
    html = build_report(out).read_text()
    section = html[html.index('id="tokens-and-cost"') :]
    section = section[: section.index("</section>")]
    usage = section[: section.index("Prices used")]
    assert '<td class="num">unknown</td></tr>' in usage  # the agent's cost cell, not 0
    prices = section[section.index("Prices used") :]
    assert f"<td>openai:{UNKNOWN}</td><td>unknown</td>" in prices


def test_known_price_reaches_the_episode_and_the_report(synth_dataset_dir: Path, tmp_path: Path):
    with LoopbackServer(responder=_hold) as server:
        spec = _spec(tmp_path, synth_dataset_dir, server.openai_url, KNOWN, {"max_cost_usd": 1})
        out = tmp_path / "run"
        result = runner.invoke(app, ["run", str(spec), "--out", str(out)])
        assert result.exit_code == 0, result.output
    row = pd.read_parquet(out / "summary.parquet").query("kind == 'llm'").iloc[0]
    expected = genai_usd(KNOWN, "openai", int(row["tokens_in"]), int(row["tokens_out"]))
    assert float(row["cost_usd"]) == pytest.approx(expected, rel=1e-9)
    state = BudgetState.model_validate_json((out / "budget.json").read_text())
    assert state.total_cost_usd == pytest.approx(float(row["cost_usd"]), rel=1e-9)
    html = build_report(out).read_text()
    assert f"genai-prices {genai_prices.__version__}" in html
    rate = quote_price(ModelConfig(provider="openai", model=KNOWN), {}).price.input_per_mtok
    row = f"<td>openai:{KNOWN}</td><td>genai-prices {genai_prices.__version__}</td>"
    assert row + f'<td class="num">{rate:.4f}</td>' in html


def test_a_resumed_budget_keeps_the_price_it_saved():
    config = ModelConfig(provider="openai", model="o3")
    old_day, new_day = date(2025, 6, 1), date(2026, 11, 30)
    first = Budget(BudgetConfig(price_date=old_day))
    first.require_price(config)
    saved = first.snapshot()
    old_rate = genai_usd("o3", "openai", 10**6, 0, old_day)
    assert saved.prices["openai:o3"].price.input_per_mtok == pytest.approx(old_rate)
    # resumed without a pinned day: the saved quote stays, whatever today's price is
    assert Budget(BudgetConfig(), saved).quote(config) == saved.prices["openai:o3"]
    # a pinned day re-reads the source; a spec price overrides both
    repriced = Budget(BudgetConfig(price_date=new_day), saved).quote(config)
    assert repriced.price.input_per_mtok == pytest.approx(
        genai_usd("o3", "openai", 10**6, 0, new_day)
    )
    table = {"openai:o3": Price(input_per_mtok=1.0, output_per_mtok=2.0)}
    assert Budget(BudgetConfig(prices=table), saved).quote(config).source == "spec"
