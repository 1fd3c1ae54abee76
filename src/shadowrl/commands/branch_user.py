"""The simulated users as the branching stage's judge (`realtime.branching.judge`
'preference' or 'reaction'), for `shadowrl realtime --simulate-users`.

The product loop never imports the experiments, so this is where the two meet: the
experiment's user (`experiments/reaction.py`'s `react` and `measure.planted_judge`
over the planted preference of `realtime.users`) is wrapped as the loop's
`realtime.judges.UserModel`. It grades a continuation's diff as the users grade the
sessions they bring (`users.grade_diff`: the task's hidden tests on its pristine
workspace with the diff applied, the grader of training and eval), and its reaction is
drawn with the users' own settings (flip, silence, kept lines, follow-ups). Every
judgement is appended to `log` (`realtime/branch_judged.jsonl` in a run): the verdict
before noise beside the reward, so a group's contrast in verdicts can be told from the
contrast the reaction's noise alone makes (`docs/results/realtime-branching/read.py`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shadowrl.episode import EpisodeSpec
    from shadowrl.experiments.config import UsersConfig
    from shadowrl.realtime import RewardConfig, Signal, UserModel, Work
    from shadowrl.tasks import PreparedTask

JUDGED = "branch_judged.jsonl"  # the judgements' log, in the run's realtime/ folder
Prepared = Callable[[str], "PreparedTask | None"]  # task id -> its prepared task; None: unknown


def user_model(
    users: UsersConfig, rewards: RewardConfig, spec: EpisodeSpec, prepared: Prepared, seed: int,
    log: Path | None = None,
) -> UserModel:  # fmt: skip
    """The simulated user of `users` behind the loop's judge seam (module docstring)."""
    from shadowrl.experiments import (
        Outcome,
        Preference,
        grade_diff,
        jsonl_appender,
        planted_judge,
        react,
    )
    from shadowrl.realtime import Signal, UserModel

    judge = planted_judge(Preference.of(users))

    def outcome(w: Work) -> Outcome:
        return Outcome(w.resolved, w.diff, -1, w.turns, w.tokens)

    def grader(task_id: str) -> Callable[[str], bool] | None:
        task = prepared(task_id)
        if task is None:
            return None
        return lambda diff: grade_diff(task, diff, spec).resolved

    def reaction(w: Work, rng: random.Random) -> Sequence[Signal]:
        said = react(outcome(w), rng, users, judge)
        return [Signal(b["signal"], b.get("value")) for b in said.feedback()]

    noted = None if log is None else jsonl_appender(log)  # scorers run in threads
    return UserModel(grader, lambda w: judge(outcome(w)), reaction, rewards, seed, noted)
