"""Learning from feedback, the parts with hand-computed answers: the power calculation,
the planted preference and the screen, the permuted-feedback control, the panel's paired
comparison and the users' outcome log."""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from eval.builders import from_tasks
from shadowrl.commands.config import load_config
from shadowrl.commands.errors import UsageError
from shadowrl.commands.realtime import user_pool
from shadowrl.eval import stats
from shadowrl.eval.gate import PinMismatch
from shadowrl.eval.result import EvalResult, SampleResult, TaskResult
from shadowrl.experiments import panel, power, report
from shadowrl.experiments.config import MeasuredRealtimeConfig
from shadowrl.experiments.control import permuted_rewards
from shadowrl.experiments.learning import outcome_recorder, preference_counts, read_outcomes
from shadowrl.experiments.preference import Preference, Work, accept_rate, learnable
from shadowrl.experiments.reaction import Reaction
from shadowrl.experiments.row import PreferenceCounts
from shadowrl.experiments.users import UserOutcome
from shadowrl.realtime.rewards import Conduct, Reward
from shadowrl.realtime.sessions import ProductionSession
from shadowrl.tasks.load import load_suite
from shadowrl.types import Trajectory

TINY = str(Path(__file__).parents[2] / "configs" / "realtime-tiny.yaml")

# ------------------------------------------------------------------ power


def test_sessions_needed_matches_the_hand_computed_size() -> None:
    # z = 1.644854 + 0.841621 = 2.486475, z² = 6.182557; p0 = 0.5, p1 = 0.6:
    # variance 0.25 + 0.24 = 0.49 -> n = 6.182557 · 0.49 / 0.01 = 302.9 -> 303.
    assert stats.episodes_needed(0.5, 0.1, alpha=0.05, power=0.8) == 303
    # p0 = 0.1, d = 0.2: 0.09 + 0.21 = 0.30 -> 6.182557 · 0.30 / 0.04 = 46.4 -> 47.
    assert stats.episodes_needed(0.1, 0.2, alpha=0.05, power=0.8) == 47


def test_sessions_needed_inverts_the_gates_detectable_drop() -> None:
    # stats.smallest_detectable_drop(p, n) is the same calculation solved for δ: a drop
    # from 0.6 to 0.5 has the variance of a rise from 0.5 to 0.6, so 303 episodes detect
    # it and 302 do not.
    assert stats.smallest_detectable_drop(0.6, 303, alpha=0.05, power=0.8) <= 0.1
    assert stats.smallest_detectable_drop(0.6, 302, alpha=0.05, power=0.8) > 0.1


def test_paired_sessions_needed_matches_connors_formula_by_hand() -> None:
    # ψ = 0.2, d = 0.1: (1.644854·√0.2 + 0.841621·√0.19)² / 0.01
    #   = (0.735601 + 0.366855)² / 0.01 = 1.215409 / 0.01 = 121.5 -> 122.
    assert stats.paired_episodes_needed(0.2, 0.1, alpha=0.05, power=0.8) == 122


@pytest.mark.parametrize(
    ("p0", "d", "alpha", "pw"),
    [(0.5, 0.0, 0.05, 0.8), (0.95, 0.1, 0.05, 0.8), (0.5, 0.1, 1.0, 0.8)],
)
def test_sessions_needed_refuses_impossible_inputs(
    p0: float, d: float, alpha: float, pw: float
) -> None:
    with pytest.raises(ValueError):
        stats.episodes_needed(p0, d, alpha=alpha, power=pw)


def test_the_plan_says_when_the_run_cannot_reach_its_power() -> None:
    # from 0.5, n·d² = z²·(0.25 + (0.5 + d)(0.5 − d)) = z²·(0.5 − d²), so
    # d = sqrt(0.5·z² / (n + z²)); z = 1.6449 + 0.8416 = 2.4865: d(16) = 0.3733
    assert stats.smallest_detectable_rise(0.5, 16) == pytest.approx(0.3733, abs=1e-3)
    assert stats.smallest_detectable_rise(0.5, 303) == pytest.approx(0.1, abs=1e-3)
    assert stats.smallest_detectable_rise(0.9, 2) == math.inf  # not even 0.9 → 1
    short = power.plan(0.5, 0.1, affordable_per_arm=16)
    assert (short.needed_per_arm, short.reachable) == (303, False)
    assert "cannot reach" in str(short)
    assert power.plan(0.5, 0.1, affordable_per_arm=303).reachable


