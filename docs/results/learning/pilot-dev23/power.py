"""The confirmatory look's power (plan.md, 2026-12-07 04:44 UTC addendum), from committed evals.

    PYTHONPATH=src python docs/results/learning/pilot-dev23/power.py [N_BY_TEMPLATE_JSONL]

The readout is `look.py`'s: the mean over instances of the per-instance pass-rate
difference (the mean of pilots 21 and 22's looks - the start; each run alone beside it),
90 % paired bootstrap clustered by template. Its variance is (1/N^2) sum_c (m_c^2 tau^2 +
m_c w_k): tau^2 the spread of the true effect across templates, w_k the variance of one
instance's observed difference within a template at k attempts per instance. w_k = v + b/k,
where v is the true per-instance change and b/k the binomial noise; both are estimated from
the looks on `heldout57` at k = 8 (b from p(1 - p) per instance, unbiased). Pilot 22 alone
is also sized with the largest components seen in any look.
"""

import functools
import importlib.util
import json
import statistics
import sys
from collections import Counter
from pathlib import Path

L = Path(__file__).resolve().parent.parent
Z90 = 1.645
K = 2  # attempts per instance in the look
LOOKS = {
    18: "eval_rl_step10.json",
    19: "eval_rl_step12.json",
    20: "eval_rl_step12.json",
    21: "eval_rl_step8.json",
    22: "eval_rl_step10.json",
}


@functools.cache
def _look():
    """`look.py`, loaded by path once (the results folders are not a package)."""
    spec = importlib.util.spec_from_file_location("look23", Path(__file__).with_name("look.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def per_instance(path: Path) -> dict[str, tuple[float, int, str]]:
    """Per instance (rate, attempts, template): `look.py`'s reading."""
    return _look().rates(path)


def components(rls: list[Path], start: Path) -> tuple[float, float, float]:
    """(tau^2, v, b) of the mean of `rls` - start, by the method of moments over templates."""
    runs, s = [per_instance(r) for r in rls], per_instance(start)
    by: dict[str, list[float]] = {}
    noise: list[float] = []
    for i, (p0, k, group) in s.items():
        mean = sum(r[i][0] for r in runs) / len(runs)
        by.setdefault(group, []).append(mean - p0)
        own = sum(r[i][0] * (1 - r[i][0]) * r[i][1] / (r[i][1] - 1) for r in runs)
        noise.append(p0 * (1 - p0) * k / (k - 1) + own / len(runs) ** 2)
    w = statistics.mean(statistics.variance(d) for d in by.values() if len(d) > 1)
    m = statistics.mean(len(d) for d in by.values())
    b = statistics.mean(noise)  # b / k is one instance's binomial variance at k attempts
    between = statistics.variance([statistics.mean(d) for d in by.values()])
    return max(between - w / m, 0.0), max(w - b / 8, 0.0), b


def se(tau2: float, w: float, sizes: Counter[str]) -> float:
    """SE of the instance mean of the differences, clustered by template."""
    n = sum(sizes.values())
    return (sum(m * m * tau2 + m * w for m in sizes.values()) / n**2) ** 0.5


def power(effect: float, s: float) -> float:
    """One-sided power of 'the 90 % interval lies above 0' for a true `effect`."""
    return 1 - statistics.NormalDist().cdf(Z90 - effect / s)


def main(tasks: Path | None) -> None:
    start = L / "pilot-dev18/eval_start57.json"
    path = {n: L / f"pilot-dev{n}" / f for n, f in LOOKS.items()}
    est = {n: components([path[n]], start) for n in LOOKS}
    for n, (tau2, v, b) in est.items():
        print(f"pilot {n} on heldout57: tau^2 {tau2:.4f}, v {v:.4f}, b {b:.4f} (b/8 {b / 8:.4f})")
    if tasks is None:  # planned sizes: 15 templates, 16 each
        sizes = Counter({f"t{i}": 16 for i in range(15)})
    else:
        sizes = Counter(json.loads(r)["repo"] for r in tasks.open())
    print(f"look: {len(sizes)} templates, {sum(sizes.values())} instances, {K} attempts each")
    cases = {
        "primary, mean of pilots 21 and 22": components([path[21], path[22]], start),
        "pilot 22 alone": est[22],
        "pilot 22 with the largest seen": _largest(est),
    }
    for label, (tau2, v, b) in cases.items():
        s = se(tau2, v + b / K, sizes)
        powers = ", ".join(f"+{e:.3f}: {power(e, s):.2f}" for e in (0.024, 0.036, 0.048, 0.06))
        print(
            f"{label} (tau^2 {tau2:.4f}, v {v:.4f}, w_{K} {v + b / K:.4f}): SE {s:.4f}, "
            f"80 % power at {(Z90 + 0.842) * s:.3f}; power at {powers}"
        )


def _largest(est: dict[int, tuple[float, float, float]]) -> tuple[float, float, float]:
    return tuple(max(c[j] for c in est.values()) for j in range(3))  # type: ignore[return-value]


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else None)
