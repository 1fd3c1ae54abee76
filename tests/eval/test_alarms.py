"""The gate's alarms on hand-computed numbers: rate rises that must also be significant,
and crashed episodes left out of the rates."""

from __future__ import annotations

import pytest

from shadowrl.eval.alarms import alarms, behaviour_count, crashed, rate, rate_test
from shadowrl.eval.result import EvalResult, SampleResult, TaskResult


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
    asks_more = with_questions(10)  # 0.50 vs 0.10: +0.40 > 0.10, Fisher p = 0.0069 < 0.05
    assert rate(asks_more, "clarifying") == pytest.approx(0.5, abs=1e-12)
    (alarm,) = alarms(asks_more, incumbent, None, **limits)
    assert alarm.name == "clarifying_rate_increase"
    assert alarm.value == pytest.approx(0.4, abs=1e-12)
    assert alarms(with_questions(4), incumbent, None, **limits) == []  # +0.10: at the limit
    assert alarms(incumbent, asks_more, None, **limits) == []  # asking less is no alarm
    # 0.30 vs 0.10 is over the limit but not significant (p = 0.118): no alarm
    assert alarms(with_questions(6), incumbent, None, **limits) == []


LIMITS = {"max_malformed_increase": 0.1, "max_no_edit_increase": 0.1,
          "max_clarifying_increase": 0.1, "max_kl": 1.0}  # fmt: skip


def edits(*ends: tuple[str, int, int]) -> EvalResult:
    """One task whose episodes ended as (end, tool calls, changed lines)."""
    samples = [SampleResult(sample=j, resolved=False, reward=0.0, end=end, tool_calls=calls,
                            diff_lines=lines) for j, (end, calls, lines) in enumerate(ends)]  # fmt: skip
    return EvalResult.model_construct(samples=len(ends), tasks=[
        TaskResult(instance_id="t", tier="easy", samples=samples)])  # fmt: skip


def test_a_rate_alarm_needs_a_rise_over_its_limit_that_is_significant() -> None:
    incumbent = edits(*[("submitted", 2, 2)] * 4)  # 0 of 4 edit nothing
    # 1 of 4: +0.25 > 0.10, but P(X ≤ 0), X ~ hypergeometric(8, 1, 4) = C(4,1)/C(8,1) = 1/2
    one = edits(("submitted", 1, 0), *[("submitted", 2, 2)] * 3)
    assert rate_test(one, incumbent, "no_edit").p == pytest.approx(0.5, abs=1e-12)
    assert alarms(one, incumbent, None, **LIMITS) == []
    # 4 of 4: +1.00, p = 1 / C(8, 4) = 1/70 ≈ 0.0143 < 0.05: fires, with its evidence
    none = edits(*[("submitted", 1, 0)] * 4)
    (alarm,) = alarms(none, incumbent, None, **LIMITS)
    assert alarm.name == "no_edit_rate_increase" and alarm.value == pytest.approx(1.0, abs=1e-12)
    assert alarm.test is not None and alarm.test.p == pytest.approx(1 / 70, abs=1e-12)
    assert "4/4 vs 0/4" in str(alarm) and "p = 0.0143 < 0.05" in str(alarm)
    assert alarms(none, incumbent, None, **LIMITS, alpha=0.01) == []  # 1/70 > 0.01


def test_an_episode_timed_out_before_acting_is_a_crash_not_a_no_edit() -> None:
    # three hit the wall-clock limit before any tool call, one edited: 0 of 1 edit nothing
    slow_box = edits(*[("timeout", 0, 0)] * 3, ("submitted", 2, 2))
    assert [crashed(s) for s in slow_box.tasks[0].samples] == [True, True, True, False]
    assert behaviour_count(slow_box, "no_edit") == (0, 1) and rate(slow_box, "no_edit") == 0.0
    # a timeout after it started calling tools is its own doing: it counts
    idle = edits(("timeout", 3, 0), ("submitted", 2, 2))
    assert behaviour_count(idle, "no_edit") == (1, 2)
    assert alarms(slow_box, edits(*[("submitted", 2, 2)] * 4), None, **LIMITS) == []
