"""Pilot 13's task files (plan.md, 2026-12-05 16:10 UTC): the SFT demos and the measurement set.

    python docs/results/learning/pilot-dev13/tasks/build.py   (from the repository root)

- `sft715.jsonl`: pilot 8's 320 demos and pilot 12's 395 together, shuffled with seed 13
  (SFT takes demos in file order). Both files give seed paths relative to this folder.
- `eval48.jsonl`: one train-part instance of each of the family's 48 train templates: the 24
  of `../../pilot-dev10/tasks/train24.jsonl`, then one fresh instance of each other train
  template, whose bug no pilot's task file holds and whose site and operator no demo has.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from shadowrl.tasks import build_env, env_python
from shadowrl.tasks.family.catalog import templates
from shadowrl.tasks.family.generate import Instance
from shadowrl.tasks.family.stream import bug_key
from shadowrl.tasks.family.suite import draw
from shadowrl.tasks.task import Task, load_tasks

HERE = Path(__file__).resolve().parent
L = HERE.parents[1]


def relative(task: Task) -> dict:
    """`load_tasks` resolves seed paths; the committed file keeps them relative to it."""
    row = task.model_dump(mode="json")
    if (row.get("seed") or {}).get("path"):
        row["seed"]["path"] = os.path.relpath(row["seed"]["path"], HERE)
    return row


def write(path: Path, rows: list[dict]) -> None:
    with path.open("w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


def demos() -> list[Task]:
    five_c, twelve = L / "pilot-dev5c/tasks", L / "pilot-dev12/tasks"
    rows = [relative(t) for t in load_tasks(five_c / "train.jsonl")[:320]]
    rows += [relative(t) for t in load_tasks(twelve / "sft395.jsonl")]
    random.Random(13).shuffle(rows)
    write(HERE / "sft715.jsonl", rows)
    return [Task.model_validate(r) for r in rows]


def fresh(template, k, python, used, sites, spent) -> Instance | None:
    """A bug of `template` no pilot used, at a site and operator no demo has (or None:
    the template is spent; 60 tries a draw, as its bugs are nearly all used)."""
    for j in range(20):
        try:
            inst = draw((template,), "train", k, f"pilot13:eval:{j}", 60, python, used, spent)
        except RuntimeError:
            print("spent:", template.id, flush=True)
            return None
        used.add(inst.bug_key)
        if inst.task.source not in sites:
            return inst
    return None


def measurement(sft: list[Task]) -> None:
    train24 = load_tasks(L / "pilot-dev10/tasks/train24.jsonl")
    used = {bug_key(t) for p in L.glob("pilot-dev*/tasks/*.jsonl") for t in load_tasks(p)}
    sites = {t.source for t in sft}
    have = {t.repo for t in train24}
    python = env_python(build_env(("pytest",), Path("~/.cache/shadowrl").expanduser()))
    rows = [relative(t) for t in train24]
    others = [t for t in templates("train") if f"family/{t.id}" not in have]
    spent: set[str] = set()
    k = 0
    while len(rows) < 48:  # one per other template, then round-robin over those with bugs left
        live = [t for t in others if t.id not in spent]
        template = live[k % len(live)]
        inst = fresh(template, k, python, used, sites, spent)
        k += 1
        if inst is not None:
            rows.append(relative(inst.task))
            print(len(rows), template.id, inst.task.instance_id, flush=True)
    write(HERE / "eval48.jsonl", rows)


if __name__ == "__main__":
    measurement(demos())
