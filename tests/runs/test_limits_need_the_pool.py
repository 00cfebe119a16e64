"""A spec field must reach what it promises: `limits` bind only where the model pool keeps
them (the local executor), so a Ray spec with limits is refused before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tradebench.errors import ConfigError
from tradebench.runs.spec import RunSpec

SPEC = {
    "benchmark": "portfolio",
    "dataset": "synthetic:cn",
    "windows": [{"start": "2022-03-01", "end": "2022-03-04"}],
    "agents": [{"name": "m", "model": "openai:some-model", "limits": {"rpm": 60}}],
}


def test_limits_under_ray_are_one_clear_refusal(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({**SPEC, "executor": "ray"}))
    with pytest.raises(ConfigError) as err:
        RunSpec.load(path)
    assert "local executor" in str(err.value) and "m" in str(err.value)
    path.write_text(yaml.safe_dump(SPEC))
    assert RunSpec.load(path).agents[0].limits is not None  # local: accepted
