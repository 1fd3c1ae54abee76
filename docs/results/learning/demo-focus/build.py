"""The demo-focus probe's task files, filtered from dev pilot 14's (run from the repo root).

    python docs/results/learning/demo-focus/build.py

`tasks/sft32.jsonl`: the first 8 demos of each of four templates in pilot 14's
`sft320.jsonl` order; `tasks/held12.jsonl`: pilot 14's 3 held-out-seed instances of each.
Seed paths are written relative to `tasks/`, as in the other committed task files.
"""

import json
import os
from pathlib import Path

from shadowrl.tasks.task import Task, load_tasks

HERE = Path(__file__).resolve().parent
PILOT14 = HERE.parent / "pilot-dev14" / "tasks"
KEEP = ("reorder_point", "recurring_times", "recipe_scaling", "bank_ledger")
PER_TEMPLATE = 8


def write(tasks: list[Task], path: Path) -> None:
    rows = []
    for task in tasks:
        row = task.model_dump(mode="json")
        if (row.get("seed") or {}).get("path"):
            row["seed"]["path"] = os.path.relpath(row["seed"]["path"], path.parent)
        rows.append(json.dumps(row) + "\n")
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(rows))


def main() -> None:
    ours = [t for t in load_tasks(PILOT14 / "sft320.jsonl") if t.repo.split("/")[1] in KEEP]
    demos = [t for t in ours if sum(o.repo == t.repo for o in ours[: ours.index(t)]) < PER_TEMPLATE]
    held = [t for t in load_tasks(PILOT14 / "heldout45.jsonl") if t.repo.split("/")[1] in KEEP]
    write(demos, HERE / "tasks" / "sft32.jsonl")
    write(held, HERE / "tasks" / "held12.jsonl")
    print(len(demos), "demos,", len(held), "held-out instances")


if __name__ == "__main__":
    main()
