"""How a simulated user reacts to the agent's finished work: one pure function.

`react(outcome, rng, cfg, judge)` is the whole of a user's judgement, kept apart from
the HTTP of `users.py` so a test (or a planted preference the tests do not encode)
can drive it with nothing but an `Outcome` and a seeded generator:

* the `judge` decides accept or reject (the default accepts exactly when the task's
  hidden tests pass on the agent's diff);
* the decision is flipped with probability `cfg.flip` (people misjudge);
* the user stays silent with probability `cfg.silent` (no feedback at all);
* after an accept they keep a fraction of the changed lines, uniform in [`keep_low`, 1];
* after a reject they send a dissatisfied follow-up with probability `cfg.followup`
  (`followup_message`: "the tests still fail" only when they do).

The draws are made in that order, always the same number for the same branch, so one
seed gives one reaction to one outcome.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from shadowrl.experiments.config import UsersConfig

FOLLOWUP = "That is not right: the tests still fail. Please look again and fix it."
UNWANTED = "That is not what I wanted. Please look again and change it."


@dataclass(frozen=True)
class Outcome:
    """What the user sees when the agent is done."""

    resolved: bool  # the task's hidden tests pass on the agent's diff
    diff: str  # the agent's changes, a unified diff against the workspace
    version: int  # newest policy version that generated the agent's tokens (-1: none)
    turns: int = 0  # assistant turns the agent took (what a patience preference reads)
    tokens: int = 0  # tokens the agent generated (what a terseness preference reads)

    @property
    def diff_lines(self) -> int:
        """Lines the diff adds plus lines it removes (what a size preference reads)."""
        return sum(
            1
            for line in self.diff.splitlines()
            if line[:1] in "+-" and not line.startswith(("+++", "---"))
        )


def followup_message(outcome: Outcome) -> str:
    """The dissatisfied follow-up. It says the tests fail only when they do: a user who
    rejects passing work (a planted preference, a flip) objects to something else, and
    telling the agent otherwise would train it on a false signal."""
    return UNWANTED if outcome.resolved else FOLLOWUP


Judge = Callable[[Outcome], bool]  # accept?


def tests_judge(outcome: Outcome) -> bool:
    """The default user: accepts exactly when the hidden tests pass."""
    return outcome.resolved


@dataclass(frozen=True)
class Reaction:
    """What one user does about one outcome."""

    decision: Literal["accept", "reject"] | None  # None: silent
    judged: bool  # the judge's verdict before any flip
    flipped: bool
    kept: float | None = None  # kept-lines fraction, after an accept
    followup: bool = False  # a dissatisfied follow-up message, after a reject

    def feedback(self) -> list[dict[str, Any]]:
        """The `/v1/feedback` bodies (without session id), in the order they are sent."""
        if self.decision == "accept":
            return [{"signal": "accept"}, {"signal": "keep", "value": self.kept}]
        if self.decision == "reject":
            extra = [{"signal": "followup_dissatisfied"}] if self.followup else []
            return [{"signal": "reject"}, *extra]
        return []


def react(
    outcome: Outcome, rng: random.Random, cfg: UsersConfig, judge: Judge = tests_judge
) -> Reaction:
    """The user's reaction (see the module docstring)."""
    judged = judge(outcome)
    flipped = rng.random() < cfg.flip
    accept = judged != flipped
    if rng.random() < cfg.silent:
        return Reaction(None, judged, flipped)
    if accept:
        return Reaction("accept", judged, flipped, kept=round(rng.uniform(cfg.keep_low, 1.0), 4))
    return Reaction("reject", judged, flipped, followup=rng.random() < cfg.followup)
