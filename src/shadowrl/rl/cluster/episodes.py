"""Eval samples on the environment worker pool: the runner's `Episodes` on Ray.

`eval/runner.py` prepares each task, scores every sample and writes the result; this
only decides where a sample runs: on a leased slot of a worker (`workers.py`), which
forks its own root of the task and runs the same `graded_episode` as one process,
against the engine actors or a scripted reference policy. A sample whose worker dies
is retried on another, like a training episode; one whose every try died raises, and
the runner records it as a crash (never a silent 0).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from shadowrl.rl.cluster.proxies import LOST, retried
from shadowrl.rl.cluster.workers import WorkerPool
from shadowrl.tasks import PreparedTask, Task
from shadowrl.tasks.verify import Verdict
from shadowrl.types import Trajectory

Sample = Callable[[], Awaitable[tuple[Trajectory, Verdict]]]


class EpisodeLost(RuntimeError):
    """Every try of an eval sample died with its worker (or every engine)."""


class WorkerEpisodes:
    """Eval samples of policy `reference` (a scripted one) or, when None, of the engines."""

    def __init__(self, pool: WorkerPool, reference: str | None, retries: int) -> None:
        self.pool, self.reference, self.retries = pool, reference, retries

    @contextlib.asynccontextmanager
    async def open(self, task: Task, prepared: PreparedTask) -> AsyncIterator[Sample]:
        def call(worker: Any) -> Awaitable[tuple[Trajectory, Verdict]]:
            ref: Awaitable[tuple[Trajectory, Verdict]] = worker.graded.remote(
                self.reference, task, prepared
            )
            return ref

        async def sample() -> tuple[Trajectory, Verdict]:
            out = await retried(self.pool, call, self.retries, task.instance_id)
            if out is LOST:
                raise EpisodeLost(f"{task.instance_id}: all {self.retries + 1} tries died")
            graded: tuple[Trajectory, Verdict] = out
            return graded

        yield sample
