"""Pilot 13's look (plan.md, 2026-12-05 16:10 UTC), from the committed eval files.

    python docs/results/learning/pilot-dev13/compare.py

Per instance, a start's rate is its share of 8 resolved attempts; the difference is the
715-demo start − pilot 8's start, 90 % paired bootstrap clustered by template
(`shadowrl.eval.stats.paired_bootstrap`, alpha 0.05 a side). Primary: all 48 instances.
Secondary: the 24 of `train24` (templates the demos cover) and the 24 fresh ones (templates
added on 2026-12-05, which no demo covers)."""

from __future__ import annotations

import json
from pathlib import Path

from shadowrl.eval.stats import paired_bootstrap

HERE = Path(__file__).parent
BASE, CAND = HERE / "eval48_start8.json", HERE / "eval48_sft13.json"


def rates(path: Path) -> dict[str, tuple[float, str]]:
    tasks = json.loads(path.read_text())["tasks"]
    return {
        t["instance_id"]: (sum(s["resolved"] for s in t["samples"]) / len(t["samples"]), t["group"])
        for t in tasks
    }


def main() -> None:
    order = [json.loads(line)["instance_id"] for line in (HERE / "tasks/eval48.jsonl").open()]
    base, cand = rates(BASE), rates(CAND)
    parts = {"all 48 (primary)": order, "train24, demoed": order[:24], "24 fresh": order[24:]}
    for name, ids in parts.items():
        b, c = [base[i][0] for i in ids], [cand[i][0] for i in ids]
        d = paired_bootstrap(c, b, alpha=0.05, clusters=[base[i][1] for i in ids])
        verdict = "better" if d.low > 0 else "worse" if d.high < 0 else "not distinguishable"
        print(
            f"{name}: pilot 8's start {sum(b) / len(b):.3f}, 715-demo start "
            f"{sum(c) / len(c):.3f}; difference {d.mean:+.3f} [{d.low:+.3f}, {d.high:+.3f}]: {verdict}"
        )
    # Descriptive, not tested: an instance with mixed outcomes is a GRPO group of 8 with an
    # advantage, the signal an RL stage from that start would get.
    for name, r in (("pilot 8's start", base), ("715-demo start", cand)):
        mixed = sum(0 < r[i][0] < 1 for i in order)
        solved = sum(r[i][0] > 0 for i in order)
        print(f"{name}: {mixed} of 48 instances mixed in 8 attempts, {solved} solved at least once")


if __name__ == "__main__":
    main()
