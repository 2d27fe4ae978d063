"""The project rule "no import cycles", checked on the source text: every import counts, also the
ones inside functions (a lazy import hides a cycle from Python, not from a reader)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("constructions", "proofs", "empirical")


def _modules(root: Path, packages=PACKAGES) -> dict[str, Path]:
    out = {}
    for pkg in packages:
        for path in (root / pkg).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def import_graph(root: Path = ROOT, packages=PACKAGES) -> dict[str, set[str]]:
    """module -> the project modules it imports (relative imports resolved)."""
    mods = _modules(root, packages)
    graph = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                deps |= {f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names}
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
        graph[name] = {d for d in deps if d in mods and d != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop())
                on.discard(comp[-1])
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_project_has_no_import_cycles():
    graph = import_graph()
    assert "proofs.smt.search" in graph and "proofs.smt.relu" in graph["proofs.smt.search"]
    assert cycles(graph) == []


def test_a_lazy_import_cycle_is_found(tmp_path):
    """Planted: the shape proofs/smt had (search imports relu at top, relu imports search inside
    a function) is reported."""
    pkg = tmp_path / "proofs"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "search.py").write_text("from .relu import run\n")
    (pkg / "relu.py").write_text("def run():\n    from .search import combine\n")
    (pkg / "other.py").write_text("from . import relu\n")
    assert cycles(import_graph(tmp_path, ("proofs",))) == [["proofs.relu", "proofs.search"]]
