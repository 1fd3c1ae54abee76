"""The real-time loop's report: what each cycle collected, decided and cost, with plots.

Written after every cycle from `cycles.jsonl` and the registry, so a reader sees the
whole history so far: accept rate and mean reward per cycle, where each cycle's time
went (collect, train, panel, eval, gate, deploy, watch), every checkpoint's status, and,
when measured, the panel's paired comparisons and the planted preference's counts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shadowrl.markdown import table
from shadowrl.realtime.learning import read_outcomes
from shadowrl.realtime.preference import Preference
from shadowrl.realtime.trend import (
    bite_text,
    bite_trend,
    halves,
    pooled_panel,
    pooled_text,
    within_tasks,
    within_text,
)
from shadowrl.realtime.users import cycle_of
from shadowrl.serve.store.registry import CheckpointView

TIMES = ("collect_s", "train_s", "panel_s", "eval_s", "gate_s", "deploy_s", "watch_s")
PAIRS = ("candidate_vs_control", "candidate_vs_deployed", "control_vs_deployed")


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
    for key in TIMES:
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


def delta_text(c: dict[str, Any] | None) -> str:
    if c is None:
        return "—"
    d, sign = c["delta"], c["sign"]
    return (
        f"{d['mean']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}] "
        f"({sign['better']}/{sign['worse']}, p {sign['p_two_sided']:.2g})"
    )


def preference_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Per cycle: passing sessions the planted preference alone rejected, and why."""
    cells: list[tuple[object, ...]] = []
    for r in rows:
        p = r["preference"]
        cells.append((
            r["cycle"], p["sessions"], p["resolved"],
            bite_text(p["rejected_by_preference"], p["resolved"]),
            p.get("over_diff_lines", "—"), p.get("over_turns", "—"), p.get("over_tokens", "—"),
        ))  # fmt: skip
    bit, passed = (
        sum(r["preference"][k] for r in rows) for k in ("rejected_by_preference", "resolved")
    )
    sessions = sum(r["preference"]["sessions"] for r in rows)
    cells.append(("all", sessions, passed, bite_text(bit, passed), "", "", ""))
    header = ("cycle", "sessions", "passing", "rejected by the preference", "over diff lines",
              "over turns", "over tokens")  # fmt: skip
    intro = ("Planted preference: passing sessions rejected only for it (Wilson 95 % "
             "interval), by the limit broken:")  # fmt: skip
    return [intro, "", *table(header, cells), ""]


def preference_section(root: Path, rows: Sequence[dict[str, Any]], pref: Preference) -> list[str]:
    """The bite per cycle, then over the halves: pooled (Fisher) and within tasks (CMH)."""
    lines = [*preference_lines(rows), *bite_trend(rows)]
    if len(rows) >= 2 and pref.planted:
        last, second = rows[-1]["cycle"], rows[halves(rows)]["cycle"]
        seen = [o for o in read_outcomes(root).values() if cycle_of(o["user"]) <= last]
        lines += [within_text(within_tasks(seen, pref, second)), ""]
    return lines


def learning_section(
    root: Path, rows: Sequence[dict[str, Any]], pref: Preference | None = None
) -> list[str]:
    """The panel's paired comparisons and the planted preference's counts, if measured."""
    seen: list[dict[str, int]] = [r["preference"] for r in rows if r.get("preference")]
    paneled = [r for r in rows if r.get("panel")]
    if not seen and not paneled:
        return []
    lines = ["", "## Learning from feedback", ""]
    plan = root / "plan.json"
    plans = json.loads(plan.read_text()) if plan.exists() else {}
    for text in (plans.get("text"), plans.get("preference", {}).get("text")):
        lines += [f"Power, computed at the run's last start: {text}.", ""] if text else []
    if seen:
        bitten = [r for r in rows if r.get("preference")]
        lines += preference_section(root, bitten, pref or Preference())
    if paneled:
        pairs = [(r["cycle"], *(delta_text(r["panel"].get(p)) for p in PAIRS)) for r in paneled]
        replays = [
            (r["cycle"], arm, sc["episodes"], sc["accepted"], sc["resolved"],
             bite_text(sc["rejected_by_preference"], sc["resolved"]))
            for r in paneled for arm, sc in r["panel"]["scores"].items()
        ]  # fmt: skip
        lines += [
            "Panel accept-rate differences, mean [95 % interval] (pairs better/worse, "
            "sign-test p):",
            "",
            *table(("cycle", *(p.replace("_vs_", " − ") for p in PAIRS)), pairs),
            "",
            "Panel replays: accepted, passing, and passing rejected by the preference:",
            "",
            *table(("cycle", "arm", "episodes", "accepted", "passing",
                    "rejected by the preference"), replays),
            "",
            "Pooled over the cycles (normal 95 % interval; pairs a run sized from this one "
            "would need for the plan's effect at the discordance seen):",
            "",
            *(f"- {pooled_text(p, plans.get('d', 0.1))}"
              for pair in PAIRS if (p := pooled_panel(paneled, pair)) is not None),
        ]  # fmt: skip
    return lines


def write_report(
    root: Path, checkpoints: Sequence[CheckpointView], pref: Preference | None = None
) -> Path:
    """`report.md` and `cycles.png` under `root` (the run's `realtime/` directory); `pref`,
    the users' planted preference, adds the within-task test of its bite."""
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
    lines += learning_section(root, rows, pref)
    registry = [(f"`{c.path}`", c.version, c.status, c.reason or "") for c in checkpoints]
    lines += ["", "## Checkpoint registry", "",
              *table(("path", "version", "status", "reason"), registry)]  # fmt: skip
    out = root / "report.md"
    out.write_text("\n".join(lines) + "\n")
    return out
