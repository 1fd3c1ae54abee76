"""The 32 stream instances of the spread measurement (plan.md, 2026-12-06 03:13 UTC).

    python docs/results/learning/spread16/tasks/build.py RUN_DIR/rl_stream.jsonl

Pilots 14 and 15 drew 446 instances from the stream of the 16 templates after the 344 rows
`seed_stream.py` wrote first (bugs the stream skips). Pilot 14's SFT start saw none of them;
two of each template are taken here with seed 16, written with their seed paths relative
to this folder, as in the other committed task files.
"""

from __future__ import annotations

import json
import os
import random
import sys
from collections import defaultdict
from pathlib import Path

from shadowrl.tasks.task import load_tasks

HERE = Path(__file__).resolve().parent
SKIPPED = 344  # rows seed_stream.py wrote before RL drew anything
FAMILY = HERE.parents[4] / "src/shadowrl/data/suites/family"
PER_TEMPLATE = 2


def main(log: Path) -> None:
    drawn = load_tasks(log)[SKIPPED:]
    by_template = defaultdict(list)
    for task in drawn:
        by_template[task.repo].append(task)
    rng = random.Random(16)
    rows = []
    for repo in sorted(by_template):
        for task in rng.sample(by_template[repo], PER_TEMPLATE):
            row = task.model_dump(mode="json")
            row["seed"]["path"] = os.path.relpath(FAMILY, HERE)  # the run's checkout moved
            rows.append(row)
    (HERE / "stream32.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"{len(drawn)} stream draws, {len(by_template)} templates -> {len(rows)} tasks")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
