"""Resolved attempts on a held-out set split by bug kind (plan.md, 2026-12-06 18:25 UTC).

    python docs/results/learning/pilot-dev20/operators.py [--template] NAME=EVAL_JSON [NAME=EVAL_JSON ...]

The kind is the mutation operator named in each instance's `source`
(`family+ast:<operator>@<site>`); with `--template`, rows are templates instead (each
task's `group`). Descriptive, not tested: one markdown table, a row per kind, a column per
eval, each cell resolved / attempts.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path


def kind(source: str) -> str:
    return source.split("ast:", 1)[-1].split("@", 1)[0]


def by_kind(path: Path, template: bool = False) -> dict[str, tuple[int, int]]:
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for task in json.loads(path.read_text())["tasks"]:
        cell = counts[task["group"] if template else kind(task["source"])]
        cell[0] += sum(s["resolved"] for s in task["samples"])
        cell[1] += len(task["samples"])
    return {k: (v[0], v[1]) for k, v in counts.items()}


def main(args: list[str]) -> None:
    template = args[:1] == ["--template"]
    args = args[1:] if template else args
    if not args or any("=" not in a for a in args):
        sys.exit(__doc__)
    pairs = (a.split("=", 1) for a in args)
    evals = {name: by_kind(Path(path), template) for name, path in pairs}
    kinds = sorted({k for table in evals.values() for k in table})
    print(f"| {'template' if template else 'kind'} | " + " | ".join(evals) + " |")
    print("|---|" + "---|" * len(evals))
    for k in kinds:
        cells = (f"{t[k][0]}/{t[k][1]}" if k in t else "–" for t in evals.values())
        print(f"| {k} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
