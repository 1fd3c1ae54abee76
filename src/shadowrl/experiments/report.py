"""The measurement's section of the real-time report: the planted preference's bite per
cycle and over the run's halves (pooled and within tasks), and the panel's paired
comparisons per cycle and pooled over the cycles."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from shadowrl.experiments.learning import read_outcomes
from shadowrl.experiments.preference import Preference
from shadowrl.experiments.row import ComparisonRow, LearningRow
from shadowrl.experiments.trend import (
    Bitten,
    bite_text,
    bite_trend,
    halves,
    pooled_panel,
    pooled_text,
    within_tasks,
    within_text,
)
from shadowrl.experiments.users import cycle_of
from shadowrl.markdown import table
from shadowrl.realtime import CycleRow

PAIRS = ("candidate_vs_control", "candidate_vs_deployed", "control_vs_deployed")


def delta_text(c: ComparisonRow | None) -> str:
    if c is None:
        return "—"
    d, sign = c.delta, c.sign
    return (
        f"{d.mean:+.3f} [{d.low:+.3f}, {d.high:+.3f}] "
        f"({sign.better}/{sign.worse}, p {sign.p_two_sided:.2g})"
    )


def preference_lines(rows: Sequence[Bitten]) -> list[str]:
    """Per cycle: passing sessions the planted preference alone rejected, and why."""
    cells: list[tuple[object, ...]] = [
        (c, p.sessions, p.resolved, bite_text(p.rejected_by_preference, p.resolved),
         *(("—" if n is None else n) for n in (p.over_diff_lines, p.over_turns, p.over_tokens)))
        for c, p in rows
    ]  # fmt: skip
    bit = sum(p.rejected_by_preference for _, p in rows)
    passed = sum(p.resolved for _, p in rows)
    sessions = sum(p.sessions for _, p in rows)
    cells.append(("all", sessions, passed, bite_text(bit, passed), "", "", ""))
    header = ("cycle", "sessions", "passing", "rejected by the preference", "over diff lines",
              "over turns", "over tokens")  # fmt: skip
    intro = ("Planted preference: passing sessions rejected only for it (Wilson 95 % "
             "interval), by the limit broken:")  # fmt: skip
    return [intro, "", *table(header, cells), ""]


def preference_section(root: Path, rows: Sequence[Bitten], pref: Preference) -> list[str]:
    """The bite per cycle, then over the halves: pooled (Fisher) and within tasks (CMH)."""
    lines = [*preference_lines(rows), *bite_trend(rows)]
    if len(rows) >= 2 and pref.planted:
        last, second = rows[-1][0], rows[halves(rows)][0]
        seen = [o for o in read_outcomes(root).values() if cycle_of(o["user"]) <= last]
        lines += [within_text(within_tasks(seen, pref, second)), ""]
    return lines


def learning_section(
    root: Path, rows: Sequence[CycleRow[LearningRow]], pref: Preference | None = None
) -> list[str]:
    """The panel's paired comparisons and the planted preference's counts, if measured."""
    measured = [(r.cycle, r.measured) for r in rows if r.measured is not None]
    bitten = [(c, m.preference) for c, m in measured if m.preference is not None]
    paneled = [(c, m.panel) for c, m in measured if m.panel is not None]
    if not bitten and not paneled:
        return []
    lines = ["", "## Learning from feedback", ""]
    plan = root / "plan.json"
    plans = json.loads(plan.read_text()) if plan.exists() else {}
    for text in (plans.get("text"), plans.get("preference", {}).get("text")):
        lines += [f"Power, computed at the run's last start: {text}.", ""] if text else []
    if bitten:
        lines += preference_section(root, bitten, pref or Preference())
    if paneled:
        pairs = [(c, *(delta_text(p.pairs().get(name)) for name in PAIRS)) for c, p in paneled]
        replays = [
            (c, arm, sc.episodes, sc.accepted, sc.resolved,
             bite_text(sc.rejected_by_preference, sc.resolved))
            for c, p in paneled for arm, sc in p.scores.items()
        ]  # fmt: skip
        panels = [p for _, p in paneled]
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
              for pair in PAIRS if (p := pooled_panel(panels, pair)) is not None),
        ]  # fmt: skip
    return lines
