"""The import graph of ``kgrag/``, ``flows/`` and ``graphs/``, built from the AST (top-level, ``TYPE_CHECKING`` and
function-level imports alike): no cycle between modules, none between kgrag's subpackages, no two folders (of
kgrag/, flows/, graphs/) importing each other both ways, nothing below the entry
points imports ``flows/`` or ``graphs/``, and the online agent never imports its offline training or evaluation
code."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("kgrag", "flows", "graphs")
#: the entry layer: the only modules of kgrag that may import flows/ or graphs/ (each a package: its modules count)
ENTRY_POINTS = ("kgrag.cli", "kgrag.api", "kgrag.mcp")
#: what the agent graph and the servers load: none of it may import the agent's offline training or evaluation
ONLINE_ROOTS = ("graphs.agent.graph", "kgrag.api.langgraph_http", "kgrag.api.app", "kgrag.mcp.server")
#: the agent's offline folders: training and evaluation
OFFLINE = ("kgrag.agent.training", "kgrag.agent.evaluation")
#: the ``make run`` demo: only its own package and the command that runs it import it
MAIN_JOB, MAIN_JOB_RUNNER = "kgrag.main_job", "kgrag.cli.run"
#: test and benchmark support at the repository root (not shipped): the product never imports it
HARNESS = "harness"


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


MODULES = _modules()


def _target(name: str) -> str | None:
    """The project module an imported name lives in (``a.b.c`` → ``a.b`` when ``c`` is not a module)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> set[str]:
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".") if is_package else module.split(".")[:-1]
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(t for t in map(_target, names) if t and t != module)
    return found


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _is_entry(module: str) -> bool:
    return any(module == e or module.startswith(e + ".") for e in ENTRY_POINTS)


def _may_import_above(module: str) -> bool:
    """The servers' packages, and of the command line only its entry module (``kgrag.cli``, the package's
    ``__init__``): its command modules reach flows/ and graphs/ through :mod:`kgrag.cli.above`."""
    return module == "kgrag.cli" or (_is_entry(module) and not module.startswith("kgrag.cli."))


