"""The layers of docs/architecture.md, checked on the source with `ast` (nothing imported).

`LAYERS` states which package may import which: a module may import its own layer and the
layers below it, never one above, at module level. An import inside a function runs all the
same, so it is held to the same rule, except the deferred imports listed in
`DEFERRED_IMPORTS` (the CLI loads each verb's library on use). There is no import cycle
between files, with or without the imports inside functions; the harness names no benchmark,
metrics stay pure, and typer lives in `cli/` only.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "import_graph.py"

LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("foundation", frozenset({"tradebench", "errors", "files", "registry", "prompt_files"})),
    ("data", frozenset({"data", "masking", "sandbox"})),
    ("view", frozenset({"view"})),
    ("market", frozenset({"features", "market"})),
    ("metrics", frozenset({"metrics", "inference"})),
    ("models", frozenset({"llm"})),
    ("agents", frozenset({"agents", "risk"})),
    ("runs", frozenset({"runs"})),
    ("readers", frozenset({"report", "attribution"})),
    ("benchmarks", frozenset({"benchmarks"})),
    ("across benchmarks", frozenset({"leaderboard", "integrations", "probe", "demo"})),
    ("planning", frozenset({"plan"})),
    ("cli", frozenset({"cli"})),
)
"""The layers from the bottom up, each with its top-level modules and packages of
`src/tradebench` (`tradebench` is the package's `__init__`). `runs` holds the generic
harness, `runs/broker/` and `runs/ray/`; `report` holds the generic report sections a
benchmark builds its own from, so it sits below `benchmarks`."""

DEFERRED_IMPORTS: dict[str, frozenset[str]] = {
    "tradebench.agents.factor.torch_fit": frozenset({"tradebench.agents.factor.nets"}),
    "tradebench.benchmarks.mcq.bars": frozenset({"tradebench.data"}),
}
"""Imports inside functions outside `cli/`, each with its reason: the factor zoo imports its
PyTorch networks (which need the optional torch) on use; the MCQ builder's bar loader
imports `tradebench.data` only to read a dataset folder (a build from a long Parquet file
starts without it). Entries looked up by name (a
benchmark, an agent's or a provider's adapter, an installed package's entry point) are
imported by `registry.Registry` from their `module:attribute` path, not by an import
statement."""


def layer_of(module: str) -> int:
    """The index in `LAYERS` of a dotted module name of the package."""
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else parts[0]
    for rank, (_, members) in enumerate(LAYERS):
        if top in members:
            return rank
    raise AssertionError(f"{module} belongs to no layer: add its package to LAYERS")


def upward(edges: dict[str, set[str]]) -> list[str]:
    """Every import of a module from a higher layer, as `importer -> imported` lines."""
    return sorted(
        f"{a} ({LAYERS[layer_of(a)][0]}) -> {b} ({LAYERS[layer_of(b)][0]})"
        for a, targets in edges.items()
        for b in targets
        if layer_of(b) > layer_of(a)
    )


@pytest.fixture(scope="module")
def graph():
    spec = importlib.util.spec_from_file_location("import_graph", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    known = module.modules()
    found = module.scan(known)
    return module, known, found.top, found.inner, found.typer_users


def _imports_of(prefix: str, edges: dict[str, set[str]]) -> set[str]:
    return {t for m, ts in edges.items() if m == prefix or m.startswith(prefix + ".") for t in ts}


def test_every_package_is_in_a_layer(graph) -> None:
    _, known, *_ = graph
    for module in known:
        layer_of(module)


def test_no_module_level_import_reaches_up_a_layer(graph) -> None:
    _, _, top, _, _ = graph
    assert upward(top) == []


def test_imports_inside_functions_are_listed_and_never_reach_up(graph) -> None:
    _, _, _, inner, _ = graph
    deferred = {m: set(t) for m, t in inner.items() if t and not m.startswith("tradebench.cli")}
    assert deferred == {m: set(t) for m, t in DEFERRED_IMPORTS.items()}
    assert upward(inner) == []


def test_no_import_cycles_even_through_imports_inside_functions(graph) -> None:
    module, _, top, inner, _ = graph
    both = {m: top.get(m, set()) | inner.get(m, set()) for m in set(top) | set(inner)}
    assert module.components(top) == []
    assert module.components(both) == []


def test_no_loops_between_packages(graph) -> None:
    module, *_ = graph
    assert module.report()["package_loops"] == []


def test_only_the_cli_imports_typer(graph) -> None:
    *_, typer_users = graph
    assert typer_users and all(m.startswith("tradebench.cli") for m in typer_users)


def test_the_harness_names_no_benchmark_and_metrics_stay_pure(graph) -> None:
    _, _, top, inner, _ = graph
    both = {m: top.get(m, set()) | inner.get(m, set()) for m in set(top) | set(inner)}
    harness = _imports_of("tradebench.runs", both)
    assert not {t for t in harness if t.startswith("tradebench.benchmarks")}
    report = _imports_of("tradebench.report", both)
    assert "tradebench.runs.executor" not in report
    metrics = _imports_of("tradebench.metrics", both)
    assert {t.split(".")[1] for t in metrics} <= {"metrics", "errors", "features"}


def test_the_architecture_doc_names_every_layer() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = doc.split("## Layers", 1)[1].split("\n## ", 1)[0]
    for name, members in LAYERS:
        assert f"**{name}**" in section, f"layer {name!r} is not in docs/architecture.md"
        for member in members - {"tradebench"}:
            assert f"`{member}" in section, f"{member} is not in docs/architecture.md's layers"
