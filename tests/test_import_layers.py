"""Issue 17 item 6: no import circle in tpsdb, and the engine (tpsdb.refresh) imports no concrete kind.

Every import of the package is read with ast, wherever it stands: at the top, inside a function (the usual way a
circle is hidden at run time) or under `if TYPE_CHECKING:`. An import names the module it loads: `from .collect
import llamabench` is tpsdb.collect.llamabench, `from .store import Store` is tpsdb.store. A package's own
__init__ is not counted as imported by its submodules (Python runs it first, but it is the package's door, not a
dependency of what it contains)."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "tpsdb"

# None left: the last one (collect/extract <-> collect/timings, now collect/tools; review 2026-12-01 §2) was cut
# when the post's Reading and Candidate moved one floor down, to collect/reading.py, which both readers import.
ALLOWED_CIRCLES: list[set[str]] = []

ENGINE = "tpsdb.refresh"
# What the engine may know of the kinds: the registry and the kinds' contract, never one kind, nor a format a kind
# reads (a peer's format, GitHub's pages).
CONCRETE = ("tpsdb.kinds.", "tpsdb.collect.github", "tpsdb.collect.github_rest", "tpsdb.peers", "tpsdb.tokatlas")
NOT_CONCRETE = {"tpsdb.kinds.base"}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _absolute(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    base = base if is_package else base[:-1]  # a module's "." is its package; a package's "." is itself
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that a module imports, anywhere in its text."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(name, path.name == "__init__.py", node)
            # `from package import submodule` loads the submodule; `from module import name`, the module
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # `import tpsdb.kinds.base as b`: the longest known prefix
                target = target.rpartition(".")[0]
            if target and target.startswith("tpsdb") and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports_of(name, path, known) for name, path in found.items()}


def circles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    out.append(group)
    return out


def test_the_reader_sees_function_local_and_type_checking_imports(tmp_path):
    """The test can fail: a circle hidden in a function, or under TYPE_CHECKING, is found."""
    package = tmp_path / "tpsdb"
    package.mkdir()
    (package / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n")
    (package / "b.py").write_text("def f():\n    from tpsdb import a\n    return a\n")
    (package / "c.py").write_text("from . import a\n")
    known = {"tpsdb.a", "tpsdb.b", "tpsdb.c"}
    edges = {name: imports_of(name, package / f"{name[6:]}.py", known) for name in sorted(known)}
    assert edges == {"tpsdb.a": {"tpsdb.b"}, "tpsdb.b": {"tpsdb.a"}, "tpsdb.c": {"tpsdb.a"}}
    assert circles(edges) == [{"tpsdb.a", "tpsdb.b"}]


def test_no_import_circle():
    found = circles(graph())
    unexpected = [sorted(c) for c in found if c not in ALLOWED_CIRCLES]
    assert unexpected == [], f"import circles: {unexpected}"


def test_the_engine_imports_no_concrete_kind():
    imported = graph()[ENGINE]
    concrete = sorted(m for m in imported if m.startswith(CONCRETE) and m not in NOT_CONCRETE)
    assert concrete == [], f"{ENGINE} imports {concrete}"


def test_the_source_file_loader_and_the_peer_format_sit_below_the_kinds():
    """The two imports that ran back up a floor (review §2): sources -> kinds, peers -> kinds/peer_dataset."""
    edges = graph()
    assert not any(m.startswith("tpsdb.kinds") for m in edges["tpsdb.sources"])
    assert not any(m.startswith("tpsdb.kinds") for m in edges["tpsdb.peers"] | edges["tpsdb.tokatlas"])
