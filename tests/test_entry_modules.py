"""Outside its package, a package is reached only through its entry modules.

`ENTRY` lists, for each package of shadowrl, the modules code elsewhere in shadowrl may
import (a module inside a subpackage counts as that subpackage); every other module of
the package is private to it. A package's `config` module is public everywhere, since the
command's config tree composes them. A new module is private by default: to import it
from outside, name it here (the review then sees the surface grow). Tests may import
anything.

The seven capabilities a newcomer looks for each have one entry, named in the README:
the loop (`agent/__init__.py`; the loop itself is `agent/loop.py`), the loss (`rl/loss.py`, the trainer's own), the sandbox
(`sandbox/__init__.py`, the package's only entry), the grader (`tasks/verify.py`), the
gate (`eval/gate.py`), serving (`serve/app.py`) and the real-time cycle
(`realtime/__init__.py`; the cycle itself is `realtime/cycle.py`). Packages whose modules
import torch re-export lazily (`shadowrl/lazy.py`, `tests/test_lazy.py`). The other entries below are what the packages still share with
each other; the list only shrinks.
"""

from __future__ import annotations

import grimp

ENTRY: dict[str, frozenset[str]] = {
    "commands": frozenset(),  # the top: the console script is its entry; nothing imports it
    "agent": frozenset({"summary"}),  # optional: never imported while it is off
    "eval": frozenset({"gate", "stats"}),  # the one decision rule, the one statistics module
    "experiments": frozenset(),
    "inference": frozenset(),
    "pipeline": frozenset(),
    "realtime": frozenset(),
    "replay": frozenset({"record"}),
    "rl": frozenset({"cluster"}),  # the Ray services, a capability of their own
    "sandbox": frozenset(),
    "search": frozenset(),
    "serve": frozenset({"app", "store", "workspaces"}),
    # prepare, verify, versions: modules named as what they export (a `from shadowrl.tasks
    # import verify` names the module too); family and reference: capabilities of their own
    "tasks": frozenset({"family", "prepare", "reference", "verify", "versions"}),
}
ALWAYS = frozenset({"__init__", "config"})


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph("shadowrl", cache_dir=None)


def _unit(module: str) -> tuple[str, str] | None:
    """(package, its module or subpackage) of a module inside a package, else None."""
    parts = module.split(".")
    if len(parts) < 2 or parts[1] not in ENTRY:
        return None
    return parts[1], parts[2] if len(parts) > 2 else "__init__"


def _reaches(graph: grimp.ImportGraph) -> dict[tuple[str, str], list[str]]:
    """(package, module) -> the outside importers, for every module imported from outside."""
    found: dict[tuple[str, str], list[str]] = {}
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            unit = _unit(imported)
            if unit is None or importer.split(".")[1:2] == [unit[0]]:
                continue
            found.setdefault(unit, []).append(importer)
    return found


def test_every_package_is_listed() -> None:
    packages = {m.split(".")[1] for m in _graph().modules if m.count(".") >= 2}
    assert packages - {"data"} == set(ENTRY), "a new package needs its entries in ENTRY"


def test_nothing_outside_a_package_imports_its_private_modules() -> None:
    graph = _graph()
    bad = []
    for (package, module), importers in _reaches(graph).items():
        if module in ALWAYS | ENTRY[package]:
            continue
        for importer in importers:
            imported = f"shadowrl.{package}" + ("" if module == "__init__" else f".{module}")
            targets = [m for m in graph.modules if m == imported or m.startswith(imported + ".")]
            lines = [
                f"{importer}:{d['line_number']}: {d['line_contents']}"
                for target in targets
                for d in graph.get_import_details(importer=importer, imported=target)
            ]
            bad.extend(lines)
    assert not bad, "imports of private modules (import the entry, or add one to ENTRY):\n" + (
        "\n".join(bad)
    )


def test_every_entry_is_imported_from_outside() -> None:
    """An entry nothing outside uses is private again: the list only names live surface."""
    reached = _reaches(_graph())
    unused = sorted(f"{p}.{m}" for p, mods in ENTRY.items() for m in mods if (p, m) not in reached)
    assert not unused, f"entries no module outside their package imports: {unused}"
