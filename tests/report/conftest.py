"""Run folders built once per session: the hand-built one (with and without
`summary.parquet`) and a live scripted-model run with its replay."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.report.model_run import replay_spec, run, scripted, spec_dict
from tests.report.run_folder import build_run_folder
from tradebench.llm.loopback import LoopbackServer, RecordedRequest
from tradebench.report import write_summary


@pytest.fixture(scope="session")
def raw_run_dir(synth_dataset_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Episode folders and spec.yaml only (no summary.parquet); do not write into it."""
    return build_run_folder(synth_dataset_dir, tmp_path_factory.mktemp("run") / "run")


@pytest.fixture(scope="session")
def run_dir(raw_run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the run folder with `summary.parquet` written by `write_summary`."""
    out = tmp_path_factory.mktemp("run_summary") / "run"
    shutil.copytree(raw_run_dir, out)
    write_summary(out)
    return out


@dataclass(frozen=True)
class ModelRun:
    """A live run of the scripted model and its replay from the cache elsewhere."""

    live: Path
    """The live run folder (`.../live/run`)."""
    replay: Path
    """The replay's run folder: same name, another parent (`.../replay/run`)."""
    requests: tuple[RecordedRequest, ...]
    """What the loopback server received during the live run."""
    dataset: Path

    @property
    def paths(self) -> tuple[Path, Path]:
        """(live, replay)."""
        return self.live, self.replay


@pytest.fixture(scope="session")
def model_run(synth_dataset_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> ModelRun:
    """`tests.report.model_run` run live on the loopback server, then replayed from its
    cache into a folder of the same name with the endpoint gone; do not write into them
    except `report.html`."""
    root = tmp_path_factory.mktemp("model_run")
    with LoopbackServer(responder=scripted) as server:
        spec = spec_dict(synth_dataset_dir, server.openai_url)
        live = run(spec, root / "live" / "run")
        requests = tuple(server.requests)
    replay = run(replay_spec(spec, live / "cache.sqlite"), root / "replay" / "run")
    return ModelRun(live, replay, requests, synth_dataset_dir)
