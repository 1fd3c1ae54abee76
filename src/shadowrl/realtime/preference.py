"""The simulated users' planted preference, and the screen of tasks worth learning from.

A user who only accepted what the hidden tests pass would teach nothing the tests do
not already reward. So the users can hold a preference the tests do not encode: they
reject a diff that changes more than `max_diff_lines` lines (added + removed, counted
as `eval/behaviour.py` counts them), even when it passes. If training on their feedback
learns anything beyond the tests, the rate of such rejections falls; a control trained
on permuted feedback (`control.py`) must not show the same fall.

The screen keeps the tasks where the starting policy's outcome varies (the user accepts
some samples and not others): elsewhere every session of a cohort gets the same
reward and a mean-centred advantage of zero. It generalises `pipeline.stages.learnable`
from "tests pass" to "the user accepts".
"""

from __future__ import annotations

from collections.abc import Sequence

from shadowrl.eval.result import EvalResult, SampleResult
from shadowrl.tasks.task import Task


def within_preference(diff_lines: int, max_diff_lines: int | None) -> bool:
    """Whether a diff of `diff_lines` changed lines is small enough (None: any size)."""
    return max_diff_lines is None or diff_lines <= max_diff_lines


def user_accepts(resolved: bool, diff_lines: int, max_diff_lines: int | None) -> bool:
    """The user's judgement before noise: the tests pass and the diff is small enough."""
    return resolved and within_preference(diff_lines, max_diff_lines)


def rejected_by_preference(resolved: bool, diff_lines: int, max_diff_lines: int | None) -> bool:
    """A passing diff the user rejects only for its size (the planted preference bites)."""
    return resolved and not within_preference(diff_lines, max_diff_lines)


def sample_accepted(s: SampleResult, max_diff_lines: int | None) -> bool:
    return user_accepts(s.resolved, s.diff_lines, max_diff_lines)


def learnable(tasks: Sequence[Task], screen: EvalResult, max_diff_lines: int | None) -> list[Task]:
    """The `tasks` whose screened samples the user accepted sometimes but not always."""
    keep = set()
    for t in screen.tasks:
        accepted = sum(sample_accepted(s, max_diff_lines) for s in t.samples)
        if 0 < accepted < len(t.samples):
            keep.add(t.instance_id)
    return [t for t in tasks if t.instance_id in keep]


def accept_rate(screen: EvalResult, tasks: Sequence[Task], max_diff_lines: int | None) -> float:
    """The users' accept rate over the screen's samples of `tasks` (0.5 if it has none)."""
    ids = {t.instance_id for t in tasks}
    samples = [s for t in screen.tasks if t.instance_id in ids for s in t.samples]
    if not samples:
        return 0.5  # the worst case: the most variance a binary outcome has
    return sum(sample_accepted(s, max_diff_lines) for s in samples) / len(samples)
