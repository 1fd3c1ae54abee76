"""Seed pilot 14's stream log with every bug it must skip (plan.md, pilot 14's addendum).

    python docs/results/learning/pilot-dev14/seed_stream.py [LOG]   (from the repository root)

`FamilyStream` reads its log back as what it already drew, so writing the earlier tasks of
the 16 templates and the 320 demos there first keeps them out of RL. The log then starts
with those 344 rows; RL's own draws follow them. LOG (default pilot 14's) is the stream log
of the run to seed: later pilots from the same start seed their own the same way.
"""

import json
import sys
from pathlib import Path

from shadowrl.tasks.task import load_tasks

HERE = Path(__file__).resolve().parent
LOG = Path("runs/pilot14/rl_stream.jsonl")

if __name__ == "__main__":
    LOG = Path(sys.argv[1]) if len(sys.argv) > 1 else LOG
    if LOG.exists():
        raise SystemExit(f"{LOG} exists: the stream has begun")
    LOG.parent.mkdir(parents=True, exist_ok=True)
    rows = load_tasks(HERE / "tasks/stream_used.jsonl")  # seed paths resolved
    LOG.write_text("".join(json.dumps(t.model_dump(mode="json")) + "\n" for t in rows))
    print(f"{len(rows)} tasks the stream skips -> {LOG}")
