"""The statistics behind every number the evaluator prints and every gate decision.

A benchmark of a few dozen tasks is small, so a bare pass rate is not enough: each
estimate carries a 95% interval, and the gate compares two policies with paired
tests on the *same* tasks, which is far more sensitive than comparing two
independent means. Everything here is a pure function of counts or per-task rates
(no I/O, no global RNG), checked in `tests/eval/test_stats.py` against hand-computed
values.

It is the project's one statistics module: the post-deploy watch (`realtime/checks.py`),
the alarms, the experiments' power and trend tests and the report's eval sizing call
these functions, and only this module turns a level into a normal quantile.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import TypeVar

import numpy as np

T = TypeVar("T")


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a two-sided confidence interval `[low, high]`."""

    value: float
    low: float
    high: float


def z_two_sided(confidence: float) -> float:
    """The normal quantile z whose ±z spans `confidence` of the mass (1.96 at 0.95): the
    one place an interval turns its confidence level into a z."""
    if not 0 < confidence < 1:
        raise ValueError(f"the confidence level {confidence} must lie in (0, 1)")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task from `n` samples of which `c` passed (Chen et al. 2021).

    pass@k = 1 - C(n-c, k) / C(n, k): the chance that at least one of `k` samples
    drawn without replacement from the `n` passes.
    """
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def mean_pass_at_k(counts: Sequence[tuple[int, int]], k: int) -> float:
    """pass@k averaged over tasks, each given as `(n, c)`."""
    if not counts:
        raise ValueError("no tasks")
    return sum(pass_at_k(n, c, k) for n, c in counts) / len(counts)


def wilson_interval(successes: float, n: float, confidence: float = 0.95) -> Estimate:
    """Proportion with a Wilson score interval; well behaved at 0%, 100% and small n.

    Non-integer counts are allowed: `clustered_wilson` passes an effective sample size.
    """
    if n <= 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n and n > 0, got {successes}/{n}")
    z = z_two_sided(confidence)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # At 0 and n the bounds are exactly 0 and 1; avoid float residue like 3e-17.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Estimate(p, low, high)


def clustered_wilson(counts: Sequence[tuple[int, int]], confidence: float = 0.95) -> Estimate:
    """Pass rate over episodes, each task given as `(n, c)`, with a Wilson interval that
    treats the samples of one task as correlated.

    k samples of one task are not k independent draws: a task the policy solves once
    it tends to solve again. The interval shrinks the episode count by the design
    effect (the cluster-robust variance of the ratio estimate over the binomial one),
    kept between 1 (independent) and the samples per task (every task all-or-nothing,
    i.e. one draw per task). With no success or no failure the data cannot show how
    correlated the samples are, so it takes the cautious end: one draw per task.
    """
    if not counts:
        raise ValueError("no tasks")
    n = sum(m for m, _ in counts)
    c = sum(k for _, k in counts)
    p, tasks = c / n, len(counts)
    most = max(m for m, _ in counts)
    if 0 < c < n and tasks > 1:
        robust = tasks / (tasks - 1) * sum((k - p * m) ** 2 for m, k in counts) / n**2
        design = min(max(robust / (p * (1 - p) / n), 1.0), most)
    else:
        design = most
    effective = n / design
    return wilson_interval(p * effective, effective, confidence)


def cluster_ids(clusters: Sequence[str] | None, n: int) -> np.ndarray:
    """Integer label per task, numbered in first-seen order; None = every task alone."""
    if clusters is None:
        return np.arange(n)
    if len(clusters) != n:
        raise ValueError(f"{len(clusters)} cluster labels for {n} values")
    first: dict[str, int] = {}
    return np.array([first.setdefault(c, len(first)) for c in clusters])


def _bootstrap_means(
    values: np.ndarray, resamples: int, seed: int, clusters: Sequence[str] | None = None
) -> np.ndarray:
    """Means of `values` over bootstrap draws of whole clusters (tasks by default).

    Tasks of one cluster (bugs of one source problem) are correlated, so they are
    drawn together; a draw's mean is over the tasks it holds. With every task its own
    cluster this is the plain bootstrap over tasks, draw for draw.
    """
    rng = np.random.default_rng(seed)
    labels = cluster_ids(clusters, len(values))
    sums, sizes = np.bincount(labels, weights=values), np.bincount(labels)
    idx = rng.integers(0, len(sums), size=(resamples, len(sums)))
    means: np.ndarray = sums[idx].sum(axis=1) / sizes[idx].sum(axis=1)
    return means


def bootstrap_mean(
    values: Sequence[float],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    clusters: Sequence[str] | None = None,
) -> Estimate:
    """Mean of per-task values with a seeded percentile-bootstrap interval over tasks
    (or over `clusters` of tasks, one label per value).

    Resampling tasks (not episodes) keeps the samples of one task together, so the
    interval reflects how much the score would move on a different draw of tasks.
    """
    if not values:
        raise ValueError("no values")
    arr = np.asarray(values, dtype=np.float64)
    means = _bootstrap_means(arr, resamples, seed, clusters)
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return Estimate(float(arr.mean()), float(low), float(high))


def pass_at_k_estimate(
    counts: Sequence[tuple[int, int]],
    k: int,
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    clusters: Sequence[str] | None = None,
) -> Estimate:
    """Mean pass@k over tasks with a bootstrap-over-tasks (or -clusters) interval."""
    per_task = [pass_at_k(n, c, k) for n, c in counts]
    return bootstrap_mean(
        per_task, confidence=confidence, resamples=resamples, seed=seed, clusters=clusters
    )


def by_tier(tiers: Sequence[str], items: Sequence[T]) -> dict[str, list[T]]:
    """Group per-task items (counts, results) by their task's tier, in first-seen order."""
    if len(tiers) != len(items):
        raise ValueError("tiers and items differ in length")
    groups: dict[str, list[T]] = {}
    for tier, item in zip(tiers, items, strict=True):
        groups.setdefault(tier, []).append(item)
    return groups


