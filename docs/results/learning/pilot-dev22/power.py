"""Dev pilot 22's power calculation (plan.md, 2026-12-07 01:05 UTC addendum), from committed evals.

    PYTHONPATH=src python docs/results/learning/pilot-dev22/power.py

Pilot 18's model of the readout (`pilot-dev18/power.py`): the mean over templates of each
template's mean per-instance pass-rate difference (RL - start), clustered by template, with
variance (1/C^2) sum_c (tau^2 + w / m_c). Here tau^2 and w are estimated from the four
looks already taken on `heldout57` itself (pilots 18-21 against `eval_start57.json`) by
`pilot-dev18/power.py`'s `components` (w from the templates holding two or more
instances). The largest of each is kept.
"""

import importlib.util
import json
import statistics
from collections import Counter
from pathlib import Path

L = Path(__file__).resolve().parent.parent
Z90 = 1.645
LOOKS = {
    18: "eval_rl_step10.json",
    19: "eval_rl_step12.json",
    20: "eval_rl_step12.json",
    21: "eval_rl_step8.json",
}


def _power18():
    """Pilot 18's power module, loaded by path (the results folders are not a package)."""
    spec = importlib.util.spec_from_file_location("power18", L / "pilot-dev18/power.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def clustered_se(tau2: float, w: float, sizes: Counter[str]) -> float:
    """SE of the template-clustered mean difference, templates of `sizes` instances each."""
    return (sum(tau2 + w / m for m in sizes.values()) / len(sizes) ** 2) ** 0.5


def power(effect: float, se: float) -> float:
    """One-sided power of 'the 90 % interval lies above 0' for a true `effect`."""
    return 1 - statistics.NormalDist().cdf(Z90 - effect / se)


if __name__ == "__main__":
    start = L / "pilot-dev18/eval_start57.json"
    sizes = Counter(json.loads(r)["repo"] for r in (L / "pilot-dev18/tasks/heldout57.jsonl").open())
    components = _power18().components
    est = {n: components(L / f"pilot-dev{n}" / f, start) for n, f in LOOKS.items()}
    for n, (tau2, w) in est.items():
        print(f"pilot {n}: tau^2 {tau2:.4f}, w {w:.4f}, SE {clustered_se(tau2, w, sizes):.4f}")
    tau2, w = max(t for t, _ in est.values()), max(v for _, v in est.values())
    se = clustered_se(tau2, w, sizes)
    print(f"heldout57: {len(sizes)} templates, {sum(sizes.values())} instances, 8 attempts each")
    print(f"kept tau^2 {tau2:.4f}, w {w:.4f}: SE {se:.4f}")
    print(f"smallest effect detected with power 0.8: {(Z90 + 0.842) * se:.3f}")
    for effect in (0.024, 0.04, 0.05, 0.075):
        print(f"power at a true +{effect:.3f}: {power(effect, se):.2f}")
