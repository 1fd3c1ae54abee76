"""Statistics checked against values computed by hand (derivations in the comments)."""

from __future__ import annotations

import math
import re
from dataclasses import astuple
from pathlib import Path

import numpy as np
import pytest

from shadowrl.eval import stats


def test_pass_at_k_hand_values() -> None:
    assert stats.pass_at_k(5, 2, 1) == pytest.approx(0.4)  # c / n
    assert stats.pass_at_k(5, 2, 2) == pytest.approx(0.7)  # 1 - C(3,2)/C(5,2) = 1 - 3/10
    assert stats.pass_at_k(10, 3, 5) == pytest.approx(1 - 21 / 252)  # C(7,5)=21, C(10,5)=252
    assert stats.pass_at_k(5, 4, 2) == 1.0  # only one failure: any 2 draws include a pass
    assert stats.pass_at_k(4, 0, 2) == 0.0
    assert stats.mean_pass_at_k([(5, 2), (4, 0)], 2) == pytest.approx(0.35)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, 1, 4), (3, 1, 0)])
def test_pass_at_k_rejects_impossible_counts(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        stats.pass_at_k(n, c, k)


def test_wilson_interval_hand_values() -> None:
    # 0/10: centre = half = (z²/20)/(1+z²/10) with z = 1.959964 -> [0, 0.2775]
    e = stats.wilson_interval(0, 10)
    assert (e.value, e.low) == (0.0, 0.0)
    assert e.high == pytest.approx(0.27753, abs=1e-5)
    # 5/10: centre 0.5, half = z·sqrt(0.025 + z²/400)/(1+z²/10) = 0.26341
    e = stats.wilson_interval(5, 10)
    assert (e.low, e.high) == (pytest.approx(0.23659, abs=1e-5), pytest.approx(0.76341, abs=1e-5))
    # 10/10 mirrors 0/10
    assert stats.wilson_interval(10, 10).low == pytest.approx(1 - 0.27753, abs=1e-5)


def test_clustered_wilson_shrinks_episodes_by_the_design_effect() -> None:
    # one sample per task: episodes are independent, plain Wilson over episodes
    assert stats.clustered_wilson([(1, 1)] * 3 + [(1, 0)] * 7) == stats.wilson_interval(3, 10)
    # equal rates on every task: no between-task variance, so no widening
    assert stats.clustered_wilson([(4, 2)] * 10) == stats.wilson_interval(20, 40)
    # all-or-nothing tasks: 40 episodes carry the information of 10 draws
    e = stats.clustered_wilson([(4, 4)] * 2 + [(4, 0)] * 8)
    assert astuple(e) == pytest.approx(astuple(stats.wilson_interval(2, 10)))
    # by hand: p = 8/16; robust var = 4/3 * (4 + 4 + 0 + 0) / 16² = 1/24; binomial
    # var = 0.25/16 = 1/64; design effect 8/3 -> 6 effective episodes, 3 successes
    e = stats.clustered_wilson([(4, 4), (4, 0), (4, 2), (4, 2)])
    assert astuple(e) == pytest.approx(astuple(stats.wilson_interval(3, 6)))
    assert e.low < stats.wilson_interval(8, 16).low  # wider than treating 16 as independent
    # no success at all: correlation unknown, so the cautious one draw per task
    assert stats.clustered_wilson([(4, 0)] * 10) == stats.wilson_interval(0, 10)


def test_bootstrap_mean_is_seeded_and_brackets_the_mean() -> None:
    values = [0.0, 1.0, 1.0, 0.5, 0.0, 1.0, 0.25, 0.75]
    a = stats.bootstrap_mean(values, seed=3)
    assert a == stats.bootstrap_mean(values, seed=3)
    assert a.value == pytest.approx(4.5 / 8)
    assert 0.0 <= a.low < a.value < a.high <= 1.0
    assert stats.bootstrap_mean([0.5] * 6) == stats.Estimate(0.5, 0.5, 0.5)


def test_pass_at_k_estimate_averages_per_task() -> None:
    e = stats.pass_at_k_estimate([(5, 2), (4, 0)], 2, seed=0)
    assert e.value == pytest.approx(0.35)
    assert e.low >= 0.0 and e.high <= 0.7


def test_by_tier_groups_in_first_seen_order() -> None:
    groups = stats.by_tier(["easy", "hard", "easy"], [(1, 1), (1, 0), (2, 1)])
    assert groups == {"easy": [(1, 1), (2, 1)], "hard": [(1, 0)]}
    assert list(groups) == ["easy", "hard"]


def test_sign_test_hand_values() -> None:
    assert stats.binomial_tail(0, 3) == 1 / 8
    assert stats.binomial_tail(1, 4) == 5 / 16  # (1 + 4) / 16
    cand = [False, False, False, True, True, False]
    inc = [True, True, True, True, False, False]
    s = stats.sign_test(cand, inc)
    assert (s.worse, s.better) == (3, 1)  # tie pairs (T,T) and (F,F) are ignored
    assert s.p_worse == 5 / 16  # P(X <= 1), X ~ Bin(4, 1/2)
    assert s.p_two_sided == 10 / 16
    none = stats.sign_test([True], [True])
    assert (none.p_worse, none.p_two_sided) == (1.0, 1.0)


def test_paired_bootstrap_degenerate_and_mixed() -> None:
    d = stats.paired_bootstrap([0.0] * 4, [1.0] * 4)
    assert (d.mean, d.upper) == (-1.0, -1.0)
    d = stats.paired_bootstrap([1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 1.0], alpha=0.05, seed=1)
    assert d.mean == 0.0
    assert d.low < 0.0 < d.upper  # one task better, one worse: no evidence either way
    assert math.isclose(d.upper, d.high)


def test_cluster_bootstrap_draws_whole_clusters() -> None:
    values = [1.0, 1.0, 1.0, 0.0]
    # Every task alone is the plain bootstrap over tasks, draw for draw.
    alone = stats.bootstrap_mean(values, seed=2, clusters=["a", "b", "c", "d"])
    assert alone == stats.bootstrap_mean(values, seed=2)
    # Two clusters of sizes 3 and 1: a draw holds (a,a), (a,b) or (b,b), and its mean is
    # over the tasks it holds: 1, 3/4 or 0. So the 95% interval spans [0, 1].
    means = stats._bootstrap_means(np.asarray(values), 400, 0, ["a", "a", "a", "b"])
    assert set(np.round(means, 6)) == {0.0, 0.75, 1.0}
    assert stats.bootstrap_mean(values, clusters=["a", "a", "a", "b"]) == stats.Estimate(
        0.75, 0.0, 1.0
    )
    # One cluster: every draw is the whole set.
    assert stats.bootstrap_mean(values, clusters=["x"] * 4) == stats.Estimate(0.75, 0.75, 0.75)
    with pytest.raises(ValueError, match="3 cluster labels for 4 values"):
        stats.bootstrap_mean(values, clusters=["a", "b", "c"])


def test_paired_bootstrap_over_clusters_is_wider_when_the_gain_sits_in_one() -> None:
    # 10 bugs of one problem all improve by 1; 10 other problems are unchanged.
    cand, inc = [1.0] * 10 + [0.0] * 10, [0.0] * 20
    by_task = stats.paired_bootstrap(cand, inc, seed=0)
    by_problem = stats.paired_bootstrap(cand, inc, seed=0, clusters=["p"] * 10 + list("abcdefghij"))
    assert by_task.mean == by_problem.mean == 0.5
    assert by_task.low > 0.25  # as 20 independent tasks: clearly positive
    # As 11 problems: a draw without problem p (probability (10/11)^11 = 0.35) gains 0.
    assert by_problem.low == 0.0


def test_a_collapse_from_6_of_216_is_not_detectable_and_a_big_suite_sees_small_drops() -> None:
    # issue 20's example: the incumbent solves 6 of 216 episodes
    assert stats.smallest_detectable_drop(6 / 216, 216, alpha=0.05, power=0.8) == math.inf
    assert stats.smallest_detectable_drop(0.0, 216, alpha=0.05, power=0.8) == math.inf
    # p = 0.5, n = 2000: δ ≈ 2.486·sqrt(0.5/2000) ≈ 0.0393 (δ small, so q(1−q) ≈ p(1−p))
    d = stats.smallest_detectable_drop(0.5, 2000, alpha=0.05, power=0.8)
    assert d == pytest.approx(0.0393, abs=5e-4)
    assert stats.smallest_detectable_drop(0.5, 8000, alpha=0.05, power=0.8) < d / 1.9  # ~ 1/sqrt(n)


def test_fisher_exact_one_sided_by_hand() -> None:
    # 0 of 4 vs 4 of 4: P(X ≤ 0) for a hypergeometric(8, 4, 4) = 1 / C(8, 4) = 1/70
    assert stats.fisher_less(0, 4, 4, 4) == pytest.approx(1 / 70, abs=1e-12)
    assert stats.fisher_less(4, 4, 0, 4) == pytest.approx(1.0, abs=1e-12)
    assert stats.fisher_less(0, 0, 3, 5) == pytest.approx(1.0, abs=1e-12)  # no evidence at all


def test_mean_interval_takes_z_from_the_normal_quantile() -> None:
    # values 1, −1, 0, 0: mean 0, sample variance 2/3, half-width z·√(2/3)/√4
    e = stats.mean_interval([1.0, -1.0, 0.0, 0.0])
    assert e.value == 0.0 and e.high == pytest.approx(1.959964 * math.sqrt(2 / 3) / 2)
    assert stats.mean_interval([1.0, -1.0, 0.0, 0.0], 0.9).high == pytest.approx(
        1.644854 * math.sqrt(2 / 3) / 2, abs=1e-6
    )
    assert stats.mean_interval([0.5]) == stats.Estimate(0.5, 0.5, 0.5)


def test_the_detectable_drop_is_the_rise_read_from_the_other_end() -> None:
    # a drop from p by d has the variance of a rise from 1 − p by d: one calculation
    for p, n in ((0.6, 303), (0.25, 80), (0.9, 40)):
        drop = stats.smallest_detectable_drop(p, n, alpha=0.05, power=0.8)
        assert drop == stats.smallest_detectable_rise(1 - p, n, alpha=0.05, power=0.8)
    assert stats.episodes_needed(0.4, 0.1) == 303  # 6.182557 · (0.24 + 0.25) / 0.01 = 302.9


def test_every_z_comes_from_one_quantile_per_kind() -> None:
    # two-sided: ±1.959964 spans 95 %, ±1.644854 spans 90 %; one-sided power: z_0.95, z_0.80
    assert stats.z_two_sided(0.95) == pytest.approx(1.959964, abs=1e-6)
    assert stats.z_two_sided(0.9) == pytest.approx(1.644854, abs=1e-6)
    assert stats.power_quantiles(0.05, 0.8) == pytest.approx((1.644854, 0.841621), abs=1e-6)
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="confidence level"):
            stats.z_two_sided(bad)
        with pytest.raises(ValueError, match="alpha and power"):
            stats.power_quantiles(bad, 0.8)
    with pytest.raises(ValueError, match="confidence level"):
        stats.wilson_interval(1, 2, confidence=1.0)  # an interval of every value is no interval


def test_no_other_module_takes_a_normal_quantile() -> None:
    """The one statistics module: a second copy of a z (as `pipeline/sizing.py` had) fails."""
    src = Path(stats.__file__).parents[1]
    own = sorted(
        p.relative_to(src).as_posix()
        for p in src.rglob("*.py")
        if "data" not in p.relative_to(src).parts
        and re.search(r"\bNormalDist\b|\binv_cdf\b|scipy\.stats|\bnorm\.ppf\b", p.read_text())
    )
    assert own == ["eval/stats.py"]
