"""The confirmatory look's readout (plan.md, 2026-12-07 04:44 UTC addendum), from the eval files.

    PYTHONPATH=src python docs/results/learning/pilot-dev23/look.py START P21 P22

START, P21 and P22 are `shadowrl eval` files of pilot 14's SFT start, pilot 21's step 8 and
pilot 22's step 10 on `tasks/heldout_more.jsonl`. Primary (the only test): the mean of the
two runs' per-instance pass rates − the start's, averaged over instances, 90 % paired
bootstrap clustered by template (`shadowrl.eval.stats.paired_bootstrap`, alpha 0.05 a
side): better if the interval lies above 0, worse if below. Each run alone beside it,
descriptive.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from shadowrl.eval.stats import paired_bootstrap

HERE = Path(__file__).resolve().parent
TASKS = HERE / "tasks/heldout_more.jsonl"


def rates(path: Path) -> dict[str, tuple[float, int, str]]:
    """Per instance (pass rate, attempts, template) of an eval file."""
    tasks = json.loads(path.read_text())["tasks"]
    return {
        t["instance_id"]: (
            sum(s["resolved"] for s in t["samples"]) / len(t["samples"]),
            len(t["samples"]),
            t["group"],
        )
        for t in tasks
    }


def line(name: str, cand: list[float], base: list[float], clusters: list[str]) -> str:
    d = paired_bootstrap(cand, base, alpha=0.05, clusters=clusters)
    verdict = "better" if d.low > 0 else "worse" if d.high < 0 else "not distinguishable"
    return (
        f"{name}: {sum(cand) / len(cand):.3f} - start {sum(base) / len(base):.3f} = "
        f"{d.mean:+.3f} [{d.low:+.3f}, {d.high:+.3f}]: {verdict}"
    )


def main(start: Path, p21: Path, p22: Path) -> None:
    rows = [json.loads(r) for r in TASKS.open()]
    order, clusters = [r["instance_id"] for r in rows], [r["repo"] for r in rows]
    evals = {name: rates(p) for name, p in (("start", start), ("p21", p21), ("p22", p22))}
    for name, r in evals.items():
        missing = set(order) - r.keys()
        if missing:
            raise SystemExit(f"{name} lacks {len(missing)} instances, e.g. {sorted(missing)[0]}")
        tries = {r[i][1] for i in order}
        solved = sum(r[i][0] > 0 for i in order)
        print(
            f"{name}: attempts per instance {sorted(tries)}, {solved} of {len(order)} solved at least once"
        )
    base = [evals["start"][i][0] for i in order]
    a, b = [evals["p21"][i][0] for i in order], [evals["p22"][i][0] for i in order]
    mean = [(x + y) / 2 for x, y in zip(a, b, strict=True)]
    print(f"{len(order)} instances, {len(set(clusters))} templates")
    print("PRIMARY " + line("mean of pilot 21 step 8 and pilot 22 step 10", mean, base, clusters))
    print(line("pilot 22 step 10 (descriptive)", b, base, clusters))
    print(line("pilot 21 step 8 (descriptive)", a, base, clusters))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    main(*(Path(a) for a in sys.argv[1:4]))
