"""`mcq eval --mode with_tools` end to end against the bundled llama.cpp server: five real
questions through the CLI, the tools offered as schemas the server compiles (it used to
refuse the `run_python` schema's grammar and drop the connection), every question
answered or counted, the server alive at the end. Plumbing, not the model's skill.
Slow (minutes on two cores); skipped with its reason without the local-llm extra or the
shared data."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from tests.benchmarks.mcq.test_mcq_eval_no_tools import pick
from tests.llm.test_llm_local_model import TEST_THREADS
from tradebench.benchmarks.mcq.build.builder import BuildResult
from tradebench.benchmarks.mcq.records import write_jsonl
from tradebench.cli.mcq import app
from tradebench.errors import SandboxUnavailable
from tradebench.llm.local import LocalServer, find_bundled_model, llama_cpp_available
from tradebench.sandbox import SandboxLimits
from tradebench.sandbox.run import sandbox_preflight

pytestmark = [pytest.mark.local_llm, pytest.mark.slow]


def test_with_tools_eval_on_the_bundled_server(base_pool: BuildResult, tmp_path: Path) -> None:
    if not llama_cpp_available():
        pytest.skip("needs the local-llm extra (pip install -e '.[local-llm]'): llama-cpp-python")
    try:
        sandbox_preflight(SandboxLimits())
    except SandboxUnavailable as exc:
        pytest.skip(f"no confining sandbox here: {exc}")
    records = pick(base_pool, ["easy", "easy", "medium", "medium", "hard"])
    path = tmp_path / "q.jsonl"
    write_jsonl(records, path)
    out = tmp_path / "out"
    with LocalServer(find_bundled_model(), n_ctx=4096, n_threads=TEST_THREADS) as server:
        args = ["eval", str(path), "--model", f"openai:{server.alias}"]
        args += ["--base-url", server.base_url, "--mode", "with_tools", "--concurrency", "1"]
        args += ["--reply-max-tokens", "128", "--max-tool-calls", "2", "--max-attempts", "1"]
        args += ["--timeout-s", "600", "-o", str(out)]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        with urllib.request.urlopen(f"{server.base_url}/models", timeout=30) as alive:
            assert alive.status == 200  # the server survived every request
    rows = pd.read_parquet(out / "results.parquet")
    assert list(rows["question_id"]) == [r.id for r in records]
    assert (rows["model_calls"] >= 1).all() and (rows["input_tokens"] > 200).all()
    assert rows["parsed"].sum() + (~rows["parsed"]).sum() == 5
    summary = json.loads((out / "summary.json").read_text())
    assert summary["models"][0]["overall"]["attempts"] == 5
    assert summary["models"][0]["mode"] == "with_tools"
