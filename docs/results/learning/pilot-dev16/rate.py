"""Readout (1) of dev pilot 16 (plan.md, 06:13 UTC addendum): groups with an advantage
trained per hour of RL, for this run and, measured the same way, pilots 14 and 15.

    python docs/results/learning/pilot-dev16/rate.py [metrics.jsonl of pilot 16]

An hour of RL runs from the stream's first `rl_data` row (RL's start or resume) to the
last step's row, so a step cut off by the time box counts in neither groups nor time.
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def rate(path: Path) -> dict:
    rows = [json.loads(line) for line in path.open()]
    start = next(r["time"] for r in rows if r.get("kind") == "rl_data")
    steps = [r for r in rows if r.get("kind") == "rl"]
    hours = (steps[-1]["time"] - start) / 3600
    groups = sum(r["groups"] for r in steps)
    return {
        "steps": len(steps),
        "groups": int(groups),
        "minutes": round(hours * 60, 1),
        "groups_per_hour": round(groups / hours, 1),
        "set_aside": steps[-1]["groups_set_aside"],  # a running count since (re)start
        "kl_max": round(max(r["kl"] for r in steps), 4),
        "ratio_max": round(max(r["ratio_max"] for r in steps), 2),
        "clip_frac_max": max(r["clip_frac"] for r in steps),
        "staleness_max": max(r["staleness_max"] for r in steps),
    }


if __name__ == "__main__":
    mine = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "rl_metrics.jsonl"
    runs = {
        "pilot 14 (T 0.6)": HERE.parent / "pilot-dev14/rl_metrics.jsonl",
        "pilot 15 (T 0.6, probe 2)": HERE.parent / "pilot-dev15/rl_metrics.jsonl",
        "pilot 16 (T 1.0, probe 2)": mine,
    }
    out = {name: rate(p) for name, p in runs.items() if p.exists()}
    for name, r in out.items():
        print(f"{name}: {r}")
    if len(out) == 3:
        a, b = out["pilot 16 (T 1.0, probe 2)"], out["pilot 15 (T 0.6, probe 2)"]
        print(
            f"pilot 16 / pilot 15 groups an hour: {a['groups_per_hour'] / b['groups_per_hour']:.2f}"
        )
