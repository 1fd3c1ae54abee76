"""One GRPO group: G agent episodes forked from one prepared sandbox, then graded.

The task's workspace is prepared once and snapshotted; each of the G episodes runs in
its own O(1) fork, concurrently, against the same policy (the inference engine batches
their decode steps together). Each finished sandbox is graded by the hidden-test
verifier (in a further fork, so the agent's state is never touched). A crashed
episode is recorded as such and its group is not trained on: a crash is not reward 0.
An episode *lost* with the machine that ran it (a scale-out backend's worker died and
every retry elsewhere failed too) is different: it says nothing about the policy, so it
is masked out (the group is trained on the rest) and counted in `Group.lost`.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from shadowrl.episode import EpisodeSpec, graded_episode
from shadowrl.rl.roots import SandboxRoots
from shadowrl.sandbox import Sandbox
from shadowrl.tasks import PreparedTask, Task
from shadowrl.types import Policy, Trajectory


@dataclass
class Group:
    """G graded trajectories of one task, or the errors that spoiled the group."""

    task_id: str
    trajectories: list[Trajectory]
    errors: list[str] = field(default_factory=list)
    started_version: int = 0
    wall_s: float = 0.0
    lost: int = 0  # episodes whose worker died for good: masked, never scored

    @property
    def ok(self) -> bool:
        return not self.errors and bool(self.trajectories)

    @property
    def rewards(self) -> list[float]:
        return [t.reward or 0.0 for t in self.trajectories]

    @property
    def flat(self) -> bool:
        """Every attempt scored alike: the group carries no advantage."""
        return len(set(self.rewards)) <= 1

    def min_version(self) -> int:
        """Oldest policy version that produced any token of the group."""
        versions = [
            v for t in self.trajectories for s in t.segments if (v := s.min_version()) is not None
        ]
        return min(versions, default=self.started_version)


async def _open(make: Callable[[], Sandbox]) -> Sandbox:
    """Create a sandbox in a worker thread without leaking it if we are cancelled meanwhile.

    Async RL cancels surplus groups at the end of a run; a sandbox whose creation
    finishes after the cancellation must still be closed, or its mounts outlive us.
    """
    fut = asyncio.ensure_future(asyncio.to_thread(make))
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        fut.add_done_callback(_close_if_made)
        raise


def _close_if_made(fut: asyncio.Future[Sandbox]) -> None:
    if not fut.cancelled() and fut.exception() is None:
        fut.result().close()


async def forked_episode(
    policy: Policy,
    fork: Callable[[], Sandbox],
    prepared: PreparedTask,
    tokenizer: Any,
    spec: EpisodeSpec,
) -> Trajectory:
    """One graded episode in a fresh sandbox from `fork` (closed afterwards)."""
    sandbox = await _open(fork)
    try:
        traj, _ = await graded_episode(policy, sandbox, prepared, tokenizer=tokenizer, spec=spec)
        return traj
    finally:
        await asyncio.to_thread(sandbox.close)


async def rollout_group(
    policy: Policy,
    task: Task,
    prepared: PreparedTask,
    *,
    group_size: int,
    tokenizer: Any,
    spec: EpisodeSpec,
    version: int = 0,
    roots: SandboxRoots | None = None,
) -> Group:
    """Run `group_size` episodes of `task` concurrently and grade them.

    With `roots` the task's root sandbox (and warm pool) outlives the group; without,
    a root is prepared for this group alone."""
    start = time.perf_counter()
    if roots is not None:
        results = await _episodes(policy, await roots.forker(prepared), prepared, tokenizer,
                                  spec, group_size)  # fmt: skip
        return group_of(task.instance_id, results, version, time.perf_counter() - start)
    root = await _open(lambda: spec.open_sandbox(prepared))
    try:
        fork = lambda: root.snapshot().fork()  # noqa: E731
        results = await _episodes(policy, fork, prepared, tokenizer, spec, group_size)
    finally:
        await asyncio.to_thread(root.close)
    return group_of(task.instance_id, results, version, time.perf_counter() - start)


async def _episodes(
    policy: Policy,
    fork: Callable[[], Sandbox],
    prepared: PreparedTask,
    tokenizer: Any,
    spec: EpisodeSpec,
    n: int,
) -> list[Trajectory | BaseException]:
    return await asyncio.gather(
        *(forked_episode(policy, fork, prepared, tokenizer, spec) for _ in range(n)),
        return_exceptions=True,
    )


def group_of(
    task_id: str,
    results: Sequence[Trajectory | BaseException],
    version: int,
    wall_s: float,
    lost: int = 0,
) -> Group:
    """The group of one task's episode results: crashes and error endings spoil it."""
    trajs = [r for r in results if isinstance(r, Trajectory)]
    errors = [
        "".join(traceback.format_exception(r)).strip()
        for r in results
        if isinstance(r, BaseException)
    ]
    errors += [f"episode ended with {t.end}" for t in trajs if t.end == "error"]
    return Group(task_id, trajs, errors, version, wall_s, lost)
