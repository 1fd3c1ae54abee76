"""Dev pilot 18's held-out set (plan.md, 2026-12-06 10:21 UTC addendum): `heldout57.jsonl`.

    python docs/results/learning/pilot-dev18/tasks/build.py   (from the repository root)

Up to 4 held-out-seed instances of each of the 15 templates of pilot 14's stream that have held-out
seeds, none of whose buggy modules is in an earlier pilot's task file (pilot 14's
`heldout45.jsonl` included, which three pilots have now been read on). Held-out seeds are
near-duplicate groups hashed away from the train part, so no demo or stream draw shares a
site and operator with them. Drawn as pilot 14's `instances` draws, under another key, and written by its `write`.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from shadowrl.tasks import build_env, env_python
from shadowrl.tasks.family.catalog import pick
from shadowrl.tasks.family.stream import bug_key
from shadowrl.tasks.family.suite import draw
from shadowrl.tasks.task import Task, load_tasks

HERE = Path(__file__).resolve().parent
L = HERE.parents[1]
PER_TEMPLATE = 4  # free_slots has one left: 57 in all


def pilot14():
    """Pilot 14's build module, loaded by path (the results folders are not a package)."""
    path = L / "pilot-dev14/tasks/build.py"
    spec = importlib.util.spec_from_file_location("build14", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def earlier(templates: list[str]) -> list[Task]:
    """Every task of any pilot's task files that belongs to one of `templates`."""
    names = {f"family/{t}" for t in templates}
    files = [p for p in L.glob("pilot-dev*/tasks/*.jsonl") if "pilot-dev18" not in str(p)]
    return [t for p in files for t in load_tasks(p) if t.repo in names]


def heldout(names: list[str], per: int, key: str, python: Path, used: set[str]) -> list[Task]:
    """Up to `per` held-out-seed instances of each template in `names` whose buggy module is
    not in `used` (which grows with each one drawn), drawn under `key`."""
    out: list[Task] = []
    for template in [t for t in pick("heldout-seeds", []) if t.id in names]:
        for j in range(per):
            try:
                inst = draw((template,), "heldout-seeds", j, key, 200, python, used, set())
            except RuntimeError:  # a template with few held-out bugs: what it has left
                break
            used.add(inst.bug_key)
            out.append(inst.task)
        print(template.id, len(out), flush=True)
    return out


def main() -> None:
    b14 = pilot14()
    python = env_python(build_env(("pytest",), Path("~/.cache/shadowrl").expanduser()))
    used = {bug_key(t) for t in earlier(b14.NEW)}
    out = heldout(b14.NEW, PER_TEMPLATE, "pilot18:heldout", python, used)
    b14.write(HERE / "heldout57.jsonl", [b14.relative(t, HERE) for t in out])


if __name__ == "__main__":
    main()