# ---------------------------------------------------- preference and screen


def sample(i: int, resolved: bool, lines: int, turns: int = 4, tokens: int = 200) -> SampleResult:
    return SampleResult(sample=i, resolved=resolved, reward=float(resolved), diff_lines=lines,
                        turns=turns, tokens=tokens, end="submitted")  # fmt: skip


def result(
    tasks: Sequence[Sequence[tuple[Any, ...]]], ids: list[str] | None = None, **pins: Any
) -> EvalResult:
    """Task i (`ids[i]`, default task-i) has samples (resolved, changed lines[, turns[,
    tokens]]) `tasks[i]`."""
    rows = [
        TaskResult(
            instance_id=ids[i] if ids else f"task-{i}",
            tier="easy",
            samples=[sample(j, *outcome) for j, outcome in enumerate(row)],
        )
        for i, row in enumerate(tasks)
    ]
    return from_tasks(rows, **pins)


SMALL = Preference(max_diff_lines=4)
NONE = Preference()


def test_the_planted_preference_rejects_only_large_passing_diffs() -> None:
    assert SMALL.accepts(Work(True, 4, turns=9))
    assert not SMALL.accepts(Work(True, 5, turns=1))
    assert not SMALL.accepts(Work(False, 1, turns=1))
    assert NONE.accepts(Work(True, 500, 500, 500)) and not NONE.planted
    assert SMALL.rejects_passing(Work(True, 5)) and not SMALL.rejects_passing(Work(False, 5))
    assert SMALL.broken(Work(True, 5, 99, 999)) == ("diff_lines",)


def test_the_planted_patience_and_terseness_reject_passing_work_over_their_limits() -> None:
    brisk = Preference(max_turns=4)
    assert brisk.accepts(Work(True, 2, turns=4))  # read, edit, run the tests, submit
    assert not brisk.accepts(Work(True, 2, turns=5))  # one malformed call more
    assert brisk.rejects_passing(Work(True, 2, 5)) and not brisk.rejects_passing(Work(False, 2, 5))
    terse = Preference(max_tokens=190)
    assert terse.accepts(Work(True, 2, 4, tokens=190)) and not terse.accepts(Work(True, 2, 4, 191))
    every = Preference(max_diff_lines=1, max_turns=4, max_tokens=100)
    assert every.broken(Work(True, 2, 6, 101)) == ("diff_lines", "turns", "tokens")
    assert every.broken(Work(True, 1, 4, 100)) == ()
    # the users' config picks them; max_diff_lines keeps working beside them
    cfg = MeasuredRealtimeConfig(users={"max_turns": 4, "max_diff_lines": 3, "max_tokens": 9}).users
    assert Preference.of(cfg) == Preference(max_diff_lines=3, max_turns=4, max_tokens=9)


def test_the_screen_keeps_tasks_the_user_accepts_sometimes() -> None:
    tasks = load_suite("easy", "train")[:4]
    ids = [t.instance_id for t in tasks]
    screen = result(
        [
            [(True, 2), (True, 2)],  # always accepted: no signal
            [(True, 2), (False, 0)],  # sometimes: kept
            [(True, 2), (True, 9)],  # tests always pass, the preference splits it: kept
            [(False, 0), (False, 3)],  # never: no signal
        ],
        ids,
    )
    kept = [t.instance_id for t in learnable(tasks, screen, SMALL)]
    assert kept == ids[1:3]
    # Without the preference the third always passes, so only the second is left.
    assert [t.instance_id for t in learnable(tasks, screen, NONE)] == ids[1:2]


def test_the_screen_keeps_tasks_whose_turns_split_the_patient_user() -> None:
    tasks = load_suite("easy", "train")[:2]
    ids = [t.instance_id for t in tasks]
    # both always pass with 2-line fixes; the second once took 6 turns
    screen = result([[(True, 2, 4), (True, 2, 3)], [(True, 2, 4), (True, 2, 6)]], ids)
    assert learnable(tasks, screen, Preference(max_turns=4)) == tasks[1:]
    assert learnable(tasks, screen, SMALL) == []  # the diff-size preference sees nothing
    assert accept_rate(screen, tasks, Preference(max_turns=4)) == pytest.approx(3 / 4)


# --------------------------------------------------------------- control


