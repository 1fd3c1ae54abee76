"""The real-time loop's report: what each cycle collected, decided and cost, with plots.

Written after every cycle from `cycles.jsonl` and the registry, so a reader sees the
whole history so far: accept rate and mean reward per cycle, where each cycle's time
went (every `*_s` field of a row: collect, train, eval, gate, deploy, watch, and a
measurement's), every checkpoint's status, and the measurement's own section when
there is one (`context.Measurement.report`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shadowrl.markdown import table
from shadowrl.realtime.context import Measurement
from shadowrl.serve.store.registry import CheckpointView


def read_cycles(root: Path) -> list[dict[str, Any]]:
    path = root / "cycles.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def plot(rows: Sequence[dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cycles = [r["cycle"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6))
    nan = float("nan")
    left.plot(cycles, [nan if r["accept_rate"] is None else r["accept_rate"] for r in rows],
              "o-", label="accept rate")  # fmt: skip
    left.plot(cycles, [nan if r["reward_mean"] is None else r["reward_mean"] for r in rows],
              "s--", label="mean reward (labeled)")  # fmt: skip
    left.set(xlabel="cycle", title="what users said", xticks=cycles)
    left.legend()
    bottom = [0.0] * len(rows)
    for key in [k for k in rows[-1] if k.endswith("_s") and k != "cycle_s"]:
        vals = [float(r.get(key) or 0.0) for r in rows]
        right.bar(cycles, vals, bottom=bottom, label=key.removesuffix("_s"))
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    right.set(xlabel="cycle", ylabel="seconds", title="cycle time", xticks=cycles)
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def fmt(x: Any, spec: str = ".3f") -> str:
    return "—" if x is None else format(x, spec)


BRANCH_COLUMNS = ("negative", "points", "faithful", "unfaithful", "unjudged", "continuations",
                  "unlabeled", "generated", "groups", "with_contrast", "recorded")  # fmt: skip
BRANCH_WHY = {"no_point_why": "no point", "unfaithful_why": "unfaithful",
              "unjudged_why": "unjudged", "recorded_why": "recorded continuation left out"}  # fmt: skip


def branching_section(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The branching stage's counts per cycle and why points were lost (none when off)."""
    on = [r for r in rows if r.get("branching")]
    if not on:
        return []
    lines = ["", "## Branching", "",
             "Sessions with negative feedback, branch points picked from them, faithful and "
             "unfaithful rebuilds, faithful points the judge could not score, continuations "
             "run, those the judge gave no label, tokens they generated, groups, groups whose "
             "members were judged differently (only those teach anything) and groups the "
             "session's own continuation joined, re-judged (its session's row is then cut at "
             "the branch turn).", ""]  # fmt: skip
    lines += table(("cycle", *BRANCH_COLUMNS),
                   [(r["cycle"], *(fmt(r["branching"].get(c), "d") for c in BRANCH_COLUMNS))
                    for r in on])  # fmt: skip
    why = [f"- cycle {r['cycle']}, {label}: {n} × {reason}"
           for r in on for k, label in BRANCH_WHY.items()
           for reason, n in (r["branching"].get(k) or {}).items()]  # fmt: skip
    return lines + (["", *why] if why else [])


def write_report(
    root: Path, checkpoints: Sequence[CheckpointView], measurement: Measurement | None = None
) -> Path:
    """`report.md` and `cycles.png` under `root` (the run's `realtime/` directory), with
    the measurement's section when there is one."""
    rows = read_cycles(root)
    if rows:
        plot(rows, root / "cycles.png")
    lines = [
        "# Real-time RL report",
        "",
        f"{len(rows)} cycle(s). Each: collect sessions with feedback from the live checkpoint, "
        "turn feedback into rewards, train a candidate, evaluate it on the pinned suite, gate "
        "(paired test, power, alarms), hot-swap it in or reject it, and watch the first "
        "sessions after a deploy (a significant drop rolls back).",
        "",
        "![accept rate, reward and cycle time](cycles.png)" if rows else "",
        "",
    ]
    header = ("cycle", "sessions", "with feedback", "accept rate", "reward", "gate",
              "caught by", "rolled back", "collect s", "train s", "eval s", "cycle s")  # fmt: skip
    lines += table(header, [
        (r["cycle"], r["sessions"], r["with_feedback"], fmt(r["accept_rate"]),
         fmt(r["reward_mean"]), r["gate"] or "no candidate", r["caught_by"] or "—",
         "yes" if r["rolled_back"] else "no", f"{r['collect_s']:.0f}", f"{r['train_s']:.0f}",
         f"{r['eval_s']:.0f}", f"{r['cycle_s']:.0f}")
        for r in rows
    ])  # fmt: skip
    lines += ["", "Why each cycle ended as it did:", ""]
    lines += [f"- cycle {r['cycle']}: {r['reason']}" for r in rows]
    lines += branching_section(rows)
    lines += [] if measurement is None else measurement.report(root, rows)
    registry = [(f"`{c.path}`", c.version, c.status, c.reason or "") for c in checkpoints]
    lines += ["", "## Checkpoint registry", "",
              *table(("path", "version", "status", "reason"), registry)]  # fmt: skip
    out = root / "report.md"
    out.write_text("\n".join(lines) + "\n")
    return out
