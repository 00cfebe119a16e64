"""An installed package adds a benchmark, an agent and a provider through entry points, and a
spec names them like built-in ones: `tradebench run` writes the folder, the summary and the
report a native run writes.

The package is tests/plugins/tradebench_toy_plugin/ (`.ci/run` installs it; the tests skip,
saying how to install it, when it is absent). The oracle for its agent (buy the first three
members by symbol on day one, hold them) is computed here from the dataset's own tables.
"""

from __future__ import annotations

import json
import re
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from tradebench.cli import app
from tradebench.errors import ConfigError
from tradebench.registry import Registry

DIST = "tradebench-toy-plugin"
WINDOW = {"start": "2022-03-01", "end": "2022-03-18"}
EPISODE_FILES = {"steps.parquet", "positions.parquet", "orders.parquet", "metrics.json",
                 "run.json", "episode.json"}  # fmt: skip
runner = CliRunner()


def _installed() -> bool:
    try:
        metadata.distribution(DIST)
    except metadata.PackageNotFoundError:
        return False
    return True


pytestmark = pytest.mark.skipif(
    not _installed(),
    reason=f"the out-of-tree toy package ({DIST}) is not installed: "
    "pip install --no-deps -e tests/plugins/tradebench_toy_plugin (.ci/run installs it)",
)


def _run(tmp_path: Path, name: str, spec: dict[str, Any]) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = tmp_path / name
    result = runner.invoke(app, ["run", str(path), "-o", str(out)])
    assert result.exit_code == 0, result.output
    report = runner.invoke(app, ["report", str(out)])
    assert report.exit_code == 0, report.output
    return out


def _episode(run: Path, agent: str) -> Path:
    (folder,) = [p for p in (run / "episodes").iterdir() if p.name.startswith(f"{agent}_")]
    return folder


def _first_members(dataset: Path, n: int) -> tuple[str, list[str]]:
    """The window's first decision day and the first `n` symbols, by name, that are members
    that day (intervals `start <= day < end`, no end: still a member) and traded on the day
    before (a close, not suspended): read from the tables."""
    bars = pd.read_parquet(dataset / "bars.parquet")
    member = pd.read_parquet(dataset / "membership.parquet")
    days = sorted(bars["date"].unique())
    first = min(d for d in days if str(d) >= WINDOW["start"])
    before = max(d for d in days if d < first)
    open_ended = member["end"].isna()  # still a member
    during = (member["start"] <= first) & (open_ended | (member["end"].fillna(first) > first))
    members = member[during]["symbol"]
    prior = bars[(bars["date"] == before) & bars["close"].notna() & ~bars["suspended"]]
    return str(first), sorted(set(members) & set(prior["symbol"]))[:n]


