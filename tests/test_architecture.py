"""The import structure ARCHITECTURE.md promises, read from the source with `ast`:
no cycles, the harness names no benchmark, metrics stay pure, typer lives in `cli/`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "import_graph.py"


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


def test_no_import_cycles_even_through_imports_inside_functions(graph) -> None:
    module, _, top, inner, _ = graph
    both = {m: top.get(m, set()) | inner.get(m, set()) for m in set(top) | set(inner)}
    assert module.components(top) == []
    assert module.components(both) == []


def test_no_loops_between_packages(graph) -> None:
    module, *_ = graph
    assert module.report()["package_loops"] == []


def test_imports_inside_functions_are_only_lazy_entry_points(graph) -> None:
    """The CLI imports each command's library on use (fast start-up), the provider
    registry imports an SDK adapter on use, the factor zoo imports its PyTorch networks
    (which need the optional torch) on use; nothing else defers an import."""
    _, _, _, inner, _ = graph
    deferred = {m for m, targets in inner.items() if targets}
    allowed = {m for m in deferred if m == "tradebench.cli" or m.startswith("tradebench.cli.")}
    assert deferred - allowed == {
        "tradebench.llm.base",
        "tradebench.agents.factor.torch_fit",
    }
    assert inner["tradebench.llm.base"] == {
        "tradebench.llm.openai_provider",
        "tradebench.llm.anthropic_provider",
    }
    assert inner["tradebench.agents.factor.torch_fit"] == {"tradebench.agents.factor.nets"}


def test_only_the_cli_imports_typer(graph) -> None:
    *_, typer_users = graph
    assert typer_users and all(m.startswith("tradebench.cli") for m in typer_users)


def test_layers_point_down_the_data_flow(graph) -> None:
    _, _, top, inner, _ = graph
    both = {m: top.get(m, set()) | inner.get(m, set()) for m in set(top) | set(inner)}
    harness = _imports_of("tradebench.runs", both)
    assert not {t for t in harness if t.startswith("tradebench.benchmarks")}
    report = _imports_of("tradebench.report", both)
    assert not {t for t in report if t.startswith(("tradebench.benchmarks", "tradebench.cli"))}
    assert "tradebench.runs.executor" not in report
    metrics = _imports_of("tradebench.metrics", both)
    assert {t.split(".")[1] for t in metrics} <= {"metrics", "errors", "features"}
    nothing_imports_cli = {m for m, ts in both.items() if not m.startswith("tradebench.cli")}
    assert not any(t.startswith("tradebench.cli") for m in nothing_imports_cli for t in both[m])