def session(i: int, checkpoint: str, task: str) -> ProductionSession:
    traj = Trajectory(task_id=task, messages=(), steps=(), segments=(), end="submitted")
    return ProductionSession(f"s{i}", task, checkpoint, None, (), Conduct(), (), traj)


def test_permuted_rewards_shuffle_within_each_cohort_and_keep_the_unlabeled() -> None:
    sessions = [session(i, "ckpt-a" if i < 6 else "ckpt-b", f"t{i % 2}") for i in range(10)]
    values = [1.0, -1.0, None, 0.5, -1.0, 1.0, 2.0, None, -2.0, 3.0]
    rewards = [Reward(v) for v in values]
    out = permuted_rewards(sessions, rewards, "checkpoint", seed=3)
    assert [r.value for r in out].index(None) == 2 and out[7].value is None
    for cohort in (range(6), range(6, 10)):
        assert Counter(out[i].value for i in cohort) == Counter(values[i] for i in cohort)
    assert out != rewards  # a seed that leaves everything in place would test nothing
    assert out == permuted_rewards(sessions, rewards, "checkpoint", seed=3)
    # By task: sessions of t0 only trade with t0.
    by_task = permuted_rewards(sessions, rewards, "task", seed=3)
    for parity in (0, 1):
        idx = [i for i in range(10) if i % 2 == parity]
        assert Counter(by_task[i].value for i in idx) == Counter(values[i] for i in idx)


def test_the_control_needs_the_panel() -> None:
    with pytest.raises(ValueError, match=r"needs realtime\.panel"):
        MeasuredRealtimeConfig(control=True)
    assert MeasuredRealtimeConfig(control=True, panel={"tasks": 2, "samples": 1}).control


# ----------------------------------------------------------------- panel


def test_the_panel_compares_user_acceptance_in_pairs() -> None:
    # 4 tasks × 2 samples. a accepts 6 of 8, b accepts 3 of 8 (b's two passing 9-line
    # diffs are rejected by the preference, N = 4).
    a = result([[(True, 2), (True, 2)], [(True, 3), (False, 0)],
                [(True, 1), (True, 1)], [(False, 0), (True, 4)]])  # fmt: skip
    b = result([[(True, 2), (False, 0)], [(True, 9), (False, 0)],
                [(True, 1), (True, 9)], [(False, 0), (True, 4)]])  # fmt: skip
    c = panel.compare(a, b, SMALL, resamples=2000, seed=0)
    assert (c.a.accepted, c.b.accepted, c.b.rejected_by_preference) == (6, 3, 2)
    assert c.b.resolved == 5
    # Per-task accept rates a (1, .5, 1, .5), b (.5, 0, .5, .5): mean Δ = 1.5/4 = 0.375.
    assert c.delta.mean == pytest.approx(0.375)
    assert c.delta.low <= 0.375 <= c.delta.high
    # Paired episodes: a better on 3 (t0s1, t1s0, t2s1), worse on none; p = 2 · 1/8.
    assert (c.sign.better, c.sign.worse) == (3, 0)
    assert c.sign.p_two_sided == pytest.approx(0.25)
    assert "+0.375" in str(c)


def test_the_panel_refuses_replays_that_measured_different_things() -> None:
    a = result([[(True, 2)], [(False, 0)]])
    with pytest.raises(PinMismatch):
        panel.compare(a, result([[(True, 2)], [(False, 0)]], suite_hash="other"), NONE)


def test_the_panel_is_the_head_of_the_pool() -> None:
    pool = load_suite("easy", "train")[:5]
    assert panel.panel_tasks(pool, 3) == pool[:3]
    assert len(panel.panel_tasks(pool, 9)) == 5
    with pytest.raises(ValueError):
        panel.panel_tasks([], 3)


# ------------------------------------------------------------- outcomes


