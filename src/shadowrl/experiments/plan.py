"""The measurement's power, computed at each start of a run (`shadowrl realtime --plan`).

Two sizes, written to `realtime/plan.json` and printed: the panel's episodes per arm
against what it needs to detect `realtime.panel.effect`, and the sessions the run plans
against what it needs to see the planted preference's bite fall by
`realtime.users.bite_fall` between its halves (`power.py`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

from shadowrl.eval import EvalResult
from shadowrl.experiments.config import MeasuredRealtimeConfig
from shadowrl.experiments.learning import preference_counts, read_outcomes
from shadowrl.experiments.power import BitePlan, Plan, bite_plan, plan
from shadowrl.experiments.preference import Preference, accept_rate
from shadowrl.realtime import read_cycles
from shadowrl.tasks import Task


def cycles_done(root: Path) -> int:
    return len(read_cycles(root))


def power_plan(rt: MeasuredRealtimeConfig, alpha: float, panel: Sequence[Task]) -> Plan:
    """The panel's size against what it needs to detect `realtime.panel.effect`; p0 is
    the users' accept rate on the panel's screened samples (0.5 without a screen)."""
    assert rt.panel is not None
    users = rt.users
    p0 = 0.5
    if users.screen is not None and Path(users.screen).exists():
        p0 = accept_rate(EvalResult.load(users.screen), panel, Preference.of(users))
    p0 = min(p0, 1 - rt.panel.effect)  # a rise from p0 must stay a rate
    return plan(p0, rt.panel.effect, len(panel) * rt.panel.samples, alpha=alpha, power=rt.power)


def bite_power(rt: MeasuredRealtimeConfig, alpha: float, root: Path) -> BitePlan | None:
    """The session count against what it needs to see the planted preference's bite fall
    by `realtime.users.bite_fall`; rates from the sessions recorded so far when any passed
    and the preference bit on some (a resumed run), else assumed (0.5 and 0.5)."""
    pref = Preference.of(rt.users)
    if not pref.planted:
        return None
    seen = read_outcomes(root)
    pilot = preference_counts(seen, list(seen), pref)
    bit, passed = pilot["rejected_by_preference"], pilot["resolved"]
    rates = (bit / passed, passed / len(seen)) if bit else (0.5, 0.5)
    planned = len(seen) + max(0, rt.cycles - cycles_done(root)) * rt.sessions
    return bite_plan(
        *rates, rt.users.bite_fall, planned, pilot_sessions=len(seen) if bit else 0,
        alpha=alpha, power=rt.power,
    )  # fmt: skip


def write_plans(
    rt: MeasuredRealtimeConfig, alpha: float, root: Path, panel: Sequence[Task]
) -> bool:
    """Print both power calculations and write them to `root/plan.json` (False: none)."""
    sized = power_plan(rt, alpha, panel) if rt.panel is not None else None
    bite = bite_power(rt, alpha, root)
    if sized is None and bite is None:
        return False
    out: dict[str, object] = {}
    if sized is not None:
        out |= dataclasses.asdict(sized) | {"reachable": sized.reachable, "text": str(sized)}
        print(f"power (panel): {sized}")
    if bite is not None:
        out["preference"] = dataclasses.asdict(bite) | {
            "reachable": bite.reachable, "text": str(bite)}  # fmt: skip
        print(f"power (preference): {bite}")
    (root / "plan.json").write_text(json.dumps(out, indent=1))
    return True
