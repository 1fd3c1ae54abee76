"""Driver-side proxies: Ray actors behind the orchestrator's own small interfaces.

The orchestrator calls `trainer.train_groups`, `store.publish(trainer.state_dict())`,
`store.fetch`, `engine.update_weights` and `rollout(task, prepared, version)` exactly
as in one process. Here the weights never pass through the driver: `state_dict()` and
`fetch()` return `WeightsAt(version)`, a name for weights that live on the trainer and
in the store; `publish` asks the trainer actor to write that version, `update_weights`
asks every engine actor to fetch it.

Faults: a dead trainer raises `TrainerLost` (the run resumes from its checkpoint). A
dead environment worker or engine costs no step: each of its episodes is retried on
the next worker (kills fall on long episodes, so dropping them would bias the batch
toward short ones); one whose tries all fail is lost, masked out of its group and
counted in `Group.lost`, never scored 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shadowrl.rl.cluster.workers import WorkerPool
from shadowrl.rl.orchestrator import TrainerLost
from shadowrl.rl.rollout import Group, group_of
from shadowrl.types import Trajectory

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WeightsAt(Mapping[str, Any]):
    """Stands for the weights of `version` without holding them (they stay remote)."""

    version: int

    def __getitem__(self, key: str) -> Any:
        raise KeyError(f"{key}: weights v{self.version} live on the trainer and in the store")

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


class RemoteTrainer:
    """`TrainerService` (+ `save`) over the trainer actor."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor
        self.version, self.step_count = self.call(actor.counters.remote())

    def call(self, ref: Any) -> Any:
        """`ray.get(ref)`, with the trainer's death turned into `TrainerLost`."""
        import ray
        from ray.exceptions import RayActorError

        try:
            return ray.get(ref)
        except RayActorError as e:
            raise TrainerLost(str(e).strip().splitlines()[0]) from e

    def train_groups(self, groups: Sequence[Sequence[Trajectory]]) -> dict[str, float]:
        metrics: dict[str, float] = self.call(
            self.actor.train_groups.remote([list(g) for g in groups])
        )
        self.version, self.step_count = int(metrics["version"]), int(metrics["step"])
        return metrics

    def state_dict(self) -> WeightsAt:
        return WeightsAt(self.version)

    def save(self, root: str | Path, tokenizer: Any = None) -> Path:
        """Checkpoint on the trainer's node (`root` must be storage the driver sees too)."""
        return Path(self.call(self.actor.save.remote(str(root))))

    def weights(self) -> dict[str, Any]:
        return dict(self.call(self.actor.weights.remote()))


class RemotePublisher:
    """`WeightPublisher`: the trainer actor publishes; engines fetch by version themselves."""

    def __init__(self, trainer: RemoteTrainer) -> None:
        self.trainer = trainer

    def publish(self, state: Mapping[str, Any], version: int) -> dict[str, Any]:
        info: dict[str, Any] = self.trainer.call(self.trainer.actor.publish.remote(version))
        return info

    def fetch(self, version: int, base: Mapping[str, Any] | None = None) -> WeightsAt:
        return WeightsAt(version)


class EngineGroup:
    """`WeightSink` over every engine actor: each fetches the new version from the store.

    An engine that is dead or restarting is skipped (a restarted engine loads the newest
    published version itself) and counted in `skipped`.
    """

    def __init__(self, engines: Sequence[Any]) -> None:
        self.engines = list(engines)
        self.skipped = 0

    def update_weights(
        self, state: Mapping[str, Any], version: int, *, delta: bool = False
    ) -> float:
        import ray
        from ray.exceptions import RayActorError

        pauses = []
        for ref in [e.load.remote(version) for e in self.engines]:
            try:
                pauses.append(ray.get(ref))
            except RayActorError as e:
                self.skipped += 1
                log.warning("engine missed v%d: %s", version, str(e).splitlines()[0])
        return max(pauses, default=0.0)

    def prefix_hit_tokens(self) -> int:
        import ray
        from ray.exceptions import RayActorError

        total = 0
        for ref in [e.prefix_hit_tokens.remote() for e in self.engines]:
            with contextlib.suppress(RayActorError):  # a restarted engine counts afresh
                total += ray.get(ref)
        return total


LOST = object()  # an episode whose every try died with its worker or engines


class ClusterRollouts:
    """`RolloutFn`: a group's G episodes spread over the environment worker pool (tree
    rollouts: `trees.ClusterTreeRollouts`, which runs subtrees instead)."""

    def __init__(self, pool: WorkerPool, group_size: int, retries: int) -> None:
        self.pool, self.group_size, self.retries = pool, group_size, retries
        self.retried = 0  # tries repeated elsewhere after a worker or its engines died
        self.lost = 0

    @property
    def workers(self) -> list[Any]:
        return self.pool.handles

    async def __call__(self, task: Any, prepared: Any, version: int) -> Group:
        start = time.perf_counter()
        results = await asyncio.gather(
            *(self._episode(task, prepared) for _ in range(self.group_size)),
            return_exceptions=True,
        )
        kept = [r for r in results if r is not LOST]
        lost = len(results) - len(kept)
        self.lost += lost
        return self.group(task.instance_id, kept, version, time.perf_counter() - start, lost)

    def group(
        self, task_id: str, results: list[Any], version: int, wall_s: float, lost: int
    ) -> Group:
        """The group of one task's results; a lost episode is masked out of it."""
        return group_of(task_id, results, version, wall_s, lost)

    def run_on(self, worker: Any, task: Any, prepared: Any) -> Any:
        """The remote call of one unit of the group on `worker`."""
        return worker.episode.remote(task, prepared)

    async def _episode(self, task: Any, prepared: Any) -> Any:
        """One episode (or subtree); on a dead worker (or no live engine) another worker
        tries it."""

        def call(w: Any) -> Any:
            return self.run_on(w, task, prepared)

        return await retried(self.pool, call, self.retries, task.instance_id, self._count_retry)

    def _count_retry(self) -> None:
        self.retried += 1


async def retried(
    pool: WorkerPool,
    call: Callable[[Any], Awaitable[Any]],
    retries: int,
    what: str,
    on_retry: Callable[[], None] = lambda: None,
) -> Any:
    """`call(worker)` on a leased worker; after its worker (or every engine) died, again on
    another one, up to `retries` more times; LOST when every try died. Any other error is
    the episode's own (the harness or the task crashed) and is raised as in one process."""
    from ray.exceptions import RayActorError

    from shadowrl.rl.cluster.actors import EnginesUnavailable

    avoid = None
    for attempt in range(retries + 1):
        if attempt:
            await asyncio.sleep(0.5 * attempt)  # a restarting actor needs a moment
        async with pool.lease(avoid) as worker:
            try:
                return await call(worker)
            except RayActorError as e:
                why = str(e).strip().splitlines()[0]
            except EnginesUnavailable as e:
                why = str(e)
            avoid = worker
        if attempt < retries:
            on_retry()
        log.warning("%s: episode try %d died (%s)", what, attempt + 1, why)
    return LOST
