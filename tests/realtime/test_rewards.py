"""The feedback → reward mapping on hand-computed sessions, one signal family at a time."""

from __future__ import annotations

import pytest

from shadowrl.realtime.rewards import (
    Conduct,
    Reward,
    RewardConfig,
    Signal,
    session_reward,
    summarize,
)

CFG = RewardConfig()
OK = Conduct()


def reward(*signals: Signal, conduct: Conduct = OK, cfg: RewardConfig = CFG) -> float | None:
    return session_reward(signals, conduct, cfg).value


def test_tab_style_accept_and_reject_and_the_last_decision_counts() -> None:
    assert reward(Signal("accept")) == 1.0
    assert reward(Signal("reject")) == -1.0
    assert reward(Signal("accept"), Signal("reject")) == -1.0  # changed their mind
    assert reward(Signal("accept"), cfg=RewardConfig(accept=0.3)) == 0.3


def test_composer_style_kept_lines_revert_and_dissatisfied_followups() -> None:
    assert reward(Signal("keep", 0.75)) == pytest.approx(0.5, abs=1e-12)  # 1·(2·0.75 − 1)
    assert reward(Signal("keep", 0.0)) == -1.0
    assert reward(Signal("keep", 0.2), Signal("keep", 1.0)) == 1.0  # the last value
    assert reward(Signal("revert")) == -1.0
    assert reward(Signal("revert"), Signal("revert")) == -1.0  # once, however often
    # accept (+1) and two dissatisfied follow-ups (−0.5 each): 0
    one = Signal("followup_dissatisfied")
    assert reward(Signal("accept"), one, one) == 0.0
    assert reward(Signal("followup_satisfied"), cfg=RewardConfig(followup_satisfied=0.25)) == 0.25


def test_thumbs_and_weighted_combination() -> None:
    assert reward(Signal("thumbs_up")) == 0.5
    assert reward(Signal("thumbs_up"), Signal("thumbs_down")) == -0.5
    # accept 1 + keep 2·(2·0.5 − 1) = 0 + thumbs_down −0.5 + revert −1 → −0.5
    cfg = RewardConfig(keep=2.0)
    signals = (Signal("accept"), Signal("keep", 0.5), Signal("thumbs_down"), Signal("revert"))
    assert reward(*signals, cfg=cfg) == -0.5


def test_silence_is_unlabeled_by_default_and_scored_only_when_configured() -> None:
    assert reward() is None
    assert reward(Signal("silent")) is None
    assert reward(Signal("silent"), cfg=RewardConfig(silent=0.0)) == 0.0


def test_a_broken_tool_call_never_pays_more_than_a_rejection() -> None:
    broken = Conduct(broken_end=True)
    assert session_reward((Signal("accept"),), broken, CFG) == Reward(-1.0, capped=True)
    # silence was the dodge: a broken silent session is scored as rejected, not left out
    assert session_reward((Signal("silent"),), broken, CFG) == Reward(-1.0, capped=True)
    # already worse than a rejection: kept as it is (revert −1 + thumbs_down −0.5)
    worse = session_reward((Signal("revert"), Signal("thumbs_down")), broken, CFG)
    assert worse == Reward(-1.5, capped=False)


def test_clarifying_questions_are_tracked_and_optionally_penalised() -> None:
    asks = Conduct(clarifying=True, edited=False)
    assert reward(Signal("accept"), conduct=asks) == 1.0  # tracked only, by default
    assert reward(Signal("accept"), conduct=asks, cfg=RewardConfig(clarify=-0.25)) == 0.75
    with pytest.raises(ValueError):
        RewardConfig(clarify=0.5)  # a question must never be a bonus


def test_summary_counts_rates_and_leaves_silent_sessions_out_of_the_mean() -> None:
    signals = [
        [Signal("accept")],
        [Signal("reject")],
        [Signal("reject")],
        [Signal("silent")],
        [Signal("accept")],
    ]
    conducts = [OK, OK, Conduct(clarifying=True, edited=False), OK, Conduct(broken_end=True)]
    rewards = [session_reward(s, c, CFG) for s, c in zip(signals, conducts, strict=True)]
    s = summarize(signals, conducts, rewards)
    assert (s.sessions, s.labeled, s.silent, s.capped) == (5, 4, 1, 1)
    assert s.reward_mean == pytest.approx((1 - 1 - 1 - 1) / 4, abs=1e-12)  # the broken accept: −1
    assert s.accept_rate == pytest.approx(2 / 4, abs=1e-12)
    assert s.clarifying_rate == pytest.approx(1 / 5, abs=1e-12)
    assert s.broken_rate == pytest.approx(1 / 5, abs=1e-12)
    assert s.no_edit_rate == pytest.approx(1 / 5, abs=1e-12)
