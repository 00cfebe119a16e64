"""An agent entry holds its model as one block (`model: {provider, model, ...}` or the
`provider:model` shorthand); specs and run folders written in the earlier layout (the model's
fields beside the entry's, `baseline:` for `agent:`) still load and still resume, and a real
change of the model is still refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from tests.benchmarks.portfolio.conftest import trader
from tradebench.cli import app
from tradebench.errors import ConfigError
from tradebench.llm.loopback import LoopbackServer
from tradebench.llm.types import ModelConfig
from tradebench.runs.spec import AgentEntry, RunSpec

runner = CliRunner()


def _flat_v2_agent(name: str, url: str | None, baseline: str | None = None) -> dict[str, Any]:
    """An agent entry exactly as a version-2 `spec.yaml` held it (every field, side by side)."""
    model = baseline is None
    return {
        "name": name,
        "baseline": baseline,
        "args": {},
        "provider": "openai" if model else None,
        "model": "m" if model else None,
        "base_url": url,
        "api_key_env": None,
        "temperature": 0.0,
        "max_tokens": 1024,
        "extra": {},
        "tool_protocol": "auto",
        "forced_choice": "ladder",
        "max_steps": None,
        "timeout_s": None,
        "max_attempts": None,
        "knowledge_cutoff": None,
    }


def _spec(dataset: Path, agents: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "dataset": str(dataset),
        "windows": [{"start": "2022-03-01", "end": "2022-03-04"}],
        "modes": ["memory_only"],
        "masks": ["bright"],
        "agents": agents,
    }


def test_the_three_ways_to_write_a_model_read_as_one() -> None:
    block = {"provider": "openai", "model": "gpt-x", "temperature": 0.3}
    nested = AgentEntry.model_validate({"name": "a", "model": block})
    flat = AgentEntry.model_validate({"name": "a", **block})
    short = AgentEntry.model_validate({"name": "a", "model": "openai:gpt-x", "temperature": 0.3})
    assert nested == flat == short
    assert nested.model == ModelConfig(provider="openai", model="gpt-x", temperature=0.3)
    rule = AgentEntry.model_validate({"name": "r", "baseline": "equal_weight"})
    assert rule.agent == "equal_weight" and rule.model is None and not rule.is_llm


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"name": "a", "model": "gpt-x"}, "names no provider"),
        ({"name": "a", "model": {"provider": "nope", "model": "x"}}, "unknown provider 'nope'"),
        ({"name": "a", "model": {"provider": "openai", "model": "x"}, "temperature": 1},
         "inside the `model:` block"),
        ({"name": "a", "agent": "cash", "temperature": 0.5}, "temperature given without"),
        ({"name": "a"}, "give either `agent`"),
    ],
)  # fmt: skip
def test_a_bad_agent_entry_is_refused_naming_the_fix(entry: dict[str, Any], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        AgentEntry.model_validate(entry)


def test_a_folder_written_in_the_flat_layout_resumes_and_still_refuses_a_change(
    synth_dataset_dir: Path, tmp_path: Path
) -> None:
    with LoopbackServer(responder=trader) as server:
        url = server.openai_url
        nested = _spec(
            synth_dataset_dir,
            [
                {"name": "m", "model": {"provider": "openai", "model": "m", "base_url": url}},
                {"name": "ew", "agent": "equal_weight"},
            ],
        )
        path = tmp_path / "spec.yaml"
        path.write_text(yaml.safe_dump(nested))
        out = tmp_path / "run"
        first = runner.invoke(app, ["run", str(path), "-o", str(out)])
        assert first.exit_code == 0, first.output
        written = yaml.safe_load((out / "spec.yaml").read_text())
        assert written["agents"][0]["model"]["provider"] == "openai"
        assert written["agents"][1]["agent"] == "equal_weight"

        # the folder as the earlier layout wrote it: the same run, another spelling
        old = {**written, "schema_version": 2}
        old["agents"] = [_flat_v2_agent("m", url), _flat_v2_agent("ew", None, "equal_weight")]
        (out / "spec.yaml").write_text(yaml.safe_dump(old, sort_keys=False))
        requests = len(server.requests)
        again = runner.invoke(app, ["run", str(path), "-o", str(out)])
        assert again.exit_code == 0, again.output
        flat_file = tmp_path / "flat.yaml"  # the user's own spec, still in the old layout
        flat_file.write_text(yaml.safe_dump({**old, "agents": old["agents"]}))
        from_flat = runner.invoke(app, ["run", str(flat_file), "-o", str(out)])
        assert from_flat.exit_code == 0, from_flat.output
        assert len(server.requests) == requests  # nothing ran again

        warmer = _spec(
            synth_dataset_dir,
            [
                {"name": "m", "model": {"provider": "openai", "model": "m", "base_url": url,
                                        "temperature": 0.5}},
                {"name": "ew", "agent": "equal_weight"},
            ],
        )  # fmt: skip
        path.write_text(yaml.safe_dump(warmer))
        refused = runner.invoke(app, ["run", str(path), "-o", str(out)])
    assert refused.exit_code != 0
    assert "differs in agents" in refused.output
    summary = pd.read_parquet(out / "summary.parquet")
    assert (summary["status"] == "done").all() and set(summary["agent"]) >= {"m", "ew"}


def test_a_moved_endpoint_is_transport_in_the_model_block(synth_dataset_dir: Path) -> None:
    """`base_url` and `api_key_env` inside the block stay out of the folder's identity."""
    from tradebench.runs.guard import differing_keys

    def dumped(url: str, key: str | None) -> dict[str, Any]:
        model = {"provider": "openai", "model": "m", "base_url": url, "api_key_env": key}
        return RunSpec.model_validate(
            _spec(synth_dataset_dir, [{"name": "m", "model": model}])
        ).model_dump(mode="json")

    assert differing_keys(dumped("http://a:1/v1", None), dumped("http://b:2/v1", "K")) == []
    assert differing_keys(dumped("http://a:1/v1", None), dumped("http://a:1/v1", None)) == []


def test_model_config_refuses_an_unknown_provider_in_one_line() -> None:
    with pytest.raises(ConfigError, match="providers: anthropic, openai"):
        ModelConfig.parse("nope:model")


def test_the_leaderboard_sees_one_agent_in_both_layouts() -> None:
    """A folder's `spec.yaml` in either layout gives the same agent facts and identity, so
    runs written before and after the model became a block are compared as one agent."""
    from tradebench.leaderboard.data import _agent_facts

    url = "http://127.0.0.1:9/v1"
    old = {"agents": [_flat_v2_agent("m", url), _flat_v2_agent("ew", None, "equal_weight")]}
    new = RunSpec.model_validate(
        {
            "dataset": "synthetic:cn",
            "agents": [
                {"name": "m", "model": {"provider": "openai", "model": "m", "base_url": url}},
                {"name": "ew", "agent": "equal_weight"},
            ],
        }
    ).model_dump(mode="json")
    assert _agent_facts(old) == _agent_facts(new)
    assert _agent_facts(new)["m"]["model"] == "openai:m"
    assert _agent_facts(new)["ew"]["is_equal_weight"]
