"""The RL orchestrator: rollouts keep running while the trainer steps.

Dataflow (one process by default; each box is a small interface, so the Ray backend,
`rl/cluster/`, puts each behind actors with this same loop)::

    TaskSource ── (task, prepared workspace) ──► rollout_group() × in-flight limit
                                                   │ G forks of one snapshot, G episodes
                                                   │ against the engine, graded by the
                                                   ▼ hidden-test verifier
                                              ready queue of Groups
                                                   │ drop groups older than max_staleness
                                                   ▼ (counted), skip zero-advantage ones
    Engine ◄── update_weights (in flight) ── WeightStore ◄── publish(delta) ── Trainer.step

`mode="async"` keeps `inflight_groups` groups running at all times, so episodes that
are waiting on slow tools or still decoding overlap with the optimizer step; tokens
sampled before a swap carry the older version and are importance-corrected by the
loss. `mode="sync"` launches exactly one step's groups, waits for all of them, trains,
and only then starts the next rollouts: the classic on-policy baseline.
"""

from __future__ import annotations

import asyncio
import random
import time
import traceback
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from shadowrl.rl.config import TrainConfig
from shadowrl.rl.rollout import Group
from shadowrl.types import Trajectory, WeightSink

# (task, prepared, current policy version) -> a graded group; see rollout.rollout_group.
RolloutFn = Callable[[Any, Any, int], Awaitable[Group]]
# An optional capability's own per-step metrics over the step's trajectories
# (self-summarisation's: `agent.summary.summary_metrics`, wired by `capabilities.py`).
EpisodeMetrics = Callable[[Sequence[Trajectory]], Mapping[str, float]]


class TrainerService(Protocol):
    """What the orchestrator needs from the trainer."""

    version: int

    def train_groups(self, groups: Sequence[Sequence[Any]]) -> dict[str, float]:
        """One optimizer step over graded trajectory groups; bumps `version`."""
        ...

    def state_dict(self) -> Mapping[str, Any]: ...


class TrainerLost(RuntimeError):
    """The trainer service died (its actor or node); its state is the last checkpoint.

    The run resumes from there: `run_rl` rebuilds the services and restarts the loop at
    the checkpoint's step, as a rerun of the command after a crash would.
    """


class WeightPublisher(Protocol):
    """Trainer → engine transport (the delta-compressed weight store)."""

    def publish(self, state: Mapping[str, Any], version: int) -> dict[str, Any]: ...

    def fetch(self, version: int, base: Mapping[str, Any] | None = None) -> Mapping[str, Any]: ...


class TrainTask(Protocol):
    """What the orchestrator reads of a task (`tasks.Task` has it): the id naming its group.

    Only a crashed rollout needs it (its failed group is named after the task); a bare
    string is taken as the id itself.
    """

    @property
    def instance_id(self) -> str: ...


def _task_id(task: TrainTask | str) -> str:
    return task if isinstance(task, str) else task.instance_id


class TaskSource(Protocol):
    """Where the orchestrator draws its next (task, prepared workspace) from, endlessly:
    `TaskSampler` (seeded epochs over a fixed list) or a stream of fresh instances that
    never repeats one (`tasks/family/stream.FamilyStream`). `position` counts draws."""

    position: int

    def __next__(self) -> tuple[TrainTask | str, Any]: ...

    def close(self) -> None:
        """Stop any work started ahead (a stream's prefetch); called when RL ends."""


class TaskSampler:
    """Endless seeded shuffle over prepared tasks, resumable by position."""

    def __init__(
        self, items: Sequence[tuple[TrainTask | str, Any]], seed: int, position: int = 0
    ) -> None:
        if not items:
            raise ValueError("no tasks to train on")
        self.items = list(items)
        self.seed = seed
        self.position = position

    def __iter__(self) -> Iterator[tuple[TrainTask | str, Any]]:
        return self

    def __next__(self) -> tuple[TrainTask | str, Any]:
        epoch, i = divmod(self.position, len(self.items))
        order = list(range(len(self.items)))
        random.Random(self.seed + epoch).shuffle(order)
        self.position += 1
        return self.items[order[i]]

    def close(self) -> None:
        """Nothing runs ahead of a fixed list."""


@dataclass
class LoopStats:
    """Counters reported every step (and saved for resume)."""

    groups_done: int = 0
    groups_failed: int = 0
    groups_stale: int = 0
    groups_zero_adv: int = 0
    groups_set_aside: int = 0  # zero-advantage, untrained (`informative_only`)
    episodes_lost: int = 0  # masked out of their groups (a dead worker), never scored
    staleness: list[int] = field(default_factory=list)


