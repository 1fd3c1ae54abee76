"""The confirmatory look's held-out set (plan.md, 2026-12-07 04:44 UTC addendum): `heldout_more.jsonl`.

    PYTHONPATH=src python docs/results/learning/pilot-dev23/tasks/build.py   (from the repository root)

Up to `PER_TEMPLATE` fresh held-out-seed instances of each of the templates `heldout57` was
drawn from, none of whose buggy modules (`bug_key`) is in any pilot's task file
(`heldout57.jsonl` included), drawn by pilot 18's `heldout` under another key. Held-out
seeds are near-duplicate groups (template, site, operator) hashed away from the train part,
so no demonstration or RL stream draw shares a site and operator with them.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from shadowrl.tasks import build_env, env_python
from shadowrl.tasks.family.stream import bug_key
from shadowrl.tasks.task import load_tasks

HERE = Path(__file__).resolve().parent
L = HERE.parents[1]
PER_TEMPLATE = 16  # up to 240; the templates had 187 unseen held-out bugs


def pilot18():
    """Pilot 18's build module, loaded by path (the results folders are not a package)."""
    spec = importlib.util.spec_from_file_location("build18", L / "pilot-dev18/tasks/build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    b18 = pilot18()
    b14 = b18.pilot14()
    python = env_python(build_env(("pytest",), Path("~/.cache/shadowrl").expanduser()))
    files = [p for p in L.glob("pilot-dev*/tasks/*.jsonl") if "pilot-dev23" not in str(p)]
    used = {bug_key(t) for p in files for t in load_tasks(p)}
    out = b18.heldout(b14.NEW, PER_TEMPLATE, "pilot23:heldout", python, used)
    b14.write(HERE / "heldout_more.jsonl", [b14.relative(t, HERE) for t in out])


if __name__ == "__main__":
    main()
