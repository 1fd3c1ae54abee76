"""The judges besides the session's tests: a simulated user's, for experiments.

`realtime.branching.judge` picks one judge, built once (`build`):

* `tests` (`judge.SessionTests`): the session workspace's own tests through the one
  grader; the product loop's judge, the only one a real deployment has.
* `preference`: the planted preference of the experiment's simulated users. A
  continuation scores 1 when the user would accept it before any noise (the task's
  hidden tests pass on its diff and the user's planted limits on its `Work` hold),
  else 0.
* `reaction`: the simulated user's whole reaction function, noise included: the
  feedback that user would send about the continuation (`UserModel.react`), turned into
  a reward by the loop's own signal → reward mapping (`rewards.session_reward`, with
  the continuation's conduct), so a continuation is scored exactly as a whole session
  with that feedback would be. A silent reaction is no label: the continuation stays
  out of its group, as a silent session stays out of training. Each continuation's
  draws are seeded by (seed, session, turn, which continuation), so a resumed cycle
  hears the same reactions.

The last two judge with the experiment's user, which the product loop never imports:
the command injects it (`UserModel`, a few callables) where the loop builds its
judge. The user grades a continuation as it grades the sessions it brought: its diff
against the session's starting workspace, by the hidden tests of the task the session
was opened on (`UserModel.grader`, the one grader); a session on a task the users did
not bring is not judged (no branch point, counted). Neither judge is the policy's
opinion of itself, nor the recorded session's feedback.

What the user judges (`Work`) is read as the simulated users read a served session:
the diff, the assistant turns and generated tokens of the whole session (the recorded
prefix's and the continuation's own), and whether the tests pass.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shadowrl.agent import ToolSet
from shadowrl.realtime.config import JudgeName
from shadowrl.realtime.judge import Attempt, Judge, NotJudged, Scorer, SessionTests
from shadowrl.realtime.rebuild import Rebuilt
from shadowrl.realtime.rewards import RewardConfig, Signal, session_reward
from shadowrl.realtime.sessions import conduct_of
from shadowrl.serve import workspaces


@dataclass(frozen=True)
class Work:
    """What a user judges of one attempt: did the tests pass, and how the agent went about it."""

    resolved: bool  # the session's tests pass on its final files (the grader's verdict)
    diff: str  # its changes, a unified diff against the session's starting workspace
    turns: int  # assistant turns in the whole session
    tokens: int  # tokens generated in the whole session
    replies: tuple[str, ...]  # the assistant replies' text, in order (its conduct)

    @property
    def diff_lines(self) -> int:
        """Lines the diff adds plus lines it removes."""
        return sum(
            1
            for line in self.diff.splitlines()
            if line[:1] in "+-" and not line.startswith(("+++", "---"))
        )


def diff_of(point: Rebuilt, attempt: Attempt) -> str:
    """The attempt's changes against the session's starting workspace."""
    snap = workspaces.Snapshot(point.copy, point.copy, None, "")
    return workspaces.diff_of(workspaces.changes(attempt.sandbox, snap), snap)


def work_of(attempt: Attempt, diff: str, resolved: bool) -> Work:
    """The attempt as a user sees it, given its diff and whether the tests pass on it."""
    steps = attempt.trajectory.steps
    texts = tuple(s.text for s in steps)
    return Work(resolved, diff, len(steps), sum(s.num_generated for s in steps), texts)


@dataclass(frozen=True)
class Judged:
    """One attempt as a user judged it: its verdict before any noise beside the reward
    the judge gave (None: no label). The experiment logs these (`UserModel.log`) to tell a
    group's contrast in verdicts from the contrast its reactions' noise alone makes."""

    session_id: str
    turn: int
    index: int  # which continuation (judge.RECORDED: the session's own)
    accepted: bool
    reward: float | None
    resolved: bool  # what the verdict read: the tests' verdict and the whole session's
    tokens: int  # generated tokens (the recorded prefix's and the continuation's)


@dataclass(frozen=True)
class UserModel:
    """An experiment's simulated user, injected where the loop builds its judge."""

    # task id -> whether that task's hidden tests pass on a diff; None: not one of its tasks
    grader: Callable[[str], Callable[[str], bool] | None]
    accepts: Callable[[Work], bool]  # the planted preference, before any noise
    react: Callable[[Work, random.Random], Sequence[Signal]]  # the feedback it would send
    rewards: RewardConfig  # the loop's signal → reward weights (`realtime.rewards`)
    seed: int = 0
    log: Callable[[Judged], None] | None = None  # told every judgement (called from threads)


@dataclass(frozen=True)
class UserJudge:
    """`preference` or `reaction` (module docstring), by the injected user."""

    user: UserModel
    noisy: bool  # True: the user's reaction (`reaction`); False: its preference

    def scorer(self, point: Rebuilt) -> Scorer | NotJudged:
        task_id = point.record.record.trajectory.task_id
        grade = self.user.grader(task_id)
        if grade is None:
            return NotJudged("the session's task is not one the simulated users bring")
        return functools.partial(self.score, point, grade)

    def score(self, point: Rebuilt, grade: Callable[[str], bool], attempt: Attempt) -> float | None:
        diff = diff_of(point, attempt)
        work = work_of(attempt, diff, grade(diff))
        accepted = self.user.accepts(work)
        reward = self.react(point, attempt, work) if self.noisy else float(accepted)
        if self.user.log is not None:
            self.user.log(Judged(point.session_id, point.turn, attempt.index, accepted, reward,
                                 work.resolved, work.tokens))  # fmt: skip
        return reward

    def react(self, point: Rebuilt, attempt: Attempt, work: Work) -> float | None:
        """The reward of the user's reaction to `work`, seeded by the attempt."""
        rng = random.Random(f"{self.user.seed}:{point.session_id}:{point.turn}:{attempt.index}")
        signals = [Signal(s.kind, s.value) for s in self.user.react(work, rng)]
        schemas = ToolSet.from_names(point.agent.tools).schemas()
        return session_reward(signals, conduct_of(work.replies, schemas), self.user.rewards).value


def build_judge(name: JudgeName, tests: SessionTests, user: UserModel | None) -> Judge:
    """The judge `realtime.branching.judge` names; `user`: the experiment's simulated user
    (needed by `preference` and `reaction`, which judge with it)."""
    if name == "tests":
        return tests
    if user is None:
        raise ValueError(
            f"realtime.branching.judge {name!r} judges with the simulated users' "
            "preference: it needs them (--simulate-users); a real deployment has 'tests'"
        )
    return UserJudge(user, noisy=name == "reaction")
