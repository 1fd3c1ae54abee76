"""The real-time loop's report: what each cycle collected, decided and cost, with plots.

Written after every cycle from `cycles.jsonl` and the registry, so a reader sees the
whole history so far: accept rate and mean reward per cycle, where each cycle's time
went (every `*_s` field of a row: collect, train, eval, gate, deploy, watch, and a
measurement's), every checkpoint's status, and the measurement's own section when
there is one (`context.Measurement.report`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shadowrl.markdown import table
from shadowrl.realtime.context import Measurement
from shadowrl.realtime.record import BranchRow, CycleRow, read_cycles
from shadowrl.serve.store.registry import CheckpointView


def plot(rows: Sequence[CycleRow[Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cycles = [r.cycle for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6))
    nan = float("nan")
    left.plot(cycles, [nan if r.accept_rate is None else r.accept_rate for r in rows],
              "o-", label="accept rate")  # fmt: skip
    left.plot(cycles, [nan if r.reward_mean is None else r.reward_mean for r in rows],
              "s--", label="mean reward (labeled)")  # fmt: skip
    left.set(xlabel="cycle", title="what users said", xticks=cycles)
    left.legend()
    bottom = [0.0] * len(rows)
    for key in rows[-1].seconds():
        vals = [r.seconds().get(key, 0.0) for r in rows]
        right.bar(cycles, vals, bottom=bottom, label=key)
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


def branch_why(b: BranchRow) -> list[tuple[str, dict[str, int]]]:
    """Why points or groups were lost, by kind."""
    return [("no point", b.no_point_why), ("unfaithful", b.unfaithful_why),
            ("unjudged", b.unjudged_why), ("recorded continuation left out",
                                           b.recorded_why or {})]  # fmt: skip


def branching_section(rows: Sequence[CycleRow[Any]]) -> list[str]:
    """The branching stage's counts per cycle and why points were lost (none when off)."""
    on = [(r.cycle, r.branching) for r in rows if r.branching is not None]
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
                   [(c, b.negative, b.points, b.faithful, b.unfaithful, b.unjudged,
                     b.continuations, fmt(b.unlabeled, "d"), fmt(b.generated, "d"), b.groups,
                     b.with_contrast, fmt(b.recorded, "d")) for c, b in on])  # fmt: skip
    why = [f"- cycle {c}, {label}: {n} × {reason}"
           for c, b in on for label, counts in branch_why(b)
           for reason, n in counts.items()]  # fmt: skip
    return lines + (["", *why] if why else [])


def write_report(
    root: Path, checkpoints: Sequence[CheckpointView], measurement: Measurement | None = None
) -> Path:
    """`report.md` and `cycles.png` under `root` (the run's `realtime/` directory), with
    the measurement's section when there is one."""
    rows = read_cycles(root, None if measurement is None else measurement.row_type)
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
        (r.cycle, r.sessions, r.with_feedback, fmt(r.accept_rate), fmt(r.reward_mean),
         r.gate or "no candidate", r.caught_by or "—", "yes" if r.rolled_back else "no",
         f"{r.collect_s:.0f}", f"{r.train_s:.0f}", f"{r.eval_s:.0f}", f"{r.cycle_s:.0f}")
        for r in rows
    ])  # fmt: skip
    lines += ["", "Why each cycle ended as it did:", ""]
    lines += [f"- cycle {r.cycle}: {r.reason}" for r in rows]
    lines += branching_section(rows)
    lines += [] if measurement is None else measurement.report(root, rows)
    registry = [(f"`{c.path}`", c.version, c.status, c.reason or "") for c in checkpoints]
    lines += ["", "## Checkpoint registry", "",
              *table(("path", "version", "status", "reason"), registry)]  # fmt: skip
    out = root / "report.md"
    out.write_text("\n".join(lines) + "\n")
    return out
