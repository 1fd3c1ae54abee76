"""Pilot 14's look (plan.md, 2026-12-05 21:22 UTC), from the committed eval files.

    python docs/results/learning/pilot-dev14/compare.py [RL_EVAL_JSON [START_JSON [TASKS_JSONL]]]

Per instance, a policy's rate is its share of 8 resolved attempts on the 45 held-out-seed
instances of `tasks/heldout45.jsonl`; the difference is RL − its SFT start, 90 % paired
bootstrap clustered by template (`shadowrl.eval.stats.paired_bootstrap`, alpha 0.05 a side).
START_JSON (default: `eval_sft.json`) compares against another eval of the same suite
(pilot 15 compares its last step with pilot 14's step 8); TASKS_JSONL (default:
`tasks/heldout45.jsonl`) names the instances and their order for another held-out set
(pilots 18 and 19: `../pilot-dev18/tasks/heldout57.jsonl`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from shadowrl.eval.stats import paired_bootstrap

HERE = Path(__file__).parent
START = HERE / "eval_sft.json"
TASKS = HERE / "tasks/heldout45.jsonl"


def rates(path: Path) -> dict[str, tuple[float, str]]:
    tasks = json.loads(path.read_text())["tasks"]
    return {
        t["instance_id"]: (sum(s["resolved"] for s in t["samples"]) / len(t["samples"]), t["group"])
        for t in tasks
    }


def main(rl: Path, start_path: Path = START, tasks: Path = TASKS) -> None:
    order = [json.loads(line)["instance_id"] for line in tasks.open()]
    start, cand = rates(start_path), rates(rl)
    b, c = [start[i][0] for i in order], [cand[i][0] for i in order]
    d = paired_bootstrap(c, b, alpha=0.05, clusters=[start[i][1] for i in order])
    verdict = "better" if d.low > 0 else "worse" if d.high < 0 else "not distinguishable"
    print(
        f"{len(order)} held-out seeds x 8: start {sum(b) / len(b):.3f}, RL {sum(c) / len(c):.3f}; "
        f"RL - start {d.mean:+.3f} [{d.low:+.3f}, {d.high:+.3f}]: {verdict}"
    )
    # Descriptive, not tested: an instance with mixed outcomes is a group of 8 with an advantage.
    for name, r in (("start", start), ("RL", cand)):
        mixed = sum(0 < r[i][0] < 1 for i in order)
        solved = sum(r[i][0] > 0 for i in order)
        print(
            f"{name}: {mixed} of {len(order)} instances mixed in 8 attempts, {solved} solved at least once"
        )


if __name__ == "__main__":
    args = [Path(a) for a in sys.argv[1:4]]
    main(*(args or [HERE / "eval_rl.json"]))
