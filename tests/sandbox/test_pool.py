"""Warm pools: claims are started, independent forks; the pool grows on misses,
shrinks when idle, and leaves nothing behind when closed."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from shadowrl.sandbox import create_sandbox
from shadowrl.sandbox.overlay import OverlaySandbox
from shadowrl.sandbox.pool import PoolConfig, WarmPool

from .conftest import BACKENDS, needs_overlay


def _until(cond: Callable[[], bool], limit_s: float = 60.0) -> None:
    """Poll `cond` (bounded); the pool refills on its own thread."""
    deadline = time.monotonic() + limit_s
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.02)


@pytest.mark.parametrize("backend", BACKENDS)
def test_claims_are_started_independent_forks_of_the_snapshot(
    workspace: Path, backend: str
) -> None:
    root = create_sandbox(workspace, backend)
    root.write_file("state.txt", "prepared")
    snap = root.snapshot()
    with WarmPool(snap, PoolConfig(min_ready=2, max_ready=2)) as pool:
        _until(lambda: pool.ready == 2)
        a, b = pool.claim(), pool.claim()
        assert a is not b and pool.stats.hits == 2 and pool.stats.misses == 0
        if isinstance(a, OverlaySandbox):  # pid 1 is up before the caller's first exec
            assert a._supervisor is not None and a._supervisor.alive
        a.write_file("state.txt", "changed in a")
        assert b.read_file("state.txt") == b"prepared"
        assert b.exec("cat state.txt").stdout == "prepared"
        a.close()
        b.close()
    snap.release()
    root.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_pool_grows_on_misses_and_shrinks_when_idle(workspace: Path, backend: str) -> None:
    root = create_sandbox(workspace, backend)
    snap = root.snapshot()
    config = PoolConfig(min_ready=1, max_ready=4, idle_s=0.5)
    with WarmPool(snap, config) as pool:
        _until(lambda: pool.ready == 1)
        # a burst far faster than a refill (a fork + an exec): the first claim is a hit,
        # later ones mostly misses, each doubling the target up to max_ready
        burst = [pool.claim() for _ in range(8)]
        stats = pool.stats
        assert stats.hits >= 1 and stats.misses >= 1 and stats.hits + stats.misses == 8
        assert 2 <= pool.target <= 4
        grown = pool.target
        _until(lambda: pool.ready == grown or pool.stats.closed_surplus > 0)
        _until(lambda: pool.target == 1 and pool.ready == 1)  # idle: halved back to min_ready
        assert pool.stats.closed_surplus >= 1
        for box in burst:
            assert box.exec("echo ok").stdout.strip() == "ok"  # claimed ones stay the caller's
            box.close()
    snap.release()
    root.close()


@needs_overlay
def test_close_frees_every_ready_sandbox(workspace: Path) -> None:
    root = create_sandbox(workspace, "overlay")
    snap = root.snapshot()
    pool = WarmPool(snap, PoolConfig(min_ready=3, max_ready=3))
    _until(lambda: pool.ready == 3)
    dirs = [box._dir for box in pool._ready]  # type: ignore[attr-defined]
    mounts = Path("/proc/self/mountinfo").read_text
    assert all(str(d) in mounts() for d in dirs)
    pool.close()
    assert not any(str(d) in mounts() or d.exists() for d in dirs)
    with pytest.raises(RuntimeError, match="closed pool"):
        pool.claim()
    snap.release()
    root.close()