def test_outcomes_are_logged_and_the_preference_counted(tmp_path: Path) -> None:
    record = outcome_recorder(tmp_path)
    accept, reject = Reaction("accept", True, False, 1.0), Reaction("reject", False, False)

    def outcome(sid: str, resolved: bool, version: int, lines: int) -> UserOutcome:
        said = accept if resolved and lines < 4 else reject
        signals = ("accept", "keep") if said is accept else ("reject",)
        return UserOutcome(f"user-{sid}", sid, "t", resolved, version, signals, lines, said)

    record(outcome("c001-u000", True, 0, 2))
    record(outcome("c001-u001", True, 0, 12))
    record(outcome("c001-u002", False, 0, 30))
    record(outcome("c002-u000", True, 1, 40))
    record(outcome("c001-u001", True, 0, 12))  # a rerun
    outcomes = read_outcomes(tmp_path)
    ids = ["c001-u000", "c001-u001", "c001-u002", "c001-u999"]
    assert preference_counts(outcomes, ids, SMALL) == {
        "sessions": 3, "resolved": 2, "rejected_by_preference": 1, "over_diff_lines": 1,
        "over_turns": 0, "over_tokens": 0,
    }  # fmt: skip
    assert preference_counts(outcomes, ids, NONE)["rejected_by_preference"] == 0
    # the turns each user saw: c001-u000 took 3, c001-u001 took 7 (rows logged before
    # turns were recorded read as 0 turns)
    record(dataclasses.replace(outcome("c001-u000", True, 0, 2), turns=3))
    record(dataclasses.replace(outcome("c001-u001", True, 0, 12), turns=7))
    brisk = preference_counts(
        read_outcomes(tmp_path), ids, Preference(max_diff_lines=4, max_turns=5)
    )
    assert brisk == {"sessions": 3, "resolved": 2, "rejected_by_preference": 1,
                     "over_diff_lines": 1, "over_turns": 1, "over_tokens": 0}  # fmt: skip
    # cycle 2: a row written before the per-limit counts
    rows = [(1, PreferenceCounts(**brisk)), (2, PreferenceCounts(4, 3, 0))]
    table = "\n".join(report.preference_lines(rows))
    # Wilson 95 % of 1/2: centre (0.5 + 1.92/2)/(1 + 1.92) = 0.5, half-width 0.406
    assert "| 1 | 3 | 2 | 1/2 = 0.50 [0.09, 0.91] | 1 | 1 | 0 |" in table
    assert "| 2 | 4 | 3 | 0/3 = 0.00 [0.00, 0.56] | — | — | — |" in table
    assert "| all | 7 | 5 | 1/5 = 0.20" in table
    assert math.isclose(len(outcomes), 4)


# ------------------------------------------------------- the users' pool


def test_the_users_pool_is_narrowed_by_its_screen(tmp_path: Path) -> None:
    tasks = load_suite("easy", "train")[:3]
    ids = [t.instance_id for t in tasks]
    screen = result([[(True, 2), (True, 2)], [(True, 2), (False, 0)], [(False, 0)] * 2], ids)
    (tmp_path / "eval.json").write_text(screen.model_dump_json())
    argv = ["--realtime.users.suite=easy:train", "--realtime.users.limit=3"]
    config = load_config([TINY], [*argv, f"--realtime.users.screen={tmp_path / 'eval.json'}"])
    assert [t.instance_id for t in user_pool(config)] == ids[1:2]
    # the users' accept rate on the kept tasks' screened samples sets the plan's p0
    assert accept_rate(screen, tasks[1:2], NONE) == 0.5
    assert accept_rate(screen, tasks, NONE) == pytest.approx(3 / 6)
    plain = load_config([TINY], argv)
    assert len(user_pool(plain)) == 3
    with pytest.raises(UsageError, match="no such file"):
        user_pool(load_config([TINY], [*argv, f"--realtime.users.screen={tmp_path / 'x'}"]))
    # a terse user rejects every pass of task 1 (250 tokens): screened by the user it is
    # gone, screened by its tests it stays and the preference bites on it
    wordy = result([[(True, 2), (True, 2)], [(True, 2, 4, 250), (False, 0)], [(False, 0)] * 2], ids)
    (tmp_path / "wordy.json").write_text(wordy.model_dump_json())
    terse = [*argv, f"--realtime.users.screen={tmp_path / 'wordy.json'}",
             "--realtime.users.max_tokens=240"]  # fmt: skip
    with pytest.raises(UsageError, match="the users accept sometimes"):
        user_pool(load_config([TINY], terse))
    by_tests = user_pool(load_config([TINY], [*terse, "--realtime.users.screen_by=tests"]))
    assert [t.instance_id for t in by_tests] == ids[1:2]
    none = result([[(True, 2)] * 2] * 3, ids)  # always accepted: nothing to learn
    (tmp_path / "none.json").write_text(none.model_dump_json())
    with pytest.raises(UsageError, match="accept sometimes"):
        user_pool(load_config([TINY], [*argv, f"--realtime.users.screen={tmp_path / 'none.json'}"]))
