"""Dev pilot 25's power (plan.md, 2026-12-07 20:16 UTC addendum), from committed evals.

    PYTHONPATH=src python docs/results/learning/pilot-dev25/power.py

Pilot 23's model (`../pilot-dev23/power.py`: SE of an instance mean clustered by template,
from tau^2 between templates, v the true per-instance change and b/k the binomial noise).
Primary, pilot 25 - start on the 187 fresh instances at 2 attempts: pilot 22 alone's
components (from the looks on `heldout57`), and the largest seen. Secondary, pilot 25 - the
mean of pilots 21 and 22: the spread of one run of a design about another is read from the
two fp32 runs themselves on the fresh instances (pilot 22 - pilot 21, their observed
difference's components, its observed within-template spread used as it is); if each run is its design's mean plus independent noise of
variance s^2, that difference has 2 s^2 and the secondary's has s^2 + s^2/2, 0.75 of it.
"""

import importlib.util
import json
from collections import Counter
from pathlib import Path

L = Path(__file__).resolve().parent.parent
P23 = L / "pilot-dev23"


def _power23():
    spec = importlib.util.spec_from_file_location("power23", P23 / "power.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    p = _power23()
    sizes = Counter(json.loads(r)["repo"] for r in (P23 / "tasks/heldout_more.jsonl").open())
    start57 = L / "pilot-dev18/eval_start57.json"
    looks = {n: L / f"pilot-dev{n}" / f for n, f in p.LOOKS.items()}
    est = {n: p.components([looks[n]], start57) for n in looks}
    for label, (tau2, v, b) in (("pilot 22 alone", est[22]), ("largest seen", p._largest(est))):
        s = p.se(tau2, v + b / p.K, sizes)
        at = ", ".join(f"+{e:.3f}: {p.power(e, s):.2f}" for e in (0.024, 0.048, 0.1))
        print(f"primary, {label}: SE {s:.4f}, 80 % power at {(p.Z90 + 0.842) * s:.3f}; {at}")
    tau2, v, b = p.components([P23 / "eval_p22_step10.json"], P23 / "eval_p21_step8.json")
    # `components` returns v = w - b/8 (sized for 8-attempt looks); these are 2-attempt evals
    # whose observed within-template spread w already holds their noise: use it as it is
    run_diff = p.se(tau2, v + b / 8, sizes)
    s = 0.75**0.5 * run_diff
    print(
        f"pilot 22 - pilot 21 on the fresh instances: tau^2 {tau2:.4f}, v {v:.4f}, b {b:.4f}, "
        f"SE {run_diff:.4f}; secondary SE {s:.4f}"
    )
    for true in (0.0, -0.02, -0.05):  # P(lower end > -0.05) when the true difference is `true`
        print(f"secondary: P(lower end above -0.05 | true {true:+.2f}) = {p.power(true + 0.05, s):.2f}")


if __name__ == "__main__":
    main()
