"""Probe, then extend: a group's attempts go to tasks that can carry an advantage.

On fresh instances a warm-started policy mostly solves a bug in every attempt or in none
(dev pilot 7: 35 of 48 groups of 8 without a solve), and a group whose attempts all
score alike teaches GRPO nothing. With `train.probe: P` each task is first tried P
times; only a task with a solve among them gets its other `group_size − P` attempts, and
the group is the P + the rest. A task the probe never solved comes back as its P-attempt
group, zero-advantage (no policy-gradient term; the step counts it), having cost P
episodes instead of `group_size`. The extension is rolled after the probe, so its episodes may
start at a later policy version; the loss corrects them like any stale token.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from shadowrl.rl.orchestrator import RolloutFn
from shadowrl.rl.rollout import Group

# (task, prepared, policy version, attempts) -> a graded group of that many episodes
RolloutN = Callable[[Any, Any, int, int], Awaitable[Group]]


def probing(rollout: RolloutN, probe: int, group_size: int) -> RolloutFn:
    """Groups of `group_size`, each extended only past a probe of `probe` that solved once."""
    if not 0 < probe < group_size:
        raise ValueError(f"a probe of {probe} needs 0 < probe < group_size ({group_size})")

    async def probed(task: Any, prep: Any, version: int) -> Group:
        first = await rollout(task, prep, version, probe)
        if not first.ok or max(first.rewards) <= 0:
            return first
        return merge(first, await rollout(task, prep, version, group_size - probe))

    return probed


def merge(first: Group, rest: Group) -> Group:
    """One group of both parts' episodes (the probe's first)."""
    return Group(
        first.task_id,
        first.trajectories + rest.trajectories,
        errors=first.errors + rest.errors,
        started_version=min(first.started_version, rest.started_version),
        wall_s=first.wall_s + rest.wall_s,
        lost=first.lost + rest.lost,
    )
