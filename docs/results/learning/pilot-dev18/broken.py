"""Has the policy broken? The stop rule a stream run with `informative_only` can apply
(plan.md, 2026-12-06 14:00 and 14:02 UTC addenda): a policy that solves nothing makes no
step, so a rule over steps never fires; this one counts the stream instances drawn after
the last one any attempt solved.

    python docs/results/learning/pilot-dev18/broken.py RUN_DIR [N]

Prints that count and exits 0 when it is at least N (default 60: at pilot 18's solve
rate before its break, 0.18 of instances, 60 unsolved in a row has probability 7e-6),
1 otherwise. The stream log's first rows are the seeded skips (`seed_stream.py`, one per
row of its task file); they never count as drawn.
"""

import json
import sys
from pathlib import Path

# What pilot 14's seed_stream.py writes first into a stream log: skips, never drawn.
SEEDED = Path(__file__).parents[1] / "pilot-dev14/tasks/stream_used.jsonl"


def unsolved_since_last_solved(run: Path) -> int:
    ids = [json.loads(line)["instance_id"] for line in (run / "rl_stream.jsonl").open()]
    drawn = ids[sum(1 for _ in SEEDED.open()) :]
    successes = run / "successes.jsonl"
    solved = (
        {json.loads(line)["task_id"] for line in successes.open()} if successes.exists() else set()
    )
    last = max((i for i, task in enumerate(drawn) if task in solved), default=-1)
    return len(drawn) - 1 - last


if __name__ == "__main__":
    run, n = Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 60
    count = unsolved_since_last_solved(run)
    print(count)
    sys.exit(0 if count >= n else 1)
