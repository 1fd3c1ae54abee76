"""How many sessions a learning-from-feedback comparison needs, computed before the run.

The panel (`panel.py`) compares two checkpoints on the same users; each episode is one
binary outcome (the user accepts or not). The sizes come from the one power calculation
of `eval/stats.py` (the gate's smallest detectable drop is the same calculation): the
unpaired two-proportion bound per arm, which is the conservative size for the panel
(pairing by task can only help when outcomes correlate within a task), and the paired
McNemar bound from a share of discordant pairs (`trend.Pooled.pairs_needed`).

`plan` sets the size needed against what the box can run, and the smallest rise that
size detects, so a run too small to show the effect says so before it starts rather
than after; `bite_plan` does the same for the planted preference's fall in bite.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from shadowrl.eval.stats import episodes_needed, smallest_detectable_rise


@dataclass(frozen=True)
class Plan:
    """The size a comparison needs against the size this box can afford."""

    p0: float
    d: float
    alpha: float
    power: float
    needed_per_arm: int
    affordable_per_arm: int
    detectable: float  # the smallest rise the affordable size detects (inf: none)

    @property
    def reachable(self) -> bool:
        return self.affordable_per_arm >= self.needed_per_arm

    def __str__(self) -> str:
        need = (
            f"detecting +{self.d:.2f} over an accept rate of {self.p0:.2f} (one-sided α = "
            f"{self.alpha}, power {self.power}) needs {self.needed_per_arm} panel episodes per arm"
        )
        if self.reachable:
            return f"{need}; this run affords {self.affordable_per_arm}: sized to reach it"
        can = (
            f"the smallest rise it detects is +{self.detectable:.2f}"
            if math.isfinite(self.detectable) else "not even a rise to 1 is detectable"
        )  # fmt: skip
        return (
            f"{need}; this run affords {self.affordable_per_arm}: it cannot reach that power, "
            f"so a null result here says nothing about an effect of that size ({can})"
        )


def plan(
    p0: float, d: float, affordable_per_arm: int, *, alpha: float = 0.05, power: float = 0.8
) -> Plan:
    """The needed size for (p0, d) next to `affordable_per_arm` episodes."""
    needed = episodes_needed(p0, d, alpha=alpha, power=power)
    can = smallest_detectable_rise(p0, affordable_per_arm, alpha=alpha, power=power)
    return Plan(p0, d, alpha, power, needed, affordable_per_arm, can)


@dataclass(frozen=True)
class BitePlan:
    """Sessions needed to see the planted preference bite less often as the run goes on.

    The bite rate is the share of passing sessions the preference alone rejects. The run's
    cycles are split in two halves by sessions (`report.bite_trend`) and a fall of `fall`
    from `bite` is tested one-sided: each half needs `passing_per_half` passing sessions,
    so the run needs `needed_sessions` sessions at a pass share `pass_share`.
    """

    bite: float
    pass_share: float
    fall: float
    alpha: float
    power: float
    pilot_sessions: int  # recorded sessions the two rates were read from (0: assumed)
    passing_per_half: int
    needed_sessions: int
    planned_sessions: int
    detectable: float  # the smallest fall the planned sessions detect (inf: none)

    @property
    def reachable(self) -> bool:
        return self.planned_sessions >= self.needed_sessions

    def __str__(self) -> str:
        basis = (
            f"read from the {self.pilot_sessions} sessions recorded before this start"
            if self.pilot_sessions else "assumed, no session being recorded yet"
        )  # fmt: skip
        can = f"{self.detectable:.2f}" if math.isfinite(self.detectable) else "none"
        return (
            f"detecting a fall of {self.fall:.2f} in the preference's bite rate from "
            f"{self.bite:.2f} between the run's halves (pass share {self.pass_share:.2f}; both "
            f"{basis}; one-sided α = {self.alpha}, power {self.power}) needs "
            f"{self.passing_per_half} passing sessions per half, {self.needed_sessions} "
            f"sessions in all; the run plans {self.planned_sessions} "
            f"({'enough' if self.reachable else 'too few'}; the smallest fall they detect: {can})"
        )


def bite_plan(
    bite: float,
    pass_share: float,
    fall: float,
    planned_sessions: int,
    *,
    pilot_sessions: int = 0,
    alpha: float = 0.05,
    power: float = 0.8,
) -> BitePlan:
    """Size the halves test of a fall from `bite` by `fall` (at most to 0). A fall from b
    by d has the variance of a rise from 1 − b by d, so the rise's bounds serve."""
    if not (0 < bite <= 1 and 0 < pass_share <= 1):
        raise ValueError(f"the bite rate {bite} and pass share {pass_share} must lie in (0, 1]")
    fall = min(fall, bite)
    per_half = episodes_needed(1 - bite, fall, alpha=alpha, power=power)
    half = int(planned_sessions * pass_share / 2)
    can = smallest_detectable_rise(1 - bite, half, alpha=alpha, power=power)
    return BitePlan(
        bite, pass_share, fall, alpha, power, pilot_sessions, per_half,
        math.ceil(2 * per_half / pass_share), planned_sessions, can,
    )  # fmt: skip
