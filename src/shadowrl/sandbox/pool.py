"""Warm pools: forks of a snapshot whose pid 1 already runs, so a claim is ready at once.

A fork is O(1) (an overlay mount), but its first exec pays for the namespaces and pid 1
(~74 ms here); later execs are a socket round trip (~4 ms). RL load is bursty (a step
opens G sandboxes per group at once), so a pool per prepared snapshot keeps `ready`
started forks and a background thread refills it, off the claim's path.

The pool is elastic: a claim that finds it empty (a miss, served by a cold fork)
doubles its target up to `max_ready`; a target whose surplus went unused for `idle_s`
halves down to `min_ready`, closing the sandboxes it no longer needs. A claimed sandbox
belongs to the caller, who closes it; the pool never hands one out twice.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from dataclasses import dataclass

from shadowrl.sandbox.base import PoolConfig, Sandbox, Snapshot

log = logging.getLogger(__name__)


@dataclass
class PoolStats:
    """What a pool did: claims served warm (hits) or by a cold fork (misses)."""

    hits: int = 0
    misses: int = 0
    started: int = 0
    closed_surplus: int = 0
    errors: int = 0


def start(sandbox: Sandbox) -> Sandbox:
    """Run a no-op so the sandbox's pid 1 is up; the caller's first exec is then warm."""
    sandbox.exec("true", timeout=30.0)
    return sandbox


class WarmPool:
    """Started forks of one snapshot, refilled by a background thread."""

    def __init__(self, snapshot: Snapshot, config: PoolConfig) -> None:
        self.snapshot, self.config = snapshot, config
        self.stats = PoolStats()
        self.target = config.min_ready
        self._ready: collections.deque[Sandbox] = collections.deque()
        self._cond = threading.Condition()
        self._last_miss_or_empty = time.monotonic()
        self._closed = False
        self._thread = threading.Thread(target=self._refill, daemon=True, name="sandbox-pool")
        self._thread.start()

    def claim(self) -> Sandbox:
        """A started sandbox if one is ready, else a fresh fork (started by its first exec)."""
        with self._cond:
            if self._closed:
                raise RuntimeError("claim() from a closed pool")
            if self._ready:
                self.stats.hits += 1
                box = self._ready.popleft()
                if not self._ready:
                    self._last_miss_or_empty = time.monotonic()
                self._cond.notify_all()
                return box
            self.stats.misses += 1
            self.target = min(self.config.max_ready, max(1, 2 * self.target))
            self._last_miss_or_empty = time.monotonic()
            self._cond.notify_all()
        return self.snapshot.fork()

    @property
    def ready(self) -> int:
        with self._cond:
            return len(self._ready)

    def _refill(self) -> None:
        while True:
            with self._cond:
                while not self._closed and not self._needs_work():
                    self._cond.wait(timeout=self.config.idle_s / 4)
                if self._closed:
                    return
                surplus = self._shrink()
                grow = len(self._ready) < self.target
            for box in surplus:
                box.close()
            if grow:
                self._add_one()

    def _needs_work(self) -> bool:
        return len(self._ready) < self.target or self._idle_too_long()

    def _idle_too_long(self) -> bool:
        quiet = time.monotonic() - self._last_miss_or_empty
        return self.target > self.config.min_ready and quiet > self.config.idle_s

    def _shrink(self) -> list[Sandbox]:
        """Halve an idle target; return the ready sandboxes beyond it (to close unlocked)."""
        if not self._idle_too_long():
            return []
        self.target = max(self.config.min_ready, self.target // 2)
        self._last_miss_or_empty = time.monotonic()
        surplus = []
        while len(self._ready) > self.target:
            surplus.append(self._ready.pop())
        self.stats.closed_surplus += len(surplus)
        return surplus

    def _add_one(self) -> None:
        try:
            box = start(self.snapshot.fork())  # the slow part, outside the lock
        except Exception as e:  # e.g. out of mounts or memory: claims still fork cold
            log.warning("warm pool could not start a sandbox: %s", e)
            with self._cond:
                self.stats.errors += 1
                self._cond.wait(timeout=1.0)
            return
        with self._cond:
            if self._closed or len(self._ready) >= self.target:
                extra: Sandbox | None = box
            else:
                self._ready.append(box)
                self.stats.started += 1
                extra = None
        if extra is not None:
            extra.close()

    def close(self) -> None:
        """Stop refilling and close every sandbox still ready (claimed ones are the caller's)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()
        with self._cond:
            left, self._ready = list(self._ready), collections.deque()
        for box in left:
            box.close()

    def __enter__(self) -> WarmPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
