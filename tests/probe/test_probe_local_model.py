"""A real local model (llama-cpp-python serving a bundled tiny GGUF) as the attacker.

Asserts the plumbing, not the model's skill: every payload gets a validated guess or a
counted failure, results and report are written, and the run replays from the cache.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from tests.llm.test_llm_local_model import TEST_THREADS
from tradebench.errors import ConfigError
from tradebench.llm.local import LocalServer, find_bundled_model, llama_cpp_available
from tradebench.probe.build import BuildConfig, build_probe_set
from tradebench.probe.report import build_probe_report
from tradebench.probe.run import AttackConfig, run_attack
from tradebench.probe.store import write_probe_set

pytestmark = [pytest.mark.local_llm, pytest.mark.slow]


@pytest.fixture(scope="module")
def local_server() -> Iterator[LocalServer]:
    if not llama_cpp_available():
        pytest.skip("llama_cpp is not importable; install the extra: pip install '.[local-llm]'")
    try:
        bundled = find_bundled_model()
    except ConfigError as exc:
        pytest.skip(str(exc))
    with LocalServer(bundled, n_ctx=4096, n_threads=TEST_THREADS) as server:
        yield server


def test_local_model_attacks_three_probes(local_server, small_synth_dir: Path, tmp_path: Path):
    small = BuildConfig(n=3, seed=5, price_modes=("raw",), lookback=3, screen_top_k=2)
    probes = write_probe_set(build_probe_set(small_synth_dir, small), tmp_path / "p.jsonl")
    out = tmp_path / "results"

    def run(mode: str) -> pd.DataFrame:
        config = AttackConfig(
            attacker=f"openai:{local_server.alias}",
            base_url=local_server.base_url,
            max_tokens=64,
            retries=0,
            concurrency=1,
            cache_mode=mode,
        )
        return pd.read_parquet(run_attack(probes, out, config).results)

    rows = run("readwrite")
    assert len(rows) == 3
    for row in rows.itertuples():
        assert row.tokens_in > 0 and row.tokens_out > 0
        if row.valid:
            assert row.failure is None and len(row.guess_tickers) >= 1
            # the scores follow from the guess and the gold, recomputed here
            assert row.top5 == (row.gold_symbol in list(row.guess_tickers)[:5])
            assert row.board_ok == (row.guess_board == row.gold_board)
        else:
            assert row.failure == "no_valid_reply" and row.unreadable + row.rejected >= 1
    summary = pd.read_parquet(out / "summary.parquet")
    assert set(summary["n_valid"] + summary["n_failed"]) == {3}
    assert build_probe_report(out).exists()
    pd.testing.assert_frame_equal(run("replay"), rows)
