"""Spread measurement 16's readout (plan.md, 2026-12-06 03:13 UTC), from the committed evals.

    python docs/results/learning/spread16/spread.py docs/results/learning/spread16/eval_T*.json

Per eval: instances solved in some but not all 8 attempts ("mixed", a group with an
advantage), in none, in all; the pass rate; the median generated tokens of passing episodes.
"""

import json
import statistics
import sys
from pathlib import Path

for path in sys.argv[1:]:
    tasks = json.loads(Path(path).read_text())["tasks"]
    n = len(tasks[0]["samples"])
    k = [sum(s["resolved"] for s in t["samples"]) for t in tasks]
    toks = [s["tokens"] for t in tasks for s in t["samples"] if s["resolved"]]
    print(
        f"{path}: {len(k)} instances x {n}: mixed {sum(0 < c < n for c in k)}, "
        f"never {k.count(0)}, always {k.count(n)}; pass rate {sum(k) / (len(k) * n):.3f}; "
        f"passing episodes {len(toks)}, median tokens {statistics.median(toks) if toks else '-'}"
    )
    print("  solved per instance:", sorted(k, reverse=True))
