"""No import cycle between the modules of ``streameval``: not at module level, not under
``if TYPE_CHECKING:``, not inside a function. A cycle ties two modules' meanings together (a
change to either is a change to both), and a lazy import inside a function only hides it.

The graph is grimp's (import-linter's engine), built on the tree laid out as the installed
namespace (``tools/typecheck_tree.sh``: ``protocol/``, ``replay/``, ``tui/``, ``examples/``
inside ``streameval/``), in a child process started there so that it imports that tree."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_CYCLES = """
import json, sys
import grimp
graph = grimp.build_graph("streameval", exclude_type_checking_imports=False)
edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
import streameval
print(json.dumps({"origin": streameval.__file__,
                  "edges": edges}))
"""


def strongly_connected(edges: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module (each a cycle), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:  # iterative: the graph is a few hundred modules deep
        nonlocal counter
        work = [(start, iter(edges.get(start, [])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
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
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(edges.get(child, []))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def module_edges() -> dict[str, list[str]]:
    pytest.importorskip("grimp")
    tree = subprocess.run(
        ["bash", str(ROOT / "tools" / "typecheck_tree.sh")],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout.strip()
    done = subprocess.run(
        [sys.executable, "-c", _CYCLES],
        capture_output=True,
        text=True,
        cwd=ROOT / tree.rsplit("/streameval", 1)[0],
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert "build/typecheck" in out["origin"], out["origin"]  # the laid-out tree, not ours
    edges: dict[str, list[str]] = out["edges"]
    return edges


def test_no_module_imports_itself_back() -> None:
    edges = module_edges()
    assert "streameval.protocol.wire" in edges and "streameval.tui.app" in edges  # whole tree
    cycles = strongly_connected(edges)
    assert not cycles, "import cycles (break each):\n  " + "\n  ".join(
        " <-> ".join(c) for c in cycles
    )


def test_the_cycle_finder_finds_planted_cycles() -> None:
    edges = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": [], "e": ["e2"], "e2": ["e"]}
    assert strongly_connected(edges) == [["a", "b", "c"], ["e", "e2"]]
    assert strongly_connected({"a": ["b"], "b": []}) == []
