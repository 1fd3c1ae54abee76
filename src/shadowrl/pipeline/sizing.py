"""How large an eval would show a gain this run could not, from the run's own variance.

RL − SFT is the mean over held-out tasks of the per-task pass-rate difference, and its
interval comes from a paired bootstrap that resamples whole templates (`Task.repo`,
`eval/stats.py::paired_bootstrap`). Its standard error is estimated here the way that
bootstrap sees it, cluster-robust over templates:

    D = Σ_t d_t / T,    var(D) = C / (C − 1) · Σ_c (Σ_{t ∈ c} (d_t − D))² / T²

(T tasks in C templates). More templates of the same mix shrink var(D) as 1 / C, so a
one-sided test at level α with the given power detects a gain g once

    se · (z_{1−α} + z_power) ≤ g,   i.e. at  f = (se · (z_{1−α} + z_power) / g)²

times this run's tasks, templates, episodes and eval time. The normal approximation
and its quantiles are those of `eval/stats.py`'s power calculations (the gate's power
check, the experiments' panel size); only the standard error is this module's own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from shadowrl.eval.stats import power_quantiles


def clustered_se(diffs: Sequence[float], clusters: Sequence[str]) -> float:
    """Cluster-robust standard error of the mean of `diffs` (one per task); nan with
    fewer than two clusters."""
    if len(diffs) != len(clusters) or not diffs:
        raise ValueError("need one cluster label per difference, and some differences")
    mean = sum(diffs) / len(diffs)
    sums: dict[str, float] = {}
    for d, c in zip(diffs, clusters, strict=True):
        sums[c] = sums.get(c, 0.0) + d - mean
    k = len(sums)
    if k < 2:
        return math.nan
    return math.sqrt(k / (k - 1) * sum(s * s for s in sums.values())) / len(diffs)


@dataclass(frozen=True)
class EvalSize:
    """What an eval of both arms would need to detect `gain`, scaled from this one."""

    gain: float
    alpha: float
    power: float
    se: float  # this run's cluster-robust standard error of RL − SFT
    factor: float  # needed size / this run's size (inf: the run has no variance to scale)
    tasks: int
    templates: int
    episodes: int  # per arm
    eval_s: float  # both arms' eval wall time, at this run's pace
    differing: int = 0  # paired tasks whose pass rates differ: what the variance rests on

    @property
    def sizable(self) -> bool:
        return math.isfinite(self.factor)

    @property
    def rough(self) -> bool:
        """A variance from a handful of differing tasks: the scaled size is a guess."""
        return self.differing < ROUGH_BELOW

    def needed(self, now: int) -> int:
        return math.ceil(now * self.factor)


ROUGH_BELOW = 5  # differing tasks under which a standard error says little about the next run


def eval_size(
    diffs: Sequence[float],
    clusters: Sequence[str],
    *,
    episodes: int,
    eval_s: float,
    gain: float,
    alpha: float = 0.05,
    power: float = 0.8,
) -> EvalSize:
    """The size factor for `gain` from per-task differences, and this run's sizes."""
    if gain <= 0 or not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError("need gain > 0 and alpha, power in (0, 1)")
    se = clustered_se(diffs, clusters)
    z_a, z_b = power_quantiles(alpha, power)
    z = z_a + z_b
    factor = (se * z / gain) ** 2 if se > 0 else math.inf  # nan (one template) -> inf too
    differing = sum(1 for d in diffs if d != 0)
    return EvalSize(
        gain, alpha, power, se, factor, len(diffs), len(set(clusters)), episodes, eval_s, differing
    )
