"""The gate's power, the alarms and the post-deploy watch on hand-computed numbers."""

from __future__ import annotations

import math

import pytest

from shadowrl.eval.result import EvalResult, SampleResult, TaskResult
from shadowrl.realtime.checks import (
    LiveCounts,
    alarms,
    clarifying_rate,
    fisher_less,
    min_detectable_drop,
    watch,
)


def test_a_collapse_from_6_of_216_is_not_detectable_and_a_big_suite_sees_small_drops() -> None:
    # issue 20's example: the incumbent solves 6 of 216 episodes
    assert min_detectable_drop(6 / 216, 216, alpha=0.05, power=0.8) == math.inf
    assert min_detectable_drop(0.0, 216, alpha=0.05, power=0.8) == math.inf
    # p = 0.5, n = 2000: δ ≈ 2.486·sqrt(0.5/2000) ≈ 0.0393 (δ small, so q(1−q) ≈ p(1−p))
    d = min_detectable_drop(0.5, 2000, alpha=0.05, power=0.8)
    assert d == pytest.approx(0.0393, abs=5e-4)
    assert min_detectable_drop(0.5, 8000, alpha=0.05, power=0.8) < d / 1.9  # ~ 1/sqrt(n)


def test_fisher_exact_one_sided_by_hand() -> None:
    # 0 of 4 vs 4 of 4: P(X ≤ 0) for a hypergeometric(8, 4, 4) = 1 / C(8, 4) = 1/70
    assert fisher_less(0, 4, 4, 4) == pytest.approx(1 / 70, abs=1e-12)
    assert fisher_less(4, 4, 0, 4) == pytest.approx(1.0, abs=1e-12)
    assert fisher_less(0, 0, 3, 5) == pytest.approx(1.0, abs=1e-12)  # no evidence at all


def test_watch_rolls_back_on_a_significant_accept_drop_only() -> None:
    old = LiveCounts(sessions=8, accepted=7, decided=8, broken=0, clarifying=0)
    bad = watch(LiveCounts(8, 0, 8, 0, 0), old, alpha=0.05)
    assert bad.roll_back and "accept rate dropped" in bad.reason
    noisy = watch(LiveCounts(8, 5, 8, 0, 0), old, alpha=0.05)
    assert not noisy.roll_back
    broken = watch(LiveCounts(8, 7, 8, 6, 0), old, alpha=0.05)
    assert broken.roll_back and "broken-call rate rose" in broken.reason


def with_questions(asked: int) -> EvalResult:
    """5 tasks × 4 unsolved episodes that all edit; the first `asked` ask a question."""
    tasks = [
        TaskResult(instance_id=f"t{i}", tier="easy", samples=[
            SampleResult(sample=j, resolved=False, reward=0.0, end="submitted", diff_lines=3,
                         clarifying=4 * i + j < asked)
            for j in range(4)
        ])
        for i in range(5)
    ]  # fmt: skip
    return EvalResult.model_construct(samples=4, tasks=tasks)  # the rates read only these


def test_the_clarifying_question_alarm_fires_on_the_pinned_eval() -> None:
    limits = {"max_malformed_increase": 0.1, "max_no_edit_increase": 0.1,
              "max_clarifying_increase": 0.1, "max_kl": 1.0}  # fmt: skip
    incumbent = with_questions(2)
    asks_more = with_questions(6)  # 0.30 vs 0.10: +0.20 > 0.10
    assert clarifying_rate(asks_more) == pytest.approx(0.3, abs=1e-12)
    (alarm,) = alarms(asks_more, incumbent, None, **limits)
    assert alarm.name == "clarifying_rate_increase"
    assert alarm.value == pytest.approx(0.2, abs=1e-12)
    assert alarms(with_questions(4), incumbent, None, **limits) == []  # +0.10: at the limit
    assert alarms(incumbent, asks_more, None, **limits) == []  # asking less is no alarm
