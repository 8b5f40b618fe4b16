"""The package's import graph: dependencies point down the layers, and nothing imports in a circle.

Every import that runs counts: module level and inside functions (lazy). An import under
``TYPE_CHECKING`` runs nothing and only names a type: features and integrations name the facade they
are given (``MarkdownMemory``) that way, and that is the one upward name such an import may take.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import langchain_md_memory

PACKAGE = "langchain_md_memory"
ROOT = Path(langchain_md_memory.__file__).parent

# Bottom to top. A module may import from its own layer or any layer below it, never above.
# `memory` (MarkdownMemory, ProjectMemory) composes the owners below (files.documents, sync.indexer,
# search.searcher) and the features and integrations it hands itself to; the CLI drives it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "types"),
    ("config", "text", "prompts"),
    ("files",),
    ("index", "postgres"),  # postgres: the second backend of the two seams (documents and index)
    ("embeddings",),
    ("sync",),
    ("search",),
    ("aio",),
    ("features",),
    ("integrations",),
    ("memory",),
    ("cli", "langgraph"),  # langgraph: the LangGraph parts, gathered for those who build a graph
    ("__init__", "__main__"),
)
RANK = {room: rank for rank, rooms in enumerate(LAYERS) for room in rooms}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def room_of(module: str) -> str:
    return module.split(".")[0]


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return (node.module or "").removeprefix(PACKAGE).lstrip(".")
    base = importer.split(".") if importer != "__init__" else []
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
    return ".".join([*base, *([node.module] if node.module else [])])


def _known(target: str) -> str | None:
    """The package module ``target`` names (a module, or a name inside one), if any."""
    while target:
        if target in MODULES:
            return target
        target = target.rpartition(".")[0]
    return None


def _type_only(tree: ast.Module) -> set[ast.AST]:
    """The import statements under ``if TYPE_CHECKING:``."""
    found: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            found.update(n for stmt in node.body for n in ast.walk(stmt)
                         if isinstance(n, ast.Import | ast.ImportFrom))
    return found


def imports_of(module: str, *, type_only: bool = False) -> Iterator[str]:
    """The package modules ``module`` imports when it runs (``type_only``: those under TYPE_CHECKING)."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    typing_only = _type_only(tree)
    for node in ast.walk(tree):
        if (node in typing_only) != type_only:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.startswith(PACKAGE)]
            targets = [n.removeprefix(PACKAGE).lstrip(".") for n in names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and not (node.module or "").startswith(PACKAGE):
                continue
            base = _resolve(module, is_package, node)
            targets = [f"{base}.{a.name}" if base else a.name for a in node.names]
        else:
            continue
        for target in targets:
            known = _known(target)
            if known is not None and known != module:
                yield known


GRAPH = {module: sorted(set(imports_of(module))) for module in MODULES}
TYPE_GRAPH = {module: sorted(set(imports_of(module, type_only=True))) for module in MODULES}


def test_every_module_belongs_to_a_layer() -> None:
    unknown = sorted(m for m in MODULES if room_of(m) not in RANK)
    assert not unknown, f"modules outside the layer map (add them to LAYERS): {unknown}"


def test_no_import_points_up_the_layers() -> None:
    upward = [
        f"{importer} -> {imported}"
        for importer, targets in GRAPH.items()
        for imported in targets
        if RANK[room_of(imported)] > RANK[room_of(importer)]
    ]
    assert not upward, "imports against the layer order:\n" + "\n".join(upward)


def test_type_only_imports_point_up_only_to_the_facade() -> None:
    upward = [
        f"{importer} -> {imported}"
        for importer, targets in TYPE_GRAPH.items()
        for imported in targets
        if RANK[room_of(imported)] > RANK[room_of(importer)] and imported != "memory"
    ]
    assert not upward, "type-only imports against the layer order:\n" + "\n".join(upward)


SEAM = ("index.base", "index.rows", "index.scoring", "index.topk")
"""What both index backends build on: the protocol, the rows they write and the scoring they compute."""


def test_the_two_index_backends_meet_only_at_the_seam() -> None:
    backends = {"index.sqlite": "postgres", "postgres": "index.sqlite"}
    crossing = [
        f"{importer} -> {imported}"
        for importer, targets in GRAPH.items()
        for imported in targets
        if any(importer.startswith(own) and imported.startswith(other) for own, other in backends.items())
        or (importer in SEAM and imported.startswith(("index.sqlite", "postgres")))
    ]
    assert not crossing, "an index backend imports the other, or the seam a backend:\n" + "\n".join(crossing)


def test_import_graph_has_no_cycle() -> None:
    # The package's own __init__ re-exports everything and is imported first by Python; leave it out.
    graph = {m: [t for t in ts if t != "__init__"] for m, ts in GRAPH.items() if m != "__init__"}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for start in graph:
        if start not in state and (cycle := visit(start)) is not None:
            pytest.fail("import cycle: " + " -> ".join(cycle))


def test_no_module_reaches_into_another_rooms_private_names() -> None:
    offenders = []
    for module in MODULES:
        tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(PACKAGE)):
                base = _resolve(module, MODULES[module].name == "__init__.py", node)
                private = [a.name for a in node.names if a.name.startswith("_") and a.name != "__version__"]
                if private and room_of(base or "__init__") != room_of(module):
                    offenders.append(f"{module} imports {private} from {base}")
    assert not offenders, "\n".join(offenders)


def _memory_parts_reached(module: str) -> list[str]:
    """``mem.store`` / ``mem.index`` / ``mem._indexer`` / ``mem.embedder`` in a module's code."""
    found = []
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Attribute) and node.attr in {"store", "index", "indexer", "embedder"}):
            continue
        owner = node.value
        name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
        if name in {"mem", "memory", "_memory", "global_memory"}:
            found.append(f"{module}:{node.lineno} {name}.{node.attr}")
    return found


def test_features_and_integrations_use_only_the_memorys_public_methods() -> None:
    rooms = {"features", "integrations"}
    reached = [hit for m in MODULES if room_of(m) in rooms for hit in _memory_parts_reached(m)]
    assert not reached, "reach into a memory's parts instead of its methods:\n" + "\n".join(reached)


def _sqlite3_imports(source: str) -> list[int]:
    """Lines of ``source`` that import ``sqlite3`` (or a part of it), at any depth of the code."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        else:
            continue
        if any(name == "sqlite3" or name.startswith("sqlite3.") for name in names):
            lines.append(node.lineno)
    return lines


def test_only_the_index_imports_sqlite3() -> None:
    # The SQLite index translates every sqlite3 error into the MemoryIndexError family at its boundary
    # (index/sqlite/connection.py, index/sqlite/schema.py), as the PostgreSQL backend does with psycopg's:
    # a module above it that needed sqlite3 would be catching an error that escaped that boundary.
    outside = [f"{module}:{line}" for module, path in MODULES.items() if room_of(module) != "index"
               for line in _sqlite3_imports(path.read_text(encoding="utf-8"))]
    assert not outside, "sqlite3 imported outside index/ (translate the error there):\n" + "\n".join(outside)


def test_the_sqlite3_check_sees_every_spelling_of_the_import() -> None:
    # The check above must not pass for want of seeing: lazy imports and submodules count too.
    source = "import sqlite3\ndef f():\n    from sqlite3 import Error\n    import sqlite3.dbapi2 as db\n" \
             "import sqlite3x\nfrom .sqlite3 import x\n"
    assert _sqlite3_imports(source) == [1, 3, 4]