# ---------------------------------------------------------------- paired tests (the gate)


def binomial_tail(x: int, n: int) -> float:
    """P(X <= x) for X ~ Binomial(n, 1/2): the one-sided exact sign-test p-value."""
    if n == 0:
        return 1.0
    return sum(math.comb(n, i) for i in range(x + 1)) / 2**n


@dataclass(frozen=True)
class SignTest:
    """Exact McNemar / sign test on paired binary outcomes.

    `worse` counts pairs the incumbent passed and the candidate failed, `better` the
    reverse; ties carry no information. `p_worse` is the one-sided p-value for
    "the candidate is worse", `p_two_sided` the usual McNemar exact p-value.
    """

    worse: int
    better: int
    p_worse: float
    p_two_sided: float


def sign_test(candidate: Sequence[bool], incumbent: Sequence[bool]) -> SignTest:
    """Exact McNemar test on outcomes paired position by position."""
    if len(candidate) != len(incumbent):
        raise ValueError("paired outcomes differ in length")
    worse = sum(1 for c, i in zip(candidate, incumbent, strict=True) if i and not c)
    better = sum(1 for c, i in zip(candidate, incumbent, strict=True) if c and not i)
    n = worse + better
    p_worse = binomial_tail(better, n)
    p_two = min(1.0, 2 * binomial_tail(min(worse, better), n))
    return SignTest(worse, better, p_worse, p_two)


@dataclass(frozen=True)
class PairedDifference:
    """Mean per-task difference candidate − incumbent with a one-sided upper bound.

    `upper` is the (1 − alpha) one-sided upper confidence bound of the mean
    difference: if even `upper` is below `-margin`, the candidate is significantly
    worse than the incumbent minus the margin.
    """

    mean: float
    upper: float
    low: float
    high: float


def paired_bootstrap(
    candidate: Sequence[float],
    incumbent: Sequence[float],
    *,
    alpha: float = 0.05,
    resamples: int = 5000,
    seed: int = 0,
    clusters: Sequence[str] | None = None,
) -> PairedDifference:
    """Paired bootstrap over tasks (or `clusters` of tasks) of the per-task pass-rate
    difference.

    `low`/`high` form the two-sided (1 − 2·alpha) interval whose `high` is also the
    one-sided (1 − alpha) upper bound `upper`.
    """
    if len(candidate) != len(incumbent) or not candidate:
        raise ValueError("need two equally long, non-empty sequences of per-task rates")
    diff = np.asarray(candidate, dtype=np.float64) - np.asarray(incumbent, dtype=np.float64)
    means = _bootstrap_means(diff, resamples, seed, clusters)
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return PairedDifference(float(diff.mean()), float(high), float(low), float(high))


def fisher_less(a: int, n_a: int, b: int, n_b: int) -> float:
    """One-sided Fisher exact p-value that rate a/n_a is below rate b/n_b."""
    total, k = n_a + n_b, a + b
    lo = max(0, k - n_b)
    hits = sum(math.comb(n_a, x) * math.comb(n_b, k - x) for x in range(lo, a + 1))
    return hits / math.comb(total, k)


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> Estimate:
    """Mean with a normal interval, z from the normal quantile, half-width z·s/√n (s: the
    sample standard deviation; with one value the half-width is 0)."""
    if not values:
        raise ValueError("no values")
    arr = np.asarray(values, dtype=np.float64)
    z = z_two_sided(confidence)
    half = z * float(arr.std(ddof=1)) / math.sqrt(len(arr)) if len(arr) > 1 else 0.0
    mean = float(arr.mean())
    return Estimate(mean, mean - half, mean + half)


