"""Count the import structure of `src/tradebench`: cycles, function-level imports, typer users.

Usage: python scripts/import_graph.py [--verbose]

Reads the source with `ast` (nothing is imported). A file-level edge is an import at module
level, outside `if TYPE_CHECKING:`; a function-level import is one inside a function body.
Cycles are strongly connected components of the file graph; package loops are the same over
the top-level packages with function-level imports counted too (they run all the same).
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "tradebench"


def module_name(path: Path) -> str:
    """Dotted module name of a source file under ROOT."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name."""
    return {module_name(p): p for p in sorted((ROOT / PACKAGE).rglob("*.py"))}


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The longest known module prefix of a dotted name."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in known:
            return candidate
        parts.pop()
    return None


def _targets(node: ast.AST, here: str, is_pkg: bool, known: dict[str, Path]) -> list[str]:
    """Package modules an import statement loads directly."""
    out: list[str] = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.startswith(PACKAGE):
                hit = _resolve(alias.name, known)
                if hit:
                    out.append(hit)
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = here.split(".") if is_pkg else here.split(".")[:-1]
            base = base[: len(base) - node.level + 1]
            mod = ".".join(base + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        if not mod.startswith(PACKAGE):
            return out
        for alias in node.names:
            hit = _resolve(f"{mod}.{alias.name}", known)
            if hit:
                out.append(hit)
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


@dataclass
class FileImports:
    """What one module imports: package modules at file level and inside functions."""

    top: set[str] = field(default_factory=set)
    inner: set[str] = field(default_factory=set)
    function_level: int = 0
    function_level_own: int = 0
    """Function-level imports of package modules (not the standard library or others)."""
    uses_typer: bool = False


def scan_file(mod: str, path: Path, known: dict[str, Path]) -> FileImports:
    """The imports of one module (type-only imports are left out of the edges)."""
    out = FileImports()
    is_pkg = path.name == "__init__.py"

    def visit(node: ast.AST, in_func: bool, in_tc: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                names = [a.name for a in child.names]
                root = child.module if isinstance(child, ast.ImportFrom) else None
                if "typer" in names or (root or "").split(".")[0] == "typer":
                    out.uses_typer = True
                out.function_level += in_func
                targets = _targets(child, mod, is_pkg, known)
                out.function_level_own += in_func and bool(targets)
                if not in_tc:
                    for target in targets:
                        if target != mod:
                            (out.inner if in_func else out.top).add(target)
                continue
            nested = in_func or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            type_only = in_tc or (isinstance(child, ast.If) and _is_type_checking(child.test))
            visit(child, nested, type_only)

    visit(ast.parse(path.read_text(encoding="utf-8")), False, False)
    return out


@dataclass
class Scan:
    """The import graph of the package."""

    top: dict[str, set[str]]
    """File-level edges (type-only imports left out)."""
    inner: dict[str, set[str]]
    """Edges of imports inside functions."""
    function_level: int
    """Import statements inside functions, of anything."""
    own_function_level: dict[str, int]
    """Per module: imports of package modules inside functions."""
    typer_users: set[str]


def scan(known: dict[str, Path]) -> Scan:
    """Scan every module of the package."""
    out = Scan(defaultdict(set), defaultdict(set), 0, {}, set())
    for mod, path in known.items():
        found = scan_file(mod, path, known)
        out.top[mod] |= found.top
        out.inner[mod] |= found.inner
        out.function_level += found.function_level
        out.own_function_level[mod] = found.function_level_own
        if found.uses_typer:
            out.typer_users.add(mod)
    return out


def components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    nodes = set(graph) | {t for ts in graph.values() for t in ts}
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def package_of(mod: str) -> str:
    """Top-level package (or module) under tradebench."""
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def report(verbose: bool = False) -> dict[str, object]:
    """The counts as a dict (also printed by `main`)."""
    known = modules()
    found = scan(known)
    top, inner, typer_users = found.top, found.inner, found.typer_users
    file_cycles = components(top)
    runtime = defaultdict(set)
    for g in (top, inner):
        for a, bs in g.items():
            runtime[a] |= bs
    runtime_cycles = components(runtime)
    pkg: dict[str, set[str]] = defaultdict(set)
    for a, bs in runtime.items():
        for b in bs:
            pa, pb = package_of(a), package_of(b)
            if pa != pb and pa != PACKAGE and pb != PACKAGE:
                pkg[pa].add(pb)
    pkg_loops = components(pkg)
    out = {
        "modules": len(known),
        "file_cycles": file_cycles,
        "runtime_cycles": runtime_cycles,
        "package_loops": pkg_loops,
        "function_level_imports": found.function_level,
        "typer_importers": sorted(typer_users),
    }
    print(f"modules: {len(known)}")
    print(f"file-level import cycles: {len(file_cycles)}")
    print(f"cycles once function-level imports are counted: {len(runtime_cycles)}")
    print(f"package loops (all imports): {len(pkg_loops)}")
    own = found.own_function_level
    outside_cli = sum(n for m, n in own.items() if not m.startswith(f"{PACKAGE}.cli"))
    print(f"function-level imports: {found.function_level}")
    print(f"  of package modules: {sum(own.values())}, outside cli/: {outside_cli}")
    print(f"modules importing typer: {len(typer_users)}")
    if verbose:
        for label, comps in (
            ("file cycle", file_cycles),
            ("runtime cycle", runtime_cycles),
            ("package loop", pkg_loops),
        ):
            for c in comps:
                print(f"  {label}: {' <-> '.join(c)}")
        for m in sorted(typer_users):
            print(f"  typer: {m}")
    return out


if __name__ == "__main__":
    report(verbose="--verbose" in sys.argv)
