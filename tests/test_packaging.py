"""Packaging and structure: one installed top-level package, no import cycle between the
parts of ``streameval``, no module over 600 lines."""

from __future__ import annotations

import ast
import itertools
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The installed layout (pyproject [tool.setuptools.package-dir]): folder -> package name.
PACKAGE_DIRS = {
    "streameval": "streameval",
    "protocol": "streameval.protocol",
    "replay": "streameval.replay",
    "tui": "streameval.tui",
    "examples": "streameval.worlds",
}
MAX_LINES = 600


def _modules() -> Iterator[tuple[str, Path]]:
    """(dotted module name, file) of every installed module."""
    for folder, package in PACKAGE_DIRS.items():
        base = ROOT / folder
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(base).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            if any(p.startswith(".") or p == "__pycache__" for p in parts):
                continue
            name = ".".join([package, *parts])
            # a sub-folder mapped to its own package is walked under that name instead
            if any(name.startswith(p + ".") or name == p for p in _mapped_below(package)):
                continue
            yield name, path


def _mapped_below(package: str) -> list[str]:
    return [p for p in PACKAGE_DIRS.values() if p.startswith(package + ".")]


def _node(module: str) -> str:
    """The unit of the graph: ``streameval.X`` — a subpackage, or a top-level module."""
    return ".".join(module.split(".")[:2])


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(module: str, path: Path) -> set[str]:
    """Modules of streameval that ``module`` imports at run time (any depth, not under
    ``if TYPE_CHECKING``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {m for m in found if m == "streameval" or m.startswith("streameval.")}


def import_graph() -> dict[str, dict[str, str]]:
    """node -> {imported node: an importing file}, self-edges left out."""
    graph: dict[str, dict[str, str]] = {}
    for module, path in _modules():
        src = _node(module)
        graph.setdefault(src, {})
        for target in _imports(module, path):
            dst = _node(target)
            if dst != src and dst != "streameval":
                graph[src].setdefault(dst, str(path.relative_to(ROOT)))
    return graph


def find_cycle(graph: dict[str, dict[str, str]]) -> list[str] | None:
    """One cycle as a node list (first == last), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def dfs(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, {})):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (cycle := dfs(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := dfs(node)):
            return cycle
    return None


def test_no_import_cycle_between_parts_of_streameval() -> None:
    graph = import_graph()
    assert "streameval.tui" in graph and "streameval.leaderboard" in graph  # the walk works
    cycle = find_cycle(graph)
    if cycle:
        steps = [f"{a} -> {b} ({graph[a][b]})" for a, b in itertools.pairwise(cycle)]
        pytest.fail("import cycle:\n  " + "\n  ".join(steps))


def test_cycle_finder_finds_a_planted_cycle() -> None:
    graph = {"a": {"b": "x"}, "b": {"c": "y"}, "c": {"a": "z"}, "d": {"a": "w"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": "x"}, "b": {}}) is None


def test_no_module_over_600_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for _, path in _modules()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}"


@pytest.mark.timeout(600)
def test_wheel_installs_exactly_one_top_level_package(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    (wheel,) = tmp_path.glob("streameval-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"streameval"}, top
    # the mapped folders are inside it, with their data files
    for sub in ("protocol", "replay", "tui", "worlds", "leaderboard", "metrics"):
        assert f"streameval/{sub}/__init__.py" in names
    assert "streameval/py.typed" in names
    assert any(n.startswith("streameval/tui/") and n.endswith(".tcss") for n in names)


# The import layers are import-linter contracts (pyproject.toml [tool.importlinter], `make
# imports`, run by .ci/run); the module-level cycles are tests/test_imports.py's.


def test_streameval_holds_few_modules_directly() -> None:
    direct = sorted(p.name for p in (ROOT / "streameval").glob("*.py"))
    allowed = ["__init__.py", "__main__.py", "api.py", "constants.py", "errors.py"]
    assert direct == allowed
