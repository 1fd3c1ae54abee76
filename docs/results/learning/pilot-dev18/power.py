"""Dev pilot 18's power calculation (plan.md, 2026-12-06 10:21 UTC addendum), from committed evals.

    python docs/results/learning/pilot-dev18/power.py

The readout is the mean over the 15 templates of each template's mean per-instance
pass-rate difference (step 60 - start), 8 attempts per instance, with the clustered
bootstrap over templates. Its variance is (1/C^2) sum_c (tau^2 + w / m_c): tau^2 the
spread of the true effect across templates, w the variance of one instance's observed
difference within a template. Both are estimated from pilots 15 and 16 (RL - start on
pilot 14's held-out 45, 3 instances of each template) and the larger is kept.
"""

import importlib.util
import json
import statistics
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
L = HERE.parent
Z = 1.645 + 0.842  # one-sided 5 %, power 0.8


def rates(path: Path) -> dict[str, tuple[float, str]]:
    """Per instance (rate, template), as pilot 14's readout reads an eval (loaded by path)."""
    spec = importlib.util.spec_from_file_location("compare14", L / "pilot-dev14/compare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.rates(path)


def components(rl: Path, start: Path) -> tuple[float, float]:
    """(tau^2, w) of RL - start, by the method of moments over templates."""
    a, b = rates(rl), rates(start)
    by: dict[str, list[float]] = {}
    for i, (p, group) in b.items():
        by.setdefault(group, []).append(a[i][0] - p)
    w = statistics.mean(statistics.variance(v) for v in by.values() if len(v) > 1)
    m = statistics.mean(len(v) for v in by.values())
    between = statistics.variance([statistics.mean(v) for v in by.values()])
    return max(between - w / m, 0.0), w


if __name__ == "__main__":
    start = L / "pilot-dev14/eval_sft.json"
    est = {n: components(L / f"pilot-dev{n}/eval_rl.json", start) for n in (15, 16)}
    for n, (tau2, w) in est.items():
        print(f"pilot {n} - start on held-out 45: tau^2 {tau2:.4f}, w {w:.4f}")
    tau2, w = max(t for t, _ in est.values()), max(v for _, v in est.values())
    sizes = Counter(json.loads(line)["repo"] for line in (HERE / "tasks/heldout57.jsonl").open())
    c = len(sizes)
    se = (sum(tau2 + w / m for m in sizes.values()) / c**2) ** 0.5
    print(f"heldout57: {c} templates, {sum(sizes.values())} instances, 8 attempts each")
    print(f"kept tau^2 {tau2:.4f}, w {w:.4f}: SE {se:.4f}, detectable at 80 % power {Z * se:.3f}")
