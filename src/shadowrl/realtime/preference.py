"""The simulated users' planted preference, and the screen of tasks worth learning from.

A user who only accepted what the hidden tests pass would teach nothing the tests do
not already reward. So the users can hold a preference the tests do not encode, and
reject passing work that breaks it:

* `max_diff_lines`: the diff changes more lines than this (added + removed, counted as
  `eval/behaviour.py` counts them). The SFT policy's fixes all change exactly 2 lines,
  so for it this preference either never bites or rejects every fix;
* `max_turns`: the agent took more assistant turns than this before it finished (a
  user who watches it work wants it done without detours). The SFT policy's turns do
  vary on the same task (a malformed call costs a turn, a skipped test run saves one),
  so this one gives it something to learn.

Both read only what an eval sample (`SampleResult.diff_lines`, `.turns`) and a served
session (its diff, its steps) both record, so the live users and the panel judge alike.
If training on the users' feedback learns anything beyond the tests, the rate of such
rejections falls; a control trained on permuted feedback (`control.py`) must not show
the same fall.

The screen keeps the tasks where the starting policy's outcome varies (the user accepts
some samples and not others): elsewhere every session of a cohort gets the same
reward and a mean-centred advantage of zero. It generalises `pipeline.stages.learnable`
from "tests pass" to "the user accepts".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shadowrl.eval.result import EvalResult, SampleResult
from shadowrl.realtime.config import UsersConfig
from shadowrl.tasks.task import Task


@dataclass(frozen=True)
class Preference:
    """Limits passing work must also meet to be accepted (None: no such limit)."""

    max_diff_lines: int | None = None
    max_turns: int | None = None

    @classmethod
    def of(cls, users: UsersConfig) -> Preference:
        return cls(users.max_diff_lines, users.max_turns)

    @property
    def planted(self) -> bool:
        return self.max_diff_lines is not None or self.max_turns is not None

    def broken(self, diff_lines: int, turns: int) -> tuple[str, ...]:
        """The limits work of this size exceeds ('diff_lines', 'turns'); empty: none."""
        over = {"diff_lines": (diff_lines, self.max_diff_lines), "turns": (turns, self.max_turns)}
        return tuple(name for name, (v, most) in over.items() if most is not None and v > most)

    def accepts(self, resolved: bool, diff_lines: int, turns: int) -> bool:
        """The user's judgement before noise: the tests pass and no limit is broken."""
        return resolved and not self.broken(diff_lines, turns)

    def rejects_passing(self, resolved: bool, diff_lines: int, turns: int) -> bool:
        """Passing work the user rejects only for the preference (it bites)."""
        return resolved and bool(self.broken(diff_lines, turns))


def sample_accepted(s: SampleResult, pref: Preference) -> bool:
    return pref.accepts(s.resolved, s.diff_lines, s.turns)


def learnable(tasks: Sequence[Task], screen: EvalResult, pref: Preference) -> list[Task]:
    """The `tasks` whose screened samples the user accepted sometimes but not always."""
    keep = set()
    for t in screen.tasks:
        accepted = sum(sample_accepted(s, pref) for s in t.samples)
        if 0 < accepted < len(t.samples):
            keep.add(t.instance_id)
    return [t for t in tasks if t.instance_id in keep]


def accept_rate(screen: EvalResult, tasks: Sequence[Task], pref: Preference) -> float:
    """The users' accept rate over the screen's samples of `tasks` (0.5 if it has none)."""
    ids = {t.instance_id for t in tasks}
    samples = [s for t in screen.tasks if t.instance_id in ids for s in t.samples]
    if not samples:
        return 0.5  # the worst case: the most variance a binary outcome has
    return sum(sample_accepted(s, pref) for s in samples) / len(samples)
