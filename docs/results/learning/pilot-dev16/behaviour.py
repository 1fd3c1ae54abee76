"""Descriptive behaviour of pilot 16's step 18 against its start on the held-out suite
(README.md): the share of attempts that changed no code and the share that submitted,
per instance, RL − start with a 90 % paired bootstrap clustered by template (as
`../pilot-dev14/compare.py` does for the pass rate). Not pre-registered.

    python docs/results/learning/pilot-dev16/behaviour.py
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from shadowrl.eval.stats import paired_bootstrap

HERE = Path(__file__).parent
START = HERE.parent / "pilot-dev14/eval_sft.json"


def shares(path: Path, hit: Callable[[dict], bool]) -> dict[str, tuple[float, str]]:
    tasks = json.loads(path.read_text())["tasks"]
    return {
        t["instance_id"]: (sum(map(hit, t["samples"])) / len(t["samples"]), t["group"])
        for t in tasks
    }


if __name__ == "__main__":
    checks = {
        "no code change": lambda s: s["diff_lines"] == 0,
        "submitted": lambda s: s["end"] == "submitted",
    }
    for name, hit in checks.items():
        start, rl = shares(START, hit), shares(HERE / "eval_rl.json", hit)
        ids = sorted(start)
        b, c = [start[i][0] for i in ids], [rl[i][0] for i in ids]
        d = paired_bootstrap(c, b, alpha=0.05, clusters=[start[i][1] for i in ids])
        print(
            f"{name}: start {sum(b) / len(b):.3f}, step 18 {sum(c) / len(c):.3f}; "
            f"step 18 − start {d.mean:+.3f} [{d.low:+.3f}, {d.high:+.3f}]"
        )
