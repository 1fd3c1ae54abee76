"""No module of shadowrl imports itself back, however indirectly.

Every import statement counts: module level, inside a function and under
`TYPE_CHECKING`. A cycle closed by an import moved into a function is still a cycle
(each module still needs the other); it only moves the failure from import time to call
time. The `acyclic_siblings` contract of `lint-imports` sees cycles between siblings; this
test also sees a package's `__init__` and one of its own modules importing each other,
and it runs with the tests, printing each cycle with the lines that close it.

It fails on the commit before 3cc5145 (the four circles issue 31 names, e.g.
`shadowrl.inference.forward -> shadowrl.inference.kv -> shadowrl.inference.forward`).
"""

from __future__ import annotations

import itertools

import grimp


def _cycles(graph: grimp.ImportGraph) -> list[tuple[str, ...]]:
    """One shortest cycle through each import that lies on a cycle, without repeats."""
    found: dict[frozenset[str], tuple[str, ...]] = {}
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                found.setdefault(frozenset(back), (importer, *back))
    return sorted(found.values())


def _describe(graph: grimp.ImportGraph, cycle: tuple[str, ...]) -> str:
    lines = [" -> ".join(cycle)]
    for importer, imported in itertools.pairwise(cycle):
        for d in graph.get_import_details(importer=importer, imported=imported):
            lines.append(f"    {importer}:{d['line_number']}: {d['line_contents']}")
    return "\n".join(lines)


def test_no_import_cycles_among_modules() -> None:
    graph = grimp.build_graph("shadowrl", cache_dir=None)
    cycles = _cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(_describe(graph, c) for c in cycles)


def test_the_check_sees_a_cycle() -> None:
    """The detector itself, on a graph with one known cycle (a -> b -> c -> a) and a tail."""
    graph = grimp.ImportGraph()
    for importer, imported in [("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")]:
        graph.add_import(importer=importer, imported=imported)
    assert _cycles(graph) == [("p.a", "p.b", "p.c", "p.a")]
