"""examples/portfolio_ktd_paper.yaml is KTD-Fin's headline grid, runnable as written: it loads,
its options are the paper's protocol, its baselines build, and the grid figures in its header
are the ones computed here from the shared CSI300 calendar."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from tradebench.agents.factor.agent import FACTOR_MODELS, build_ml_agent
from tradebench.agents.loop_types import LoopConfig
from tradebench.benchmarks.portfolio.benchmark import expand
from tradebench.benchmarks.portfolio.options import PortfolioOptions
from tradebench.runs.spec import RunSpec

SPEC = Path(__file__).parents[3] / "examples" / "portfolio_ktd_paper.yaml"


def _header_figure(text: str, label: str) -> int:
    match = re.search(rf"([\d,]+) {label}", text)
    assert match is not None, label
    return int(match.group(1).replace(",", ""))


def test_the_ktd_spec_is_the_papers_grid_and_its_header_figures_hold(shared_data: Path) -> None:
    spec = RunSpec.load(SPEC)
    options = spec.options_as(PortfolioOptions)
    assert isinstance(options, PortfolioOptions)
    assert options.prompt_version == "v4" and options.resolved_limit_filter
    assert options.resolved_answer_form("open_research") == "tool"
    assert options.initial_cash >= 200_000 * 1_912.9  # the grid hides Moutai's lot
    assert spec.modes == ["open_research"] and spec.masks == ["blinded"]
    assert [(str(w.start), str(w.end)) for w in spec.windows] == [("2024-01-01", "2026-04-10")]
    models = spec.llm_agents()
    assert len(models) == 10 and len({a.model_config_().model for a in models}) == 10
    assert all(a.model_config_().api_key_env == "KTD_GATEWAY_KEY" for a in models)
    baselines = [a for a in spec.agents if not a.is_llm]
    assert sorted(a.baseline for a in baselines) == sorted(FACTOR_MODELS)
    assert len(baselines) == 18
    for a in baselines:
        built = build_ml_agent(a.baseline, **a.args)
        assert built.config.feature_set == "alpha9" and built.config.topk == 50

    episodes = expand(spec, list(spec.modes))
    index = pd.read_csv(shared_data / "cn" / "csi300_index_daily.csv", parse_dates=["date"])
    days = index["date"].between("2024-01-01", "2026-04-10").sum()
    model_steps = sum(e.kind == "llm" for e in episodes) * days
    loop = LoopConfig(max_tool_calls=options.max_tool_calls)
    per_step = options.max_tool_calls + loop.max_parse_failures + 1 + options.max_submit_retries
    text = " ".join(line.lstrip("# ") for line in SPEC.read_text().splitlines())
    assert _header_figure(text, "decision days") == days
    assert _header_figure(text, "episodes") == len(episodes)
    assert sum(e.kind == "benchmark" for e in episodes) == 1
    assert _header_figure(text, "model steps") == model_steps
    assert _header_figure(text, "model calls a step") == per_step
    assert re.search(rf"at most {model_steps * per_step:,} model calls", text)
    assert re.search(rf"at least {2 * model_steps:,}", text)
