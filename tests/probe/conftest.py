"""Probe fixtures: a small synthetic market (with sectors) and probe sets built from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tradebench.probe.build import BuildConfig, build_probe_set
from tradebench.probe.store import ProbeSet, write_probe_set


@pytest.fixture(scope="session")
def small_synth_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 synthetic A-shares over 200 trading days (seed 0), every board represented."""
    from tradebench.data.synth import SynthConfig, synthesize

    out = tmp_path_factory.mktemp("probe-synth") / "synth"
    synthesize(out, SynthConfig(seed=0, n_names=40, n_days=200, index_size=30))
    return out


@pytest.fixture(scope="session")
def synth_probes(small_synth_dir: Path) -> ProbeSet:
    """20 probes (one per stratum), blinded, raw and rebased prices."""
    return build_probe_set(small_synth_dir, BuildConfig(n=20, seed=3))


@pytest.fixture(scope="session")
def synth_probe_file(synth_probes: ProbeSet, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`synth_probes` written as JSONL."""
    return write_probe_set(synth_probes, tmp_path_factory.mktemp("probe-file") / "probes.jsonl")