# ---------------------------------------------------------------- power (one calculation)
#
# One-sided at level alpha with the given power, by the normal approximation for two
# proportions p0 and p1 = p0 + d over n episodes each:
#     n = (z_{1−α} + z_power)² · (p0(1−p0) + p1(1−p1)) / d²
# A drop from p by d has the variance of a rise from 1 − p by d, so the gate's smallest
# detectable drop is the same calculation read from the other end.


def power_quantiles(alpha: float, power: float) -> tuple[float, float]:
    """(z_{1−α}, z_power) of a one-sided test at level `alpha` with `power`: every size
    calculation (these below, `pipeline/sizing.py`) takes its normal quantiles here."""
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError("alpha and power must lie in (0, 1)")
    return NormalDist().inv_cdf(1 - alpha), NormalDist().inv_cdf(power)


def episodes_needed(p0: float, d: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Episodes per arm to detect a rise from rate `p0` to `p0 + d` (unpaired)."""
    if d <= 0:
        raise ValueError("the effect d must be positive")
    p1 = p0 + d
    if not (p0 >= 0 and p1 <= 1):
        raise ValueError(f"rates {p0} and {p0} + {d} must lie in [0, 1]")
    z_a, z_b = power_quantiles(alpha, power)
    z = z_a + z_b
    return math.ceil(z * z * (p0 * (1 - p0) + p1 * (1 - p1)) / (d * d))


def paired_episodes_needed(
    discordant: float, d: float, *, alpha: float = 0.05, power: float = 0.8
) -> int:
    """Pairs to detect a difference `d` when a share `discordant` of pairs disagree
    (McNemar, Connor 1987): n = (z_{1−α}·√ψ + z_power·√(ψ − d²))² / d²."""
    z_a, z_b = power_quantiles(alpha, power)  # validates alpha and power first
    if d <= 0:
        raise ValueError("the effect d must be positive")
    if not (d * d < discordant <= 1):
        raise ValueError(f"the discordant share {discordant} must exceed d² and be at most 1")
    n = (z_a * math.sqrt(discordant) + z_b * math.sqrt(discordant - d * d)) ** 2
    return math.ceil(n / (d * d))


def smallest_detectable_rise(
    p0: float, n: int, *, alpha: float = 0.05, power: float = 0.8
) -> float:
    """The smallest rise d ∈ (0, 1 − p0] that `n` episodes per arm detect; inf when not
    even a rise to 1 is."""
    if n <= 0 or p0 >= 1 or episodes_needed(p0, 1 - p0, alpha=alpha, power=power) > n:
        return math.inf
    lo, hi = 0.0, 1 - p0  # the needed n falls as d grows on (0, 1 − p0]
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if episodes_needed(p0, mid, alpha=alpha, power=power) > n else (lo, mid)
    return hi


def smallest_detectable_drop(p: float, n: int, *, alpha: float, power: float) -> float:
    """The smallest drop δ ∈ (0, p] from rate `p` that `n` episodes per arm detect; inf
    when not even a collapse to 0 is (an incumbent at 6 of 216 episodes)."""
    return smallest_detectable_rise(1 - p, n, alpha=alpha, power=power)


# ---------------------------------------------------------------- stratified (CMH)


@dataclass(frozen=True)
class Stratified:
    """A Cochran–Mantel–Haenszel test of a fall over 2 × 2 tables, one per stratum."""

    strata: int  # strata with cases in both periods
    mixed: int  # of those, strata with the event on some cases but not all (V_k > 0)
    observed: int  # events in the second period
    expected: float
    variance: float
    p: float  # one-sided p of a fall (1.0 when no stratum informs it)


def cmh_fall(tables: Iterable[tuple[tuple[int, int], tuple[int, int]]]) -> Stratified:
    """Each table ((first period without, with the event), (second period without, with)):

    a_k = events in the second period, E_k = n2_k · m_k / N_k,
    V_k = n1_k · n2_k · m_k · (N_k − m_k) / (N_k² · (N_k − 1)),
    z = (Σ a_k − Σ E_k + ½) / √(Σ V_k), p = Φ(z)   (½ for continuity)
    """
    obs = exp = var = 0.0
    informative = mixed = 0
    for (n1_no, n1_yes), (n2_no, n2_yes) in tables:
        n1, n2 = n1_no + n1_yes, n2_no + n2_yes
        n, m = n1 + n2, n1_yes + n2_yes
        if not (n1 and n2):
            continue
        informative, mixed = informative + 1, mixed + (0 < m < n)
        obs, exp = obs + n2_yes, exp + n2 * m / n
        var += n1 * n2 * m * (n - m) / (n * n * (n - 1))
    p = NormalDist().cdf((obs - exp + 0.5) / math.sqrt(var)) if var > 0 else 1.0
    return Stratified(informative, mixed, int(obs), exp, var, p)
