"""Dev pilot 18's RL, step by step across its sessions (plan.md, 10:21 UTC addendum): the
descriptive columns the plan names (KL to the start, importance ratio, clipped share) and
its stop-early rule, checked on the training pass rate of sampled groups.

    python docs/results/learning/pilot-dev18/progress.py [runs/pilot18/metrics.jsonl]

A resumed session re-runs the steps after the last saved checkpoint, so the metrics log
can hold a step more than once: the last row of each step is the one that stands (its
weights are the ones the run went on from). Stop early if the mean over any 10
consecutive steps falls under half of steps 1-10's mean.
"""

import json
import sys
from pathlib import Path

WINDOW = 10


def steps(path: Path) -> list[dict]:
    """The last row of each RL step, in step order."""
    last = {}
    for line in path.open():
        row = json.loads(line)
        if row.get("kind") == "rl":
            last[row["step"]] = row
    return [last[s] for s in sorted(last)]


def breaks(rates: list[float]) -> int | None:
    """The first step ending a window of WINDOW steps under half of steps 1-10's mean."""
    if len(rates) < 2 * WINDOW:
        return None
    floor = sum(rates[:WINDOW]) / WINDOW / 2
    for end in range(2 * WINDOW, len(rates) + 1):
        if sum(rates[end - WINDOW : end]) / WINDOW < floor:
            return end
    return None


def main(path: Path) -> None:
    rows = steps(path)
    print("| step | groups | sampled pass rate | KL | ratio max | clipped | staleness max |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['step']} | {r['groups']:.0f} | {r['pass_rate_sampled']:.2f} | {r['kl']:.4f} "
            f"| {r['ratio_max']:.2f} | {r['clip_frac']:.4f} | {r['staleness_max']} |"
        )
    rates = [r["pass_rate_sampled"] for r in rows]
    stop = breaks(rates)
    first = sum(rates[:WINDOW]) / min(WINDOW, len(rates)) if rates else float("nan")
    print(f"\nsteps {len(rows)}, groups {sum(r['groups'] for r in rows):.0f}; sampled pass rate")
    print(f"steps 1-{min(WINDOW, len(rows))}: {first:.3f}; stop-early rule: ", end="")
    print("not met" if stop is None else f"met at step {stop}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("runs/pilot18/metrics.jsonl"))
