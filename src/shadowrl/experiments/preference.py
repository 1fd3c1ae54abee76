"""The simulated users' planted preference, and the screen of tasks worth learning from.

A user who only accepted what the hidden tests pass would teach nothing the tests do
not already reward. So the users can hold a preference the tests do not encode, and
reject passing work that breaks it (`Preference`, limits on a `Work` record):

* `max_diff_lines`: the diff changes more lines than this (added + removed, counted as
  `eval/behaviour.py` counts them);
* `max_turns`: the agent took more assistant turns than this before it finished (a
  user who watches it work wants it done without detours);
* `max_tokens`: the agent generated more tokens than this (prose and calls: a user
  who reads along wants it terse).

Which one gives a policy something to learn depends on where its behaviour varies on
the same task; `docs/STATUS.md` ("Learning from feedback") says what SmolLM2 after SFT
does. Each reads only what an eval sample (`SampleResult.diff_lines`, `.turns`,
`.tokens`) and a served session (its diff, its steps, its generated tokens) both
record, so the live users and the panel judge alike.
If training on the users' feedback learns anything beyond the tests, the rate of such
rejections falls; a control trained on permuted feedback (`control.py`) must not show
the same fall.

The screen keeps the tasks where the starting policy's outcome varies (the user accepts
some samples and not others; with `users.screen_by: tests`, its tests pass on some,
for a preference that a policy's per-task habit breaks on every passing sample):
elsewhere every session of a cohort gets the same reward and a mean-centred advantage
of zero. It generalises `pipeline.stages.learnable`
from "tests pass" to "the user accepts".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shadowrl.eval import EvalResult, SampleResult
from shadowrl.experiments.config import UsersConfig
from shadowrl.tasks import Task


@dataclass(frozen=True)
class Work:
    """What a user judges: did the tests pass, and how the agent went about it."""

    resolved: bool  # the task's hidden tests pass on the agent's diff
    diff_lines: int  # lines the diff adds plus lines it removes
    turns: int = 0  # assistant turns before the user judged
    tokens: int = 0  # tokens the agent generated (prose and calls)

    @classmethod
    def of_sample(cls, s: SampleResult) -> Work:
        return cls(s.resolved, s.diff_lines, s.turns, s.tokens)


MEASURES = ("diff_lines", "turns", "tokens")  # what a limit can read, in this order


@dataclass(frozen=True)
class Preference:
    """Limits passing work must also meet to be accepted (None: no such limit)."""

    max_diff_lines: int | None = None
    max_turns: int | None = None
    max_tokens: int | None = None

    @classmethod
    def of(cls, users: UsersConfig) -> Preference:
        return cls(users.max_diff_lines, users.max_turns, users.max_tokens)

    @property
    def planted(self) -> bool:
        return any(getattr(self, f"max_{m}") is not None for m in MEASURES)

    def broken(self, work: Work) -> tuple[str, ...]:
        """The measures of `work` over their limit ('diff_lines', 'turns', 'tokens')."""
        limits = {m: getattr(self, f"max_{m}") for m in MEASURES}
        return tuple(
            m for m, most in limits.items() if most is not None and getattr(work, m) > most
        )

    def accepts(self, work: Work) -> bool:
        """The user's judgement before noise: the tests pass and no limit is broken."""
        return work.resolved and not self.broken(work)

    def rejects_passing(self, work: Work) -> bool:
        """Passing work the user rejects only for the preference (it bites)."""
        return work.resolved and bool(self.broken(work))


def sample_accepted(s: SampleResult, pref: Preference) -> bool:
    return pref.accepts(Work.of_sample(s))


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