def test_an_installed_package_runs_from_a_spec_by_name(
    synth_dataset_dir: Path, tmp_path: Path
) -> None:
    base = {"dataset": str(synth_dataset_dir), "windows": [WINDOW]}
    plugin = _run(
        tmp_path,
        "plugin",
        base
        | {
            "benchmark": "toy_plugin_switch",
            "agents": [
                {"name": "first3", "agent": "toy_plugin_first_n", "args": {"n": 3}},
                {"name": "bypath", "agent": "tradebench_toy_plugin.agent:FirstNAgent"},
                {"name": "ew", "agent": "equal_weight"},
                {"name": "invest", "model": "toy_plugin_fixed:invest"},
                {"name": "cash", "model": {"provider": "toy_plugin_fixed", "model": "cash"}},
            ],
        },
    )
    native = _run(
        tmp_path,
        "native",
        base
        | {
            "benchmark": "portfolio",
            "agents": [
                {"name": "first3", "agent": "toy_plugin_first_n", "args": {"n": 3}},
                {"name": "ew", "agent": "equal_weight"},
            ],
        },
    )

    # the folder: every episode holds the files of a native broker episode
    for run, agents in ((plugin, ("first3", "bypath", "ew", "invest", "cash")),
                        (native, ("first3", "ew"))):  # fmt: skip
        for agent in agents:
            assert {p.name for p in _episode(run, agent).iterdir()} >= EPISODE_FILES, agent

    # the agent: the first three members on day one, bought once and held
    day, expected = _first_members(synth_dataset_dir, 3)
    for run, agent in ((plugin, "first3"), (plugin, "bypath"), (plugin, "invest"),
                       (native, "first3")):  # fmt: skip
        orders = pd.read_parquet(_episode(run, agent) / "orders.parquet")
        assert set(orders["side"]) == {"BUY"}, (run.name, agent)
        assert {str(d)[:10] for d in orders["date"]} == {day}, (run.name, agent)
        assert sorted(orders["symbol"]) == expected, (run.name, agent)
    assert pd.read_parquet(_episode(plugin, "cash") / "orders.parquet").empty

    # the same agent by entry point, by path, in the plugin's benchmark and in a native one
    metrics = {
        (run.name, a): json.loads((_episode(run, a) / "metrics.json").read_text())
        for run, a in ((plugin, "first3"), (plugin, "bypath"), (native, "first3"))
    }
    returns = {key: m["total_return"] for key, m in metrics.items()}
    assert len(set(returns.values())) == 1, returns

    # the summary: one done row per episode, the harness's columns, the plugin's kinds
    ours = pd.read_parquet(plugin / "summary.parquet")
    theirs = pd.read_parquet(native / "summary.parquet")
    assert set(theirs.columns) - {"price_mode", "lot_visible_share"} <= set(ours.columns)
    ours = ours.set_index("agent")
    assert (ours["status"] == "done").all() and len(ours) == 5
    assert ours.loc["invest", "kind"] == "llm" and ours.loc["first3", "kind"] == "baseline"
    assert ours.loc["cash", "total_return"] == 0.0
    assert ours.loc["invest", "total_return"] == pytest.approx(returns[("plugin", "first3")])
    steps = pd.read_parquet(_episode(plugin, "first3") / "steps.parquet")
    assert (ours["n_steps"] == len(steps)).all()
    model = json.loads((_episode(plugin, "cash") / "episode.json").read_text())["model"]
    assert (model["provider"], model["model"]) == ("toy_plugin_fixed", "cash")

    # the report: the same page as a native run's, naming the plugin's agents
    page = (plugin / "report.html").read_text(encoding="utf-8")
    assert all(name in page for name in ("first3", "bypath", "invest", "cash"))
    assert "No finished episodes yet" not in page
    native_page = (native / "report.html").read_text(encoding="utf-8")
    assert len(_titles(native_page)) >= 3
    assert _titles(native_page) <= _titles(page), _titles(native_page) - _titles(page)


def _titles(page: str) -> set[str]:
    """The section titles of a report page."""
    return set(re.findall(r"<section id=\"[^\"]*\"><h2>([^<]*)</h2>", page))


def test_a_name_registered_twice_is_refused_naming_both_sources() -> None:
    agents: Registry[Any] = Registry("agent", group="tradebench.agents")
    agents.register("toy_plugin_first_n", "tradebench.agents.baselines:CashAgent")
    with pytest.raises(ConfigError) as caught:
        agents.names()
    message = str(caught.value)
    assert "agent name 'toy_plugin_first_n' is registered twice" in message
    assert "tradebench.agents.baselines:CashAgent" in message
    assert "tradebench_toy_plugin.agent:FirstNAgent" in message and DIST in message
    with pytest.raises(ConfigError, match="registered twice"):  # on every lookup, not once
        agents.get("toy_plugin_first_n")


def test_an_unknown_name_lists_the_installed_ones() -> None:
    from tradebench.benchmarks import BENCHMARKS

    with pytest.raises(ConfigError, match=r"unknown benchmark 'nope'; known: .*toy_plugin_switch"):
        BENCHMARKS.get("nope")
