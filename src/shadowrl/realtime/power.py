"""How many sessions a learning-from-feedback comparison needs, computed before the run.

The panel (`panel.py`) compares two checkpoints on the same users; each episode is one
binary outcome (the user accepts or not). Two sample sizes, both one-sided at level
alpha with the given power, by the normal approximation:

* unpaired, two proportions p0 and p1 = p0 + d, per arm (the same approximation as
  `checks.min_detectable_drop`, solved for n instead of δ):
      n = (z_{1−α} + z_power)² · (p0(1−p0) + p1(1−p1)) / d²
  Pairing by task can only help when outcomes correlate within a task, so this is
  the conservative size for the panel.
* paired (McNemar, Connor 1987), given ψ, the share of discordant pairs:
      n = (z_{1−α} · √ψ + z_power · √(ψ − d²))² / d²

`plan` sets the size needed against what the box can run, and the smallest rise that
size detects (`smallest_detectable_rise`, the unpaired bound solved for d), so a run
too small to show the effect says so before it starts rather than after.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist


def _z(q: float) -> float:
    return NormalDist().inv_cdf(q)


def _check(alpha: float, power: float, d: float) -> None:
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError("alpha and power must lie in (0, 1)")
    if d <= 0:
        raise ValueError("the effect d must be positive")


def sessions_needed(p0: float, d: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Episodes per arm to detect a rise from rate `p0` to `p0 + d` (unpaired bound)."""
    _check(alpha, power, d)
    p1 = p0 + d
    if not (p0 >= 0 and p1 <= 1):
        raise ValueError(f"rates {p0} and {p0} + {d} must lie in [0, 1]")
    z = _z(1 - alpha) + _z(power)
    return math.ceil(z * z * (p0 * (1 - p0) + p1 * (1 - p1)) / (d * d))


def paired_sessions_needed(
    discordant: float, d: float, *, alpha: float = 0.05, power: float = 0.8
) -> int:
    """Pairs to detect a difference `d` when a share `discordant` of pairs disagree."""
    _check(alpha, power, d)
    if not (d * d < discordant <= 1):
        raise ValueError(f"the discordant share {discordant} must exceed d² and be at most 1")
    n = (_z(1 - alpha) * math.sqrt(discordant) + _z(power) * math.sqrt(discordant - d * d)) ** 2
    return math.ceil(n / (d * d))


def smallest_detectable_rise(
    p0: float, n: int, *, alpha: float = 0.05, power: float = 0.8
) -> float:
    """The smallest rise d ∈ (0, 1 − p0] that `n` episodes per arm detect (the unpaired
    bound, solved for d); inf when not even a rise to 1 is."""
    if n <= 0 or p0 >= 1 or sessions_needed(p0, 1 - p0, alpha=alpha, power=power) > n:
        return math.inf
    lo, hi = 0.0, 1 - p0  # the needed n falls as d grows on (0, 1 − p0] here
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if sessions_needed(p0, mid, alpha=alpha, power=power) > n else (lo, mid)
    return hi


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
    needed = sessions_needed(p0, d, alpha=alpha, power=power)
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
    per_half = sessions_needed(1 - bite, fall, alpha=alpha, power=power)
    half = int(planned_sessions * pass_share / 2)
    can = smallest_detectable_rise(1 - bite, half, alpha=alpha, power=power)
    return BitePlan(
        bite, pass_share, fall, alpha, power, pilot_sessions, per_half,
        math.ceil(2 * per_half / pass_share), planned_sessions, can,
    )  # fmt: skip
