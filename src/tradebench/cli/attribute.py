"""`tradebench attribute RUN_DIR`: return attribution of a finished run's episodes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tradebench.cli.kit import console, exits_on_error


@exits_on_error
def attribute(
    run_dir: Annotated[Path, typer.Argument(help="Run folder written by `tradebench run`.")],
    dataset: Annotated[
        Path | None,
        typer.Option(help="Dataset folder (default: the spec's `dataset`)."),
    ] = None,
    vif_threshold: Annotated[
        float, typer.Option(min=1.0, help="Drop factors while a VIF exceeds this.")
    ] = 5.0,
    calibration_days: Annotated[
        int, typer.Option(min=20, help="Trading days of the VIF calibration window.")
    ] = 252,
    signal: Annotated[
        bool, typer.Option(help="Score factor-model baselines' IC, rank IC and ICIR.")
    ] = True,
) -> None:
    """Decompose each episode's daily return into Common + Style + Selection + Trading.

    Nine style factors from data before each day, a VIF screen on the year before each
    window, one weighted cross-sectional regression per day. Writes
    episodes/<id>/attribution.parquet, RUN_DIR/attribution_summary.parquet and
    RUN_DIR/attribution/; `tradebench report RUN_DIR` then shows the attribution section.

    Example: tradebench attribute runs/csi300-2024
    """
    from tradebench.agents.factor import agent  # noqa: F401  (registers the factor models)
    from tradebench.attribution.run import attribute_run
    from tradebench.metrics.factor_model import FactorModelConfig

    config = FactorModelConfig(vif_threshold=vif_threshold, calibration_days=calibration_days)
    outcome = attribute_run(
        run_dir,
        dataset=dataset,
        config=config,
        signal=signal,
        on_episode=lambda e: console.print(f"  attributed {e}", highlight=False),
    )
    for span, record in outcome.windows.items():
        kept = ", ".join(record["kept"])
        console.print(f"window {span}: factors kept {kept}", highlight=False)
        for item in record["dropped"]:
            vif = "n/a" if item["vif"] is None else f"{item['vif']:.2f}"
            console.print(f"  dropped {item['factor']} ({item['reason']}, VIF {vif})")
    if outcome.amount_source:
        console.print(f"traded amount: {outcome.amount_source}", highlight=False)
    for episode, why in outcome.skipped.items():
        console.print(f"  skipped {episode}: {why}", highlight=False)
    console.print(
        f"{len(outcome.episodes)} episodes attributed; summary: [bold]{outcome.summary_path}[/]"
    )