def _subpackage(module: str) -> str:
    """``kgrag.network.store.core`` → ``kgrag.network``; a top-level kgrag module stands for itself."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "kgrag" else parts[0]


def _reachable(roots: tuple[str, ...]) -> set[str]:
    seen: set[str] = set()
    todo = [r for r in roots if r in GRAPH]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(GRAPH[module])
    return seen


def test_the_graph_is_read_from_the_sources():
    assert len(MODULES) > 150
    assert "kgrag.agent.turn.node" in GRAPH["kgrag.agent.kn.steps"]  # a top-level import
    assert "flows.prepare_data" in GRAPH["kgrag.cli"]  # a function-level import counts too


def test_no_module_cycle():
    assert _cycles(GRAPH) == []


def test_no_cycle_between_kgrag_subpackages():
    packages: dict[str, set[str]] = defaultdict(set)
    for module, targets in GRAPH.items():
        for target in targets:
            if _subpackage(target) != _subpackage(module):
                packages[_subpackage(module)].add(_subpackage(target))
    assert _cycles(packages) == []


def test_only_entry_points_import_flows_or_graphs():
    below = sorted((module, target) for module, targets in GRAPH.items() for target in targets
                   if module.startswith("kgrag.") and target.split(".")[0] in ("flows", "graphs")
                   and not _may_import_above(module))
    assert below == []


def test_flows_and_graphs_do_not_import_the_entry_points():
    upward = sorted((module, target) for module, targets in GRAPH.items() for target in targets
                    if module.split(".")[0] in ("flows", "graphs") and _is_entry(target))
    assert upward == []


def test_nothing_imports_the_command_line():
    """The CLI package is the top: what it shares with other entry points or the main job (threads, the turn tree,
    tables) lives below it (kgrag.threads, kgrag.terminal)."""
    upward = sorted((module, target) for module, targets in GRAPH.items() for target in targets
                    if _subpackage(target) == "kgrag.cli" and _subpackage(module) != "kgrag.cli")
    assert upward == []


def test_the_online_path_never_imports_training():
    online = _reachable(ONLINE_ROOTS)
    assert "kgrag.agent.kn.steps" in online and "kgrag.agent.kg.steps" in online
    assert sorted(m for m in online if m.startswith(OFFLINE)) == []


@pytest.mark.parametrize("kind", ["kn", "kg"])
def test_the_two_agents_do_not_import_each_other(kind):
    other = "kg" if kind == "kn" else "kn"
    crossing = sorted((module, target) for module, targets in GRAPH.items() for target in targets
                      if module.startswith(f"kgrag.agent.{kind}.") and target.startswith(f"kgrag.agent.{other}."))
    assert crossing == []


def test_a_cycle_is_detected():
    """The checker itself: a two-module circle and a self-contained chain."""
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def _folder(module: str) -> str:
    """The folder a module's file lives in (``kgrag.network.store.core`` → ``kgrag/network/store``; a package's
    ``__init__`` belongs to its own folder)."""
    return MODULES[module].parent.relative_to(ROOT).as_posix()


def _two_way_folders(graph: dict[str, set[str]]) -> list[tuple[str, str, str, str]]:
    """Pairs of folders that import each other (counting every import), each with one import of either way."""
    one_way: dict[tuple[str, str], str] = {}
    for module, targets in graph.items():
        for target in targets:
            pair = (_folder(module), _folder(target))
            if pair[0] != pair[1]:
                one_way.setdefault(pair, f"{module} -> {target}")
    return sorted((a, b, one_way[(a, b)], one_way[(b, a)]) for a, b in one_way if a < b and (b, a) in one_way)


def test_no_two_way_dependency_between_folders():
    """Data flows one way between folders, not only between modules: a parent's shared modules used by a child that
    the parent's other modules import (``network/model.py`` used by ``network/store/`` while ``network/cli.py``
    imports the store) is a circle too — shared modules live in a child folder of their own."""
    assert _two_way_folders(GRAPH) == []


def test_a_two_way_folder_dependency_is_detected():
    found = _two_way_folders({"kgrag.network.service": {"kgrag.network.store.core"},
                              "kgrag.network.store.core": {"kgrag.network.schema.model"},
                              "kgrag.network.schema.model": set()})
    assert found == []
    found = _two_way_folders({"kgrag.network.service": {"kgrag.network.store.core"},
                              "kgrag.network.store.core": {"kgrag.network.service"}})
    assert found == [("kgrag/network", "kgrag/network/store", "kgrag.network.service -> kgrag.network.store.core",
                      "kgrag.network.store.core -> kgrag.network.service")]


def _absolute_imports(path: Path) -> set[str]:
    """Every absolute module name a file imports (``from a.b import c`` gives ``a.b`` and ``a.b.c``), whether or
    not it is a project module: what :func:`_imports` leaves out."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _in(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_the_product_never_imports_the_harness():
    """harness/ (the server launchers and conformance suites of tests and benchmarks) is not in the wheel: nothing
    of kgrag/, flows/ or graphs/ may import it, at any level."""
    assert (ROOT / HARNESS / "__init__.py").is_file()
    assert not (ROOT / "kgrag" / "servers").exists()  # the launchers moved out of the product
    found = sorted((module, name) for module, path in MODULES.items() for name in _absolute_imports(path)
                   if _in(name, HARNESS))
    assert found == []


def test_only_the_run_command_imports_the_main_job():
    """The ``make run`` demo sits on top: the flows, the agent graph and the rest of kgrag use what it uses from
    kgrag proper, never the demo itself."""
    assert MAIN_JOB_RUNNER in MODULES and GRAPH[MAIN_JOB_RUNNER] & {f"{MAIN_JOB}.run"}
    found = sorted((module, target) for module, targets in GRAPH.items() for target in targets
                   if _in(target, MAIN_JOB) and not _in(module, MAIN_JOB) and module != MAIN_JOB_RUNNER)
    assert found == []


def test_the_import_rules_catch_offenders():
    """The checks above see an offending import when there is one."""
    assert _absolute_imports(ROOT / "tests" / "conftest.py") >= {"pytest", "os"}
    assert _in("harness.servers.ports", HARNESS) and not _in("harnessing", HARNESS)
    assert any(_in(name, HARNESS) for name in _absolute_imports(ROOT / "tests" / "fixtures" / "postgres.py"))
