"""`tradebench demo`: an offline tour on the embedded synthetic market (no network, no key)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tradebench.data.dataset import load_dataset
from tradebench.data.stats import MarketStats, market_stats
from tradebench.data.synth import SynthConfig, synthesize


@dataclass(frozen=True)
class DemoResult:
    """What the demo produced."""

    dataset_dir: Path
    stats: MarketStats


def run_demo(out: Path, seed: int = 0) -> DemoResult:
    """Build the synthetic market under `out/` (reused when present) and summarise it."""
    dataset_dir = Path(out) / f"synthetic-cn-seed{seed}"
    if not (dataset_dir / "manifest.json").exists():
        synthesize(dataset_dir, SynthConfig(seed=seed))
    return DemoResult(dataset_dir=dataset_dir, stats=market_stats(load_dataset(dataset_dir)))