class OrchestratorConfig(BaseModel):
    """How rollouts and training steps interleave (`orchestrator:` in the config tree).

    Group size, groups per step, step count and the staleness bound are the
    trainer's (`train:`), since the batch and the importance correction depend on them.
    """

    model_config = ConfigDict(extra="forbid")
    mode: Literal["async", "sync"] = Field(
        "async", description="'async': rollouts overlap training; 'sync': rollout, then train."
    )
    inflight_groups: int = Field(
        3, ge=1, description="Groups kept running at once in async mode (≥ train.groups_per_step)."
    )
    informative_only: bool = Field(
        False,
        description="Train only on groups whose attempts scored differently: a group with no "
        "advantage is set aside (counted per step as `groups_set_aside`) and the step waits for "
        "another (DAPO's dynamic sampling). With a stream of fresh tasks each set-aside group "
        "costs one task.",
    )


class Orchestrator:
    """Runs rollouts and training steps; see the module docstring for the dataflow."""

    def __init__(
        self,
        *,
        cfg: OrchestratorConfig,
        train: TrainConfig,
        rollout: RolloutFn,
        engine: WeightSink,
        trainer: TrainerService,
        store: WeightPublisher,
        tasks: TaskSource,
        on_step: Callable[[int, dict[str, Any]], None] = lambda step, m: None,
        on_error: Callable[[Group], None] = lambda g: None,
        episode_metrics: EpisodeMetrics = lambda trajectories: {},
    ) -> None:
        if cfg.mode not in ("async", "sync"):
            raise ValueError(f"mode must be 'async' or 'sync', got {cfg.mode!r}")
        self.cfg, self.train, self.rollout, self.engine = cfg, train, rollout, engine
        self.trainer, self.store, self.tasks = trainer, store, tasks
        self.on_step, self.on_error = on_step, on_error
        self.episode_metrics = episode_metrics  # an optional capability's, per step
        self.stats = LoopStats()
        self._started, self._tokens = time.perf_counter(), 0  # run-average throughput
        self._ready: asyncio.Queue[Group] = asyncio.Queue()
        self._inflight: set[asyncio.Task[None]] = set()
        self._synced = trainer.version
        # Train steps and weight syncs run on one dedicated thread: spread over a pool's
        # threads, each thread's malloc arena keeps its own freed GBs of activations (an
        # RL run grew past 17 GB that way), and one thread also keeps them strictly ordered.
        self._trainer_thread = ThreadPoolExecutor(1, thread_name_prefix="shadowrl-trainer")

    async def run(self, start_step: int = 0) -> LoopStats:
        """Train until `cfg.steps`; returns the counters."""
        loop = asyncio.get_running_loop()
        self._started, self._tokens = time.perf_counter(), 0
        try:
            for step in range(start_step, self.train.steps):
                t0 = time.perf_counter()
                self._fill()
                groups, received = await self._collect(self.train.groups_per_step)
                t1 = time.perf_counter()
                metrics = await loop.run_in_executor(
                    self._trainer_thread,
                    self.trainer.train_groups,
                    [g.trajectories for g in groups],
                )
                t2 = time.perf_counter()
                sync = await loop.run_in_executor(self._trainer_thread, self._sync_weights)
                # Where the step's wall time went: waiting for trainable groups, the
                # optimizer step, the weight sync (rollouts run on beside the last two).
                times = {"wait_s": t1 - t0, "train_s": t2 - t1, "step_s": time.perf_counter() - t0}
                self.on_step(step, self._step_metrics(groups, received, metrics, sync, times))
        finally:
            for task in self._inflight:
                task.cancel()
            await asyncio.gather(*self._inflight, return_exceptions=True)
            self._trainer_thread.shutdown(wait=False)
        return self.stats

    def _fill(self) -> None:
        """Keep the pipeline full (async) or launch exactly one step's groups (sync)."""
        limit = self.cfg.inflight_groups if self.cfg.mode == "async" else self.train.groups_per_step
        while len(self._inflight) + self._ready.qsize() < limit:
            task, prepared = next(self.tasks)
            coro = self.rollout(task, prepared, self.trainer.version)
            fut = asyncio.create_task(self._run_group(_task_id(task), coro))
            self._inflight.add(fut)
            fut.add_done_callback(self._inflight.discard)  # also on cancellation

    async def _run_group(self, task_id: str, coro: Awaitable[Group]) -> None:
        try:
            group = await coro
        except Exception as e:  # a broken rollout is a failed group, never a lost one
            group = Group(task_id, [], ["".join(traceback.format_exception(e)).strip()])
        # leave the in-flight set *before* the group is visible as ready, so a collector
        # that wakes on it sees a free slot and can refill at once
        self._inflight.discard(asyncio.current_task())
        self._ready.put_nowait(group)

    async def _collect(self, n: int) -> tuple[list[Group], list[Group]]:
        """Wait for `n` trainable groups, dropping failed and too-stale ones (and, with
        `informative_only`, flat ones); also returns every group received on the way."""
        out: list[Group] = []
        received: list[Group] = []
        while len(out) < n:
            if self._ready.empty() and not self._inflight:
                self._fill()
            group = await self._ready.get()
            received.append(group)  # its tokens were generated, trained or not
            self.stats.groups_done += 1
            self.stats.episodes_lost += group.lost
            if self.cfg.mode == "async":  # a slot freed up: keep the pipeline full mid-step
                self._fill()
            if not group.ok:
                self.stats.groups_failed += 1
                self.on_error(group)
                self._fill()
                continue
            lag = self.trainer.version - group.min_version()
            if lag > self.train.batch.max_staleness:
                self.stats.groups_stale += 1
                self._fill()
                continue
            if self.cfg.informative_only and group.flat:
                self.stats.groups_set_aside += 1  # nothing to learn from: wait for another
                self._fill()
                continue
            self.stats.staleness.append(lag)
            out.append(group)
        return out, received

    def _sync_weights(self) -> dict[str, Any]:
        """Publish the new weights as a delta and swap them into the engine in flight."""
        version = self.trainer.version
        if version == self._synced:  # the step was skipped (e.g. only zero-advantage groups)
            return {}
        self._synced = version
        t0 = time.perf_counter()
        info = dict(self.store.publish(self.trainer.state_dict(), version))
        state = self.store.fetch(version)
        t1 = time.perf_counter()
        self.engine.update_weights(state, version)
        info["swap_ms"] = (time.perf_counter() - t1) * 1e3
        info["sync_ms"] = (time.perf_counter() - t0) * 1e3
        return info

    def _step_metrics(
        self,
        groups: list[Group],
        received_groups: list[Group],
        train: Mapping[str, float],
        sync: Mapping[str, Any],
        times: Mapping[str, float],
    ) -> dict[str, Any]:
        rewards = [r for g in groups for r in g.rewards]
        resolved = [bool(t.info.get("resolved")) for g in groups for t in g.trajectories]
        voided = [bool(t.info.get("voided_by")) for g in groups for t in g.trajectories]
        received = [t for g in received_groups for t in g.trajectories]
        tokens = sum(t.num_generated for t in received)
        self._tokens += tokens
        zero_adv = sum(1 for g in groups if g.flat)
        self.stats.groups_zero_adv += zero_adv
        lags = self.stats.staleness[-len(groups) :]
        return {
            **train,
            "reward": sum(rewards) / len(rewards),
            "pass_rate": sum(resolved) / len(resolved),
            # Over every group the step received: with `informative_only` the trained ones
            # are all mixed, so `pass_rate` alone says nothing about the policy.
            "pass_rate_sampled": sum(bool(t.info.get("resolved")) for t in received)
            / len(received),
            # Episodes the grader voided as tampering: a rising rate is a policy learning to cheat.
            "hack_rate": sum(voided) / len(voided),
            "gen_tokens": tokens,  # every received group's, set aside or stale ones too
            # Over the run so far: async groups are generated during earlier steps, so a
            # step's own tokens over its own wall time can read 0 or 10^5 tokens/s.
            "gen_tokens_per_s": self._tokens / (time.perf_counter() - self._started),
            **times,
            "staleness_mean": sum(lags) / len(lags),
            "staleness_max": max(lags),
            "zero_adv_groups": zero_adv,
            "groups_failed": self.stats.groups_failed,
            "groups_stale": self.stats.groups_stale,
            "groups_set_aside": self.stats.groups_set_aside,
            "episodes_lost": self.stats.episodes_lost,
            "version": self.trainer.version,
            **self.episode_metrics([t for g in groups for t in g.trajectories]),
            **{f"sync_{k}": v for k, v in sync.items() if isinstance(v, int | float)},
        }
