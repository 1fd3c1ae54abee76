"""Pilot 14's task files (plan.md, 2026-12-05 21:22 UTC): demos, held-out set, stream seed.

    python docs/results/learning/pilot-dev14/tasks/build.py   (from the repository root)

Everything lives in the 16 train templates added on 2026-12-05 (`NEW`), where RL can
still draw fresh bugs:
- `sft320.jsonl`: 20 fresh train-part instances of each, whose bug no earlier pilot's task
  file holds, shuffled with seed 14 (SFT takes demos in file order);
- `heldout45.jsonl`: 3 held-out-seed instances of each of the 15 that have held-out seeds
  (`text_table` has none): near-duplicate groups hashed away from training, so no demo or
  stream draw shares a site and operator with them;
- `stream_used.jsonl`: every earlier task of these templates plus the 320 demos; copied to
  the run's `rl_stream.jsonl` before RL, it makes the stream skip those bugs.
Seed paths are written relative to this folder, as in the other committed task files.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from shadowrl.tasks import build_env, env_python
from shadowrl.tasks.family.catalog import pick
from shadowrl.tasks.family.stream import bug_key
from shadowrl.tasks.family.suite import draw
from shadowrl.tasks.task import Task, load_tasks

HERE = Path(__file__).resolve().parent
L = HERE.parents[1]
NEW = [
    "bank_ledger", "board_moves", "config_merge", "free_slots", "leaderboard", "lift_order",
    "loyalty_points", "parking_fees", "recipe_scaling", "rectangles", "recurring_times",
    "reorder_point", "retry_backoff", "room_bookings", "silent_auction", "text_table",
]  # fmt: skip
PER_TEMPLATE = {"train": 20, "heldout-seeds": 3}


def relative(task: Task, base: Path = HERE) -> dict:
    """`load_tasks` resolves seed paths; the committed file keeps them relative to its folder."""
    row = task.model_dump(mode="json")
    if (row.get("seed") or {}).get("path"):
        row["seed"]["path"] = os.path.relpath(row["seed"]["path"], base)
    return row


def write(path: Path, rows: list[dict]) -> None:
    with path.open("w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


def earlier() -> list[Task]:
    """Every task of an earlier pilot's files that belongs to one of the new templates."""
    names = {f"family/{t}" for t in NEW}
    files = [p for p in L.glob("pilot-dev*/tasks/*.jsonl") if "pilot-dev14" not in str(p)]
    return [t for p in files for t in load_tasks(p) if t.repo in names]


def instances(part, python, used: set[str]) -> list[Task]:
    """`PER_TEMPLATE[part]` fresh instances of each new template of `part`, in turn."""
    out: list[Task] = []
    for template in [t for t in pick(part, []) if t.id in NEW]:
        for j in range(PER_TEMPLATE[part]):
            inst = draw((template,), part, j, f"pilot14:{part}", 200, python, used, set())
            used.add(inst.bug_key)
            out.append(inst.task)
        print(part, template.id, len(out), flush=True)
    return out


def main() -> None:
    python = env_python(build_env(("pytest",), Path("~/.cache/shadowrl").expanduser()))
    before = earlier()
    used = {bug_key(t) for t in before}
    if (HERE / "sft320.jsonl").exists():  # drawn once: a rerun only completes the rest
        drawn = load_tasks(HERE / "sft320.jsonl")
        used |= {bug_key(t) for t in drawn}
        demos = [relative(t) for t in drawn]
    else:
        demos = [relative(t) for t in instances("train", python, used)]
        random.Random(14).shuffle(demos)
        write(HERE / "sft320.jsonl", demos)
    write(HERE / "heldout45.jsonl", [relative(t) for t in instances("heldout-seeds", python, used)])
    write(HERE / "stream_used.jsonl", [relative(t) for t in before] + demos)
    print(f"{len(before)} earlier tasks of these templates excluded", flush=True)


if __name__ == "__main__":
    main()
