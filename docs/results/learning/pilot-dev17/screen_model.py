"""What the screened pool of plan.md's 08:14 addendum would make, predicted before building it
from committed measurements (the 10:21 UTC addendum on 2026-12-06; nothing here ran RL).

    python docs/results/learning/pilot-dev17/screen_model.py

Each instance has a solve rate p; spread measurement 16 gives 32 stream instances' rates
at T 1.0 from 8 attempts each (plug-in k/8) and the eval's episodes an hour at concurrency
24. The RL loop's episodes an hour come from pilots 16 and 17 (two-try probes, and six more
attempts for every instance the probe solved once). Groups with an advantage an hour:

- probe (pilots 15-17): 2 attempts per instance, 6 more when either passed; an advantage
  when the 8 are not all passes.
- screen (plan.md 08:14): 4 attempts per instance at the eval's rate, then 8 fresh attempts
  in RL for each instance whose 4 were mixed; an advantage when those 8 are mixed.

The absolute rates carry the 32 instances' bias (they are easier than the stream: the
probe finds 0.26 of them solvable against the stream's 0.18-0.21); the ratio of the two
designs on the same instances is the prediction.
"""

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPREAD = HERE.parent / "spread16/eval_T1.0.json"


def loop_episodes_an_hour(ids: Path, solved: int, minutes: float) -> float:
    """Episodes a probe loop made: 2 per drawn instance, 6 more per instance it solved."""
    drawn = len(ids.read_text().splitlines())
    return (2 * drawn + 6 * solved) / (minutes / 60)


def probe_rate(ps: list[float], loop: float) -> float:
    episodes = sum(2 + 6 * (1 - (1 - p) ** 2) for p in ps)
    groups = sum((1 - (1 - p) ** 2) - p**8 for p in ps)  # extended and not all 8 passed
    return groups / (episodes / loop)


def screen_rate(ps: list[float], loop: float, screen: float) -> float:
    kept = [1 - p**4 - (1 - p) ** 4 for p in ps]
    hours = sum(4 / screen + k * 8 / loop for k in kept)
    groups = sum(k * (1 - p**8 - (1 - p) ** 8) for k, p in zip(kept, ps, strict=True))
    return groups / hours


if __name__ == "__main__":
    spread = json.loads(SPREAD.read_text())
    ps = [sum(s["resolved"] for s in t["samples"]) / len(t["samples"]) for t in spread["tasks"]]
    screen = sum(len(t["samples"]) for t in spread["tasks"]) / (spread["wall_s"] / 3600)
    loops = {  # drawn ids, instances solved in some attempt, minutes of RL (README.md files)
        "pilot 16": loop_episodes_an_hour(HERE.parent / "pilot-dev16/rl_stream_ids.txt", 48, 96),
        "pilot 17": loop_episodes_an_hour(HERE / "rl_stream_ids.txt", 37, 60),
    }
    print(f"{len(ps)} instances; screen (eval, T 1.0, concurrency 24): {screen:.0f} episodes/h")
    for name, loop in loops.items():
        a, b = probe_rate(ps, loop), screen_rate(ps, loop, screen)
        print(
            f"loop as {name} ({loop:.0f} episodes/h): probe {a:.1f} groups/h, "
            f"screen {b:.1f} groups/h, screen / probe {b / a:.2f}"
        )
