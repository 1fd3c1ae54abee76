"""Dev pilot 22's power calculation (plan.md, 2026-12-07 01:05 UTC addendum), from committed evals.

    PYTHONPATH=src python docs/results/learning/pilot-dev22/power.py

Pilot 18's model of the readout (`pilot-dev18/power.py`): the mean over templates of each
template's mean per-instance pass-rate difference (RL - start), clustered by template, with
variance (1/C^2) sum_c (tau^2 + w / m_c). Here tau^2 and w are estimated from the four
looks already taken on `heldout57` itself (pilots 18-21 against `eval_start57.json`); w from
the templates holding two or more instances. The largest of each is kept.
"""

import importlib.util
import json
import statistics
from collections import Counter
from pathlib import Path

L = Path(__file__).resolve().parent.parent
Z90 = 1.645
LOOKS = {18: "eval_rl_step10.json", 19: "eval_rl_step12.json", 20: "eval_rl_step12.json"}
LOOKS[21] = "eval_rl_step8.json"


def _rates(path: Path) -> dict[str, tuple[float, str]]:
    spec = importlib.util.spec_from_file_location("compare14", L / "pilot-dev14/compare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.rates(path)


def components(rl: Path, start: Path) -> tuple[float, float]:
    """(tau^2, w) of RL - start by the method of moments over templates."""
    a, b = _rates(rl), _rates(start)
    by: dict[str, list[float]] = {}
    for i, (p, group) in b.items():
        by.setdefault(group, []).append(a[i][0] - p)
    w = statistics.mean(statistics.variance(v) for v in by.values() if len(v) > 1)
    m = statistics.mean(len(v) for v in by.values())
    between = statistics.variance([statistics.mean(v) for v in by.values()])
    return max(between - w / m, 0.0), w


def power(effect: float, se: float) -> float:
    """One-sided power of 'the 90 % interval lies above 0' for a true `effect`."""
    return 1 - statistics.NormalDist().cdf(Z90 - effect / se)


if __name__ == "__main__":
    start = L / "pilot-dev18/eval_start57.json"
    sizes = Counter(json.loads(r)["repo"] for r in (L / "pilot-dev18/tasks/heldout57.jsonl").open())
    c = len(sizes)
    est = {n: components(L / f"pilot-dev{n}" / f, start) for n, f in LOOKS.items()}
    for n, (tau2, w) in est.items():
        se = (sum(tau2 + w / m for m in sizes.values()) / c**2) ** 0.5
        print(f"pilot {n}: tau^2 {tau2:.4f}, w {w:.4f}, SE {se:.4f}")
    tau2, w = max(t for t, _ in est.values()), max(v for _, v in est.values())
    se = (sum(tau2 + w / m for m in sizes.values()) / c**2) ** 0.5
    print(f"heldout57: {c} templates, {sum(sizes.values())} instances, 8 attempts each")
    print(f"kept tau^2 {tau2:.4f}, w {w:.4f}: SE {se:.4f}")
    print(f"smallest effect detected with power 0.8: {(Z90 + 0.842) * se:.3f}")
    for effect in (0.024, 0.04, 0.05, 0.075):
        print(f"power at a true +{effect:.3f}: {power(effect, se):.2f}")
