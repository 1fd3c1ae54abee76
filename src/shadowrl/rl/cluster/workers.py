"""The environment workers as a pool of slots: fixed, or elastic with the episode queue.

Every episode (a training rollout or an eval sample) leases a slot on a live worker
for as long as it runs. In 'fixed' mode the pool is the `ray.env_workers` actors with
unbounded slots, each episode going to the least loaded one. In 'elastic' mode each
worker has `ray.elastic.slots` slots; an episode that finds none waits in the queue,
and the policy (`scaling.py`), applied on every lease and release and every `tick_s`,
starts new worker actors (placed by Ray wherever `ray.env_resources` fit) or drains
idle ones. A draining worker takes no new episode and is closed (its sandboxes) and
killed only once its last episode returned, so a shrink never loses an episode.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from shadowrl.rl.cluster.config import ElasticConfig
from shadowrl.rl.cluster.scaling import Load, ScaleState, decide

log = logging.getLogger(__name__)


@dataclass(eq=False)
class _Worker:
    handle: Any
    index: int
    inflight: int = 0
    ready: bool = False
    draining: bool = False


class WorkerPool:
    """Environment worker actors made by `spawn(index)`, leased one episode at a time."""

    def __init__(
        self,
        spawn: Callable[[int], Any],
        fixed: int,
        cfg: ElasticConfig,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.spawn, self.cfg, self.clock = spawn, cfg, clock
        self.elastic = cfg.mode == "elastic"
        self._workers: list[_Worker] = []
        self._next, self._queued = 0, 0
        self._waiters: list[asyncio.Future[None]] = []
        self._state = ScaleState()
        self._tasks: set[asyncio.Task[None]] = set()
        self._ticker: asyncio.Task[None] | None = None
        self.started = self.drained = 0
        self.drained_episodes = 0  # episodes run by workers since drained (for accounting)
        self._peak_workers = self._peak_queued = 0
        for _ in range(cfg.min_workers if self.elastic else fixed):
            self._add()

    # ---------------------------------------------------------------- what users call

    @property
    def handles(self) -> list[Any]:
        """The live (not draining) workers' actor handles, oldest first."""
        return [w.handle for w in self._workers if not w.draining]

    @property
    def size(self) -> int:
        return len(self.handles)

    def wait_ready(self) -> list[dict[str, Any]]:
        """Block until every worker started so far answers; their placements."""
        import ray

        placed: list[dict[str, Any]] = ray.get([w.handle.where.remote() for w in self._workers])
        for w in self._workers:
            w.ready = True
        return placed

    @contextlib.asynccontextmanager
    async def lease(self, avoid: Any = None) -> AsyncIterator[Any]:
        """A slot on a live worker (another than `avoid` when one is free) while it runs."""
        self.start()
        worker = await self._acquire(avoid)
        try:
            yield worker.handle
        finally:
            worker.inflight -= 1
            if worker.draining and worker.inflight == 0:
                self._spawn_task(self._retire(worker))
            self._wake()
            self._apply()

    def start(self) -> None:
        """Apply the policy every `tick_s` in this event loop (idempotent)."""
        if not self.elastic:
            return
        loop = asyncio.get_running_loop()
        if self._ticker is None or self._ticker.done() or self._ticker.get_loop() is not loop:
            self._ticker = loop.create_task(self._tick())
            for w in self._workers:  # what a finished event loop left half done
                if not w.ready:
                    self._spawn_task(self._ready(w))
                elif w.draining and w.inflight == 0:
                    self._spawn_task(self._retire(w))

    def metrics(self) -> dict[str, int]:
        """Worker counts for a step's record; the peaks are since the last call."""
        out = {
            "env_workers": self.size,
            "env_workers_peak": max(self._peak_workers, self.size),
            "episodes_queued_peak": self._peak_queued,
            "env_workers_started": self.started,
            "env_workers_drained": self.drained,
        }
        self._peak_workers, self._peak_queued = self.size, self._queued
        return out

    def close(self) -> None:
        """Kill every worker this pool started (draining or not)."""
        import ray

        if self._ticker is not None and not self._ticker.get_loop().is_closed():
            self._ticker.cancel()
        for w in self._workers:
            ray.kill(w.handle, no_restart=True)
        self._workers.clear()

    # ---------------------------------------------------------------- slots

    def _free(self, avoid: Any) -> _Worker | None:
        slots = self.cfg.slots if self.elastic else float("inf")
        open_ = [w for w in self._workers if w.ready and not w.draining and w.inflight < slots]
        others = [w for w in open_ if w.handle is not avoid] or open_
        return min(others, key=lambda w: (w.inflight, w.index), default=None)

    async def _acquire(self, avoid: Any) -> _Worker:
        self._queued += 1
        self._peak_queued = max(self._peak_queued, self._queued)
        try:
            while True:
                worker = self._free(avoid)
                if worker is not None:
                    worker.inflight += 1
                    return worker
                self._apply()  # the queue just grew: maybe a worker more
                waiter = asyncio.get_running_loop().create_future()
                self._waiters.append(waiter)
                await waiter
        finally:
            self._queued -= 1

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)

    # ---------------------------------------------------------------- growing and draining

    def _apply(self) -> None:
        if not self.elastic:
            return
        live = [w for w in self._workers if not w.draining]
        load = Load(self._queued, sum(w.inflight for w in live), len(live))
        target, self._state = decide(load, self.clock(), self._state, self.cfg)
        for _ in range(target - len(live)):
            self._spawn_task(self._ready(self._add()))
        for _ in range(len(live) - target):
            self._drain_one()
        self._peak_workers = max(self._peak_workers, self.size)

    def _add(self) -> _Worker:
        worker = _Worker(self.spawn(self._next), self._next)
        self._next += 1
        self.started += 1
        self._workers.append(worker)
        return worker

    async def _ready(self, worker: _Worker) -> None:
        import ray
        from ray.exceptions import RayError

        try:
            await worker.handle.where.remote()
        except RayError as e:  # it never came up: forget it, the policy may try again
            log.warning("env worker %d did not start: %s", worker.index, str(e).splitlines()[0])
            ray.kill(worker.handle, no_restart=True)
            if worker in self._workers:
                self._workers.remove(worker)
            return
        worker.ready = True
        log.info("env worker %d up (%d live)", worker.index, self.size)
        self._wake()

    def _drain_one(self) -> None:
        live = [w for w in self._workers if not w.draining]
        # the idlest, newest first: a starting worker is the cheapest to give back
        worker = min(live, key=lambda w: (w.ready, w.inflight, -w.index))
        worker.draining = True
        if worker.inflight == 0:
            self._spawn_task(self._retire(worker))

    async def _retire(self, worker: _Worker) -> None:
        import ray
        from ray.exceptions import RayError

        try:
            if worker.ready:
                self.drained_episodes += await worker.handle.close.remote()
        except RayError as e:
            log.warning("env worker %d died while draining: %s", worker.index, e)
        ray.kill(worker.handle, no_restart=True)
        if worker in self._workers:
            self._workers.remove(worker)
            self.drained += 1
        log.info("env worker %d drained (%d live)", worker.index, self.size)

    def _spawn_task(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _tick(self) -> None:
        while True:
            self._apply()
            await asyncio.sleep(self.cfg.tick_s)
