"""Every paired difference in README.md, from the committed eval files.

    python docs/results/learning/pilot-dev12/compare.py

Per instance, a start's rate is its share of resolved attempts; the baseline "pooled" is
pilot 8's start's three measurements together (12 attempts an instance). Intervals: 90 %
paired bootstrap clustered by template (`shadowrl.eval.stats.paired_bootstrap`, alpha 0.05
a side)."""

from __future__ import annotations

import json
from pathlib import Path

from shadowrl.eval.stats import paired_bootstrap

HERE = Path(__file__).parent
RUNS = {
    "pilot 8's start, 03:31": HERE.parent / "pilot-dev10/eval_train24_sft8.json",
    "pilot 8's start, retest seed 0": HERE / "eval_train24_start_retest0.json",
    "pilot 8's start, retest seed 12": HERE / "eval_train24_start_retest12.json",
    "pilot 10's start": HERE.parent / "pilot-dev10/eval_train24_sft10.json",
    "pilot 11's start": HERE.parent / "pilot-dev11/eval_train24_sft11.json",
    "pilot 12's start": HERE / "eval_train24_sft12.json",
}


def outcomes(path: Path) -> dict[str, tuple[list[bool], str]]:
    tasks = json.loads(path.read_text())["tasks"]
    return {t["instance_id"]: ([s["resolved"] for s in t["samples"]], t["group"]) for t in tasks}


def main() -> None:
    runs = {name: outcomes(path) for name, path in RUNS.items()}
    ids = sorted(runs["pilot 12's start"])
    groups = [runs["pilot 12's start"][i][1] for i in ids]
    rate = {n: [sum(r[i][0]) / len(r[i][0]) for i in ids] for n, r in runs.items()}
    baselines = [n for n in runs if n.startswith("pilot 8's")]
    rate["pooled"] = [sum(rate[b][k] for b in baselines) / len(baselines) for k in range(len(ids))]
    pairs = [(b, "pilot 8's start, 03:31") for b in baselines[1:]]
    pairs += [(c, base) for c in runs if c not in baselines for base in (baselines[0], "pooled")]
    for cand, base in pairs:
        d = paired_bootstrap(rate[cand], rate[base], alpha=0.05, clusters=groups)
        print(f"{cand} − {base}: {d.mean:+.3f} [{d.low:+.3f}, {d.high:+.3f}]")


if __name__ == "__main__":
    main()
