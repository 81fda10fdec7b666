"""No import cycle between packages, including those no layers contract in pyproject.toml lists.

The import-linter contracts check the orders they name; this checks what they cannot: that no
cycle runs through packages that no contract lists. The graph is grimp's (import-linter's own),
so it sees exactly the imports lint-imports sees, TYPE_CHECKING and function-local ones included.

For every package (nodeagent and plugins together at the top, then each package inside them) its
children are squashed into nodes, and an import from anywhere inside one child to anywhere inside
another is an edge. A strongly connected set of children is a failure when it holds a package:
a cycle among plain modules of one package (store.py <-> txn.py) is that package's own business.
The failure names one cycle with an import for each of its steps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import pairwise

import grimp
import pytest

ROOTS = ("nodeagent", "plugins")


def _child(module: str, parent: str) -> str:
    """The child of `parent` that `module` is or lies in (`parent` "" means the top: the root packages)."""
    depth = parent.count(".") + 2 if parent else 2
    return ".".join(module.split(".")[:depth])


def sibling_edges(graph: grimp.ImportGraph, parent: str) -> dict[tuple[str, str], tuple[str, str]]:
    """Edges between the children of `parent` (the top when ""), each with one import that makes it."""
    if parent:
        modules: Iterable[str] = graph.find_descendants(parent)
    else:
        modules = [m for m in graph.modules if m.split(".")[0] in ROOTS and "." in m]
    edges: dict[tuple[str, str], tuple[str, str]] = {}
    for module in sorted(modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported.split(".")[0] not in ROOTS or "." not in imported:
                continue
            if parent and not imported.startswith(parent + "."):
                continue
            a, b = _child(module, parent), _child(imported, parent)
            if a != b:
                edges.setdefault((a, b), (module, imported))
    return edges


def strongly_connected(nodes: Iterable[str], edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one node, iteratively (no recursion limit)."""
    succ: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        succ.setdefault(a, []).append(b)
        succ.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(succ):
        if root in index:
            continue
        work = [(root, iter(sorted(succ[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(succ[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
    return out


def one_cycle(component: list[str], edges: Iterable[tuple[str, str]]) -> list[str]:
    """A shortest cycle through the component's first node, as the nodes in order (first repeated last)."""
    members = set(component)
    succ: dict[str, list[str]] = {}
    for a, b in edges:
        if a in members and b in members:
            succ.setdefault(a, []).append(b)
    start = component[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for child in sorted(succ.get(node, ())):
                if child == start:
                    return [*paths[node], start]
                if child not in paths:
                    paths[child] = [*paths[node], child]
                    nxt.append(child)
        frontier = nxt
    raise AssertionError(f"no cycle through {start} in a strongly connected set: {component}")


def package_cycles(graph: grimp.ImportGraph) -> list[str]:
    """Every cycle between sibling packages, one line each: the cycle, then an import for each step."""
    inner = sorted(m for m in graph.modules if m.split(".")[0] in ROOTS and "." in m and graph.find_children(m))
    packages = ["", *inner]  # "": the roots' children together
    found = []
    for parent in packages:
        edges = sibling_edges(graph, parent)
        for component in strongly_connected([], edges):
            if not any(graph.find_children(member) for member in component):
                continue  # plain modules of one package
            cycle = one_cycle(component, edges)
            steps = ", ".join(f"{edges[(a, b)][0]} -> {edges[(a, b)][1]}" for a, b in pairwise(cycle))
            found.append(f"{' -> '.join(cycle)} (through {len(component)} packages; {steps})")
    return found


def _graph(imports: Mapping[str, Iterable[str]]) -> grimp.ImportGraph:
    graph = grimp.ImportGraph()
    for module, imported in imports.items():
        graph.add_module(module)
        for other in imported:
            graph.add_module(other)
            graph.add_import(importer=module, imported=other)
    return graph


def test_no_import_cycle_between_subpackages() -> None:
    graph = grimp.build_graph(*ROOTS, cache_dir=None)
    cycles = package_cycles(graph)
    assert not cycles, "import cycles between packages:\n" + "\n".join(cycles)


def test_the_check_names_a_cycle_between_packages() -> None:
    graph = _graph({
        "nodeagent": [], "nodeagent.a": [], "nodeagent.b": [],
        "nodeagent.a.x": ["nodeagent.b.y"],
        "nodeagent.b.y": ["nodeagent.c"],
        "nodeagent.c": ["nodeagent.a"],
    })
    assert package_cycles(graph) == [
        "nodeagent.a -> nodeagent.b -> nodeagent.c -> nodeagent.a (through 3 packages; "
        "nodeagent.a.x -> nodeagent.b.y, nodeagent.b.y -> nodeagent.c, nodeagent.c -> nodeagent.a)"
    ]


@pytest.mark.parametrize(("imports", "cycles"), [
    # nested packages: a cycle between two subpackages of one package
    ({"nodeagent.p.a.x": ["nodeagent.p.b.y"], "nodeagent.p.b.y": ["nodeagent.p.a"]}, 1),
    # plain modules of one package importing each other: not a package cycle
    ({"nodeagent.p.x": ["nodeagent.p.y"], "nodeagent.p.y": ["nodeagent.p.x"], "nodeagent.p.a.z": []}, 0),
    # one way only
    ({"nodeagent.p.a.x": ["nodeagent.p.b.y"], "nodeagent.p.b.y": ["nodeagent.q"]}, 0),
])
def test_the_check_sees_nested_packages_and_spares_plain_modules(
    imports: dict[str, list[str]], cycles: int
) -> None:
    graph = _graph({"nodeagent": [], "nodeagent.p": [], **imports})
    assert len(package_cycles(graph)) == cycles
