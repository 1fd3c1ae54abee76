"""Dev pilot 24's power calculation (plan.md, 2026-12-07 10:37 UTC addendum), from committed evals.

    PYTHONPATH=src python docs/results/learning/pilot-dev24/power.py

Pilot 22's model (`pilot-dev22/power.py`), with pilot 22's look added to the looks its
variance components come from, and 4 attempts per instance instead of 8: each instance's
binomial noise, estimated from the 8-attempt looks as mean p(1 - p) / 8 over the start's
and every look's instances, is added once more (4 attempts carry twice the 8's).
"""

import importlib.util
import json
from collections import Counter
from pathlib import Path

L = Path(__file__).resolve().parent.parent
LOOKS = {18: "eval_rl_step10.json", 19: "eval_rl_step12.json", 20: "eval_rl_step12.json",
         21: "eval_rl_step8.json", 22: "eval_rl_step10.json"}  # fmt: skip


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    p22 = _load("power22", L / "pilot-dev22/power.py")
    power18 = _load("power18", L / "pilot-dev18/power.py")
    components = power18.components
    start = L / "pilot-dev18/eval_start57.json"
    sizes = Counter(json.loads(r)["repo"] for r in (L / "pilot-dev18/tasks/heldout57.jsonl").open())
    est = {n: components(L / f"pilot-dev{n}" / f, start) for n, f in LOOKS.items()}
    for n, (tau2, w) in est.items():
        print(f"pilot {n}: tau^2 {tau2:.4f}, w {w:.4f}, SE {p22.clustered_se(tau2, w, sizes):.4f}")
    rates = [p for p, _ in power18.rates(L / "pilot-dev22" / LOOKS[22]).values()]
    binom8 = sum(p * (1 - p) / 8 for p in rates) / len(rates)
    for label, (tau2, w) in {"largest": (max(t for t, _ in est.values()), max(v for _, v in est.values())),
                             "middle tau^2 (pilot 18's look)": sorted(est.values())[2]}.items():  # fmt: skip
        se = p22.clustered_se(tau2, w + binom8, sizes)
        print(f"{label}: tau^2 {tau2:.4f}, w {w:.4f} + {binom8:.4f} (4 attempts): SE {se:.4f}, "
              f"detected with power 0.8: {(p22.Z90 + 0.842) * se:.3f}, "
              + ", ".join(f"power at +{e:.2f}: {p22.power(e, se):.2f}" for e in (0.05, 0.10, 0.15)))
