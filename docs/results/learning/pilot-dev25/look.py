"""Dev pilot 25's look (plan.md, 2026-12-07 20:16 UTC addendum), from the committed eval files.

    PYTHONPATH=src python docs/results/learning/pilot-dev25/look.py

All four evals are `shadowrl eval` files on pilot 23's 187 fresh held-out instances
(`../pilot-dev23/tasks/heldout_more.jsonl`), 2 attempts each at T 0.6, on pilot 21's fp32
engine path: pilot 14's SFT start, pilot 21's step 8 and pilot 22's step 10 (pilot 23's
files) and pilot 25's look checkpoint (`eval_fresh.json`). Per instance a policy's rate is
its share of resolved attempts; each difference is averaged over instances with a 90 % paired
bootstrap clustered by template (`shadowrl.eval.stats.paired_bootstrap`, alpha 0.05 a side).
Primary (the only test): pilot 25 - start, better if the interval lies above 0, worse if
below. Secondary (issue 34's criterion, descriptive: other seeds and step counts): pilot 25
- the mean of pilots 21 and 22, the fp32-rollout runs of the same design; "did not suffer"
when its lower end is above -0.05. Pooled, descriptive: the mean of the three runs - start.
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
    "p25": HERE / "eval_fresh.json",
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
    start, p25 = rate["start"], rate["p25"]
    fp32 = [(a + b) / 2 for a, b in zip(rate["p21"], rate["p22"], strict=True)]
    print(f"{len(order)} instances, {len(set(clusters))} templates")
    print("PRIMARY " + look23.line("pilot 25 (bf16 rollouts)", p25, start, clusters))
    d = paired_bootstrap(p25, fp32, alpha=0.05, clusters=clusters)
    verdict = "did not suffer" if d.low > -0.05 else "cannot say it did not suffer"
    print(
        f"secondary: pilot 25 - mean of pilots 21 and 22 (fp32 rollouts) {d.mean:+.3f} "
        f"[{d.low:+.3f}, {d.high:+.3f}]: {verdict} (lower end vs -0.05)"
    )
    three = [(a + b + c) / 3 for a, b, c in zip(rate["p21"], rate["p22"], p25, strict=True)]
    print(look23.line("pooled: mean of pilots 21, 22 and 25 (descriptive)", three, start, clusters))


if __name__ == "__main__":
    main()
