"""Dev pilot 26's look (plan.md, 2026-12-07 23:20 UTC addendum), from the committed eval files.

    PYTHONPATH=src python docs/results/learning/pilot-dev26/look.py

Every eval is a `shadowrl eval` file on pilot 23's 187 fresh held-out instances
(`../pilot-dev23/tasks/heldout_more.jsonl`), 2 attempts each at T 0.6, on pilot 21's fp32
engine path: pilot 14's SFT start, pilots 21, 22 and 25 (their looks) and pilot 26's look
checkpoint (`eval_fresh.json`). Per instance a policy's rate is its share of resolved
attempts; each difference is averaged over instances with a 90 % paired bootstrap clustered by
template (`shadowrl.eval.stats.paired_bootstrap`, alpha 0.05 a side). Primary (the only
test): pilot 26 - start, better if the interval lies above 0, worse if below. Descriptive:
pilot 26 - pilot 25 (the same design with the fp32 trainer and KL, fewer steps) and pilot 26
- the mean of pilots 21, 22 and 25.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from shadowrl.eval.stats import paired_bootstrap

HERE = Path(__file__).resolve().parent
P23 = HERE.parent / "pilot-dev23"
TASKS = P23 / "tasks/heldout_more.jsonl"
EVALS = {
    "start": P23 / "eval_start.json",
    "p21": P23 / "eval_p21_step8.json",
    "p22": P23 / "eval_p22_step10.json",
    "p25": HERE.parent / "pilot-dev25/eval_fresh.json",
    "p26": HERE / "eval_fresh.json",
}


def _look23():
    """Pilot 23's `look.py` (its `rates` and `line`), loaded by path: results are no package."""
    spec = importlib.util.spec_from_file_location("look23", P23 / "look.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    look23 = _look23()
    rows = [json.loads(r) for r in TASKS.open()]
    order, clusters = [r["instance_id"] for r in rows], [r["repo"] for r in rows]
    rate = {}
    for name, path in EVALS.items():
        r = look23.rates(path)
        missing = set(order) - r.keys()
        if missing:
            raise SystemExit(f"{name} lacks {len(missing)} instances, e.g. {sorted(missing)[0]}")
        rate[name] = [r[i][0] for i in order]
        solved = sum(x > 0 for x in rate[name])
        print(f"{name}: {solved} of {len(order)} solved at least once ({path.name})")
    p26 = rate["p26"]
    print(f"{len(order)} instances, {len(set(clusters))} templates")
    print("PRIMARY " + look23.line("pilot 26 (cheap trainer)", p26, rate["start"], clusters))
    d = paired_bootstrap(p26, rate["p25"], alpha=0.05, clusters=clusters)
    print(f"descriptive: pilot 26 - pilot 25 {d.mean:+.3f} [{d.low:+.3f}, {d.high:+.3f}]")
    three = [sum(x) / 3 for x in zip(rate["p21"], rate["p22"], rate["p25"], strict=True)]
    d = paired_bootstrap(p26, three, alpha=0.05, clusters=clusters)
    print(
        f"descriptive: pilot 26 - mean of pilots 21, 22, 25 {d.mean:+.3f} [{d.low:+.3f}, {d.high:+.3f}]"
    )


if __name__ == "__main__":
    main()
