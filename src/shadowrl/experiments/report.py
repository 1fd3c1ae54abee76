"""The measurement's section of the real-time report: the planted preference's bite per
cycle and over the run's halves (pooled and within tasks), and the panel's paired
comparisons per cycle and pooled over the cycles."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shadowrl.experiments.learning import read_outcomes
from shadowrl.experiments.preference import Preference
from shadowrl.experiments.trend import (
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

PAIRS = ("candidate_vs_control", "candidate_vs_deployed", "control_vs_deployed")


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
