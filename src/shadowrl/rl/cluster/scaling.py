"""The elastic worker pool's policy: how many environment workers the queue asks for.

RL load is bursty: a sync step sends every group's G episodes at once, then trains
while nothing runs. The policy is a pure function of the load (episodes waiting for a
slot, episodes running, workers), the time and its own small state, so it is tested by
hand with made-up clocks; `workers.py` applies it to Ray actors.

    wanted = ceil((queued + inflight) / slots), clamped to [min_workers, max_workers]

It grows at once (every episode of a burst waits on each missing worker) unless a
change happened less than `up_cooldown_s` ago, and shrinks slowly: only after the
workers had more slots than wanted for `idle_s` without a break (hysteresis: the lull
while the trainer steps shrinks nothing), by at most `down_step`, `down_cooldown_s`
after the last change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from shadowrl.rl.cluster.config import ElasticConfig


@dataclass(frozen=True)
class Load:
    """What the pool sees when it decides."""

    queued: int  # episodes waiting for a free slot
    inflight: int  # episodes running on a worker
    workers: int  # workers up or starting; draining ones are not counted


@dataclass(frozen=True)
class ScaleState:
    """The policy's memory between decisions."""

    changed_at: float = -math.inf  # when the target last changed
    spare_since: float | None = None  # since when fewer workers were wanted, unbroken


def wanted(load: Load, cfg: ElasticConfig) -> int:
    """Workers that give every running and waiting episode a slot, within [min, max]."""
    need = -(-(load.queued + load.inflight) // cfg.slots)
    return min(cfg.max_workers, max(cfg.min_workers, need))


def decide(load: Load, now: float, state: ScaleState, cfg: ElasticConfig) -> tuple[int, ScaleState]:
    """(target worker count, the new state) for `load` at time `now`."""
    n, want = load.workers, wanted(load, cfg)
    spare_since = None
    if want < n:
        spare_since = now if state.spare_since is None else state.spare_since
    since_change = now - state.changed_at
    target = n
    if n < cfg.min_workers or n > cfg.max_workers:  # bounds first (a resized config)
        target = min(cfg.max_workers, max(cfg.min_workers, n))
    elif want > n and since_change >= cfg.up_cooldown_s:
        target = want
    elif (
        spare_since is not None
        and now - spare_since >= cfg.idle_s
        and since_change >= cfg.down_cooldown_s
    ):
        target = max(want, n - cfg.down_step)
    if target == n:
        return n, ScaleState(state.changed_at, spare_since)
    return target, ScaleState(changed_at=now, spare_since=None)
