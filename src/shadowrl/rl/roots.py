"""Prepared root sandboxes kept across groups, with an optional warm pool each.

A task comes back step after step in RL, so re-creating its root sandbox for every
group wastes the mounts; and a group's G forks all start pid 1 at once on their first
exec (~74 ms each here). `SandboxRoots` keeps one root per prepared workspace (the
least recently used beyond `sandbox.pool.max_snapshots` is closed) and, with
`sandbox.pool.enabled`, a `WarmPool` of started forks of it (`sandbox/pool.py`), so a
claimed fork's first exec is warm. The in-process backend uses it when pools are on;
each Ray environment worker keeps its own.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from shadowrl.episode import EpisodeSpec
from shadowrl.sandbox import Sandbox, Snapshot, WarmPool
from shadowrl.tasks import PreparedTask


@dataclass
class _Root:
    sandbox: Sandbox
    snapshot: Snapshot
    pool: WarmPool | None

    def fork(self) -> Sandbox:
        return self.pool.claim() if self.pool is not None else self.snapshot.fork()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
        self.snapshot.release()
        self.sandbox.close()


class SandboxRoots:
    """One root (and pool) per prepared workspace, handing out new sandboxes of it."""

    def __init__(self, spec: EpisodeSpec) -> None:
        self.spec = spec
        self._roots: OrderedDict[Path, _Root] = OrderedDict()
        self._lock = asyncio.Lock()

    async def forker(self, prepared: PreparedTask) -> Callable[[], Sandbox]:
        """What makes a fresh sandbox of `prepared` (warm when pools are on; blocking, so
        call it in a thread); the caller closes each sandbox it makes."""
        return (await self._root(prepared)).fork

    async def _root(self, prepared: PreparedTask) -> _Root:
        async with self._lock:  # one root per workspace, however many episodes ask at once
            root = self._roots.get(prepared.workspace)
            if root is None:
                root = await asyncio.to_thread(self._open, prepared)
                self._roots[prepared.workspace] = root
                while len(self._roots) > self.spec.sandbox.pool.max_snapshots:
                    _, old = self._roots.popitem(last=False)
                    await asyncio.to_thread(old.close)  # forks out of it hold their own layers
            self._roots.move_to_end(prepared.workspace)
            return root

    def _open(self, prepared: PreparedTask) -> _Root:
        sandbox = self.spec.open_sandbox(prepared)
        snapshot = sandbox.snapshot()
        pool_cfg = self.spec.sandbox.pool
        return _Root(sandbox, snapshot, WarmPool(snapshot, pool_cfg) if pool_cfg.enabled else None)

    @property
    def pools(self) -> list[WarmPool]:
        return [r.pool for r in self._roots.values() if r.pool is not None]

    def close(self) -> None:
        for root in self._roots.values():
            root.close()
        self._roots.clear()
