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


# ----------------------------------------------------------------------------------------
# Rooms: inside a package whose __init__ declares RANKS, each piece (a subpackage or a module)
# imports only pieces of a lower rank, and of a room only the modules its PUBLIC names; a module
# outside the package (another room's, a higher package's) also reaches a room only through PUBLIC.


def _declared(init: Path, name: str):
    """The literal assigned to ``name`` in ``init`` (read from the text: nothing is imported)."""
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    return None


def room_violations(root: Path = ROOT, packages=PACKAGES) -> list[str]:
    """Every import that breaks a declared room rule, as "importer -> imported: why"."""
    graph, found = import_graph(root, packages), []
    for init in sorted(root.glob("**/__init__.py")):
        ranks = _declared(init, "RANKS")
        if ranks is None or init.parent.relative_to(root).parts[0] not in packages:
            continue
        package = ".".join(init.parent.relative_to(root).parts)
        for importer, deps in sorted(graph.items()):
            for dep in sorted(deps):
                src, dst = _piece(importer, package), _piece(dep, package)
                if dst is None or src == dst or importer == package:
                    continue
                if src is None:  # from outside the package: the rank rule is the outer package's
                    if not _public(root, package, dst, dep):
                        found.append(f"{importer} -> {dep}: not in {package}.{dst}.PUBLIC")
                    continue
                if src not in ranks or dst not in ranks:
                    found.append(f"{importer} -> {dep}: {package}.RANKS does not rank {src if src not in ranks else dst}")
                elif ranks[dst] >= ranks[src]:
                    found.append(f"{importer} -> {dep}: {dst} (rank {ranks[dst]}) is not below {src} (rank {ranks[src]})")
                elif not _public(root, package, dst, dep):
                    found.append(f"{importer} -> {dep}: not in {package}.{dst}.PUBLIC")
    return found


def _piece(module: str, package: str) -> str | None:
    """The piece of ``package`` that ``module`` belongs to (None: outside it, or the package itself)."""
    if not module.startswith(package + "."):
        return None
    return module[len(package) + 1:].split(".")[0]


def _public(root: Path, package: str, piece: str, dep: str) -> bool:
    """Is ``dep`` the room ``piece`` itself or a module its PUBLIC names (a piece that is a module,
    or a room that declares no PUBLIC, is public whole)?"""
    init = root.joinpath(*package.split("."), piece, "__init__.py")
    public = _declared(init, "PUBLIC") if init.exists() else None
    rest = dep.split(".")[len(package.split(".")) + 1:]
    return public is None or not rest or rest[0] in public


def room_depth(root: Path = ROOT, package: str = "empirical") -> int:
    """Levels of the graph between ``package``'s rooms (1: no room imports another)."""
    graph, rooms = import_graph(root), {}
    for importer, deps in graph.items():
        src = _piece(importer, package)
        if src is not None:
            rooms.setdefault(src, set()).update(d for d in map(lambda m: _piece(m, package), deps) if d not in (None, src))
    level: dict[str, int] = {}

    def depth(room: str) -> int:
        if room not in level:
            level[room] = 1 + max((depth(d) for d in rooms.get(room, ())), default=0)
        return level[room]

    return max(map(depth, rooms))


def _assert_rooms(top: Path) -> None:
    """``top`` holds rooms only (no module but its __init__), each ranked and with a README."""
    assert sorted(p.name for p in top.glob("*.py")) == ["__init__.py"]
    rooms = sorted(p.name for p in top.iterdir() if (p / "__init__.py").exists())
    assert rooms == sorted(_declared(top / "__init__.py", "RANKS"))
    for room in rooms:
        assert (top / room / "README.md").read_text().strip(), room


def test_empirical_is_rooms_with_a_readme_each_and_no_flat_module():
    _assert_rooms(ROOT / "empirical")


def test_proofs_is_rooms_with_a_readme_each_and_no_flat_module():
    _assert_rooms(ROOT / "proofs")
    _assert_rooms(ROOT / "proofs" / "certify")


def test_rooms_import_only_lower_rooms_and_their_public_modules():
    assert room_violations() == []
    assert room_depth() == 4  # host <- training <- weights | analysis | lm <- pipeline
    assert room_depth(package="proofs") == 4  # statements | smt <- certify <- coq <- registry
    assert room_depth(package="proofs.certify") == 3  # arithmetic <- head <- stack


def _plant(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_an_upward_a_sibling_and_a_private_import_are_found(tmp_path):
    """Planted: a lower room importing a higher one, two siblings, and a module kept private."""
    files = {
        "empirical/__init__.py": 'RANKS = {"low": 0, "left": 1, "right": 1, "top": 2}\n',
        "empirical/low/__init__.py": 'PUBLIC = ("api",)\n',
        "empirical/low/api.py": "",
        "empirical/low/inner.py": "def f():\n    from empirical.top import cli\n",
        "empirical/left/__init__.py": "",
        "empirical/left/a.py": "from empirical.low import api\nfrom empirical.right import b\n",
        "empirical/right/__init__.py": "",
        "empirical/right/b.py": "from empirical.low import inner\n",
        "empirical/top/__init__.py": "",
        "empirical/top/cli.py": "from empirical.left import a\n",
    }
    assert room_violations(_plant(tmp_path, files), ("empirical",)) == [
        "empirical.left.a -> empirical.right.b: right (rank 1) is not below left (rank 1)",
        "empirical.low.inner -> empirical.top.cli: top (rank 2) is not below low (rank 0)",
        "empirical.right.b -> empirical.low.inner: not in empirical.low.PUBLIC",
    ]


def test_nested_rooms_and_imports_from_outside_a_package_are_checked(tmp_path):
    """Planted: a room of a nested package importing a higher one of its siblings, and a private
    module of a nested room reached from another room of the outer package and from another package."""
    files = {
        "proofs/__init__.py": 'RANKS = {"low": 0, "top": 1}\n',
        "proofs/low/__init__.py": 'RANKS = {"a": 0, "b": 1}\n',
        "proofs/low/a/__init__.py": 'PUBLIC = ("api",)\n',
        "proofs/low/a/api.py": "",
        "proofs/low/a/inner.py": "def f():\n    from proofs.low.b import user\n",
        "proofs/low/b/__init__.py": "",
        "proofs/low/b/user.py": "from proofs.low.a import api\n",
        "proofs/top/__init__.py": "",
        "proofs/top/cli.py": "from proofs.low.a import api, inner\n",
        "empirical/__init__.py": "",
        "empirical/use.py": "from proofs.low.a import inner\nfrom proofs.low.b import user\n",
    }
    assert room_violations(_plant(tmp_path, files), ("proofs", "empirical")) == [
        "empirical.use -> proofs.low.a.inner: not in proofs.low.a.PUBLIC",
        "proofs.low.a.inner -> proofs.low.b.user: b (rank 1) is not below a (rank 0)",
        "proofs.top.cli -> proofs.low.a.inner: not in proofs.low.a.PUBLIC",
    ]
