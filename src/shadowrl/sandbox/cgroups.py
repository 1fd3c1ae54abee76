"""Per-sandbox control groups: memory, process-count and CPU caps, and a reliable kill.

rlimits are per process (and RLIMIT_NPROC is per uid, shared by every sandbox), so a
sandbox's memory and pid caps need a cgroup. We nest our groups under the cgroup the
host process already lives in (never above it, so an outer limit still applies).
cgroup v2 is used when it has the memory and pids controllers, else the v1 hierarchies;
with neither, `find_cgroups()` returns None and the caller falls back to rlimits.
Our parent group is named after our pid; a process killed before its exit handler ran
leaves it (and any sandbox processes in it) behind, so `sweep_orphan_groups` kills and
removes the groups of owners that are gone, as `layers.sweep_orphans` does for mounts.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import signal
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from shadowrl.sandbox.base import Limits

_ROOT = Path("/sys/fs/cgroup")
_CFS_PERIOD_US = 100_000
_OWNED = re.compile(r"shadowrl-(\d+)$")

log = logging.getLogger(__name__)


def owner_alive(pid: int) -> bool:
    """Whether process `pid` exists (a reused pid counts as alive: sweeping is conservative)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def _own_path(controller: str) -> str | None:
    """Our cgroup path in the hierarchy with `controller` ('' for v2)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, ctrls, path = line.split(":", 2)
        if controller in ctrls.split(","):
            return path
    return None


@dataclass(frozen=True)
class CgroupLayout:
    """Where new groups go: one parent dir per hierarchy, and the limit files to write."""

    parents: tuple[Path, ...]
    version: int

    def limit_files(self, limits: Limits) -> dict[str, str]:
        mem = str(limits.memory_mb << 20)
        quota = str(max(1000, int(limits.cpu_shares * _CFS_PERIOD_US)))
        if self.version == 2:
            return {
                "memory.max": mem,
                "memory.swap.max": "0",
                "pids.max": str(limits.pids),
                "cpu.max": f"{quota} {_CFS_PERIOD_US}",
            }
        return {
            "memory.limit_in_bytes": mem,
            "memory.memsw.limit_in_bytes": mem,
            "pids.max": str(limits.pids),
            "cpu.cfs_period_us": str(_CFS_PERIOD_US),
            "cpu.cfs_quota_us": quota,
        }

    def remove(self) -> None:
        """Remove our parent groups and any sandbox group still in them, at exit."""
        for parent in self.parents:
            for child in (p for p in parent.iterdir() if p.is_dir()):
                _kill_and_remove((child,))
            with contextlib.suppress(OSError):
                parent.rmdir()


def _v2_layout(base: str) -> CgroupLayout | None:
    own = _own_path("")
    if own is None:
        return None
    parent = Path(base) / own.lstrip("/") / f"shadowrl-{os.getpid()}"
    controllers = (Path(base) / own.lstrip("/") / "cgroup.controllers").read_text().split()
    if not {"memory", "pids"} <= set(controllers):
        return None
    try:  # our own group holds processes, so ours must be a sibling-free child with delegation
        parent.mkdir(exist_ok=True)
        enable = " ".join(f"+{c}" for c in ("memory", "pids", "cpu") if c in controllers)
        (parent / "cgroup.subtree_control").write_text(enable)
    except OSError:
        return None
    return CgroupLayout((parent,), 2)


def _v1_layout() -> CgroupLayout | None:
    parents = []
    for ctrl in ("memory", "pids", "cpu"):
        own = _own_path(ctrl)
        if own is None or not (_ROOT / ctrl / "cgroup.procs").exists():
            if ctrl == "cpu":
                continue  # CPU share is a nicety; memory and pids are the safety caps
            return None
        parents.append(_ROOT / ctrl / own.lstrip("/") / f"shadowrl-{os.getpid()}")
    try:
        for p in parents:
            p.mkdir(exist_ok=True)
    except OSError:
        return None
    return CgroupLayout(tuple(parents), 1)


def find_cgroups() -> CgroupLayout | None:
    """The usable cgroup layout on this machine, or None when we cannot create groups."""
    if not os.access(_ROOT, os.W_OK):
        return None
    for base in (_ROOT, _ROOT / "unified"):
        if (base / "cgroup.controllers").exists() and (layout := _v2_layout(str(base))):
            return layout
    return _v1_layout()


class Cgroup:
    """One sandbox's group in every hierarchy of a layout."""

    def __init__(self, layout: CgroupLayout, name: str, limits: Limits) -> None:
        self.dirs = tuple(parent / name for parent in layout.parents)
        for d in self.dirs:
            d.mkdir()
        for fname, value in layout.limit_files(limits).items():
            for d in self.dirs:
                if (d / fname).exists():
                    (d / fname).write_text(value)

    @property
    def procs_files(self) -> list[str]:
        """Files a launcher writes its pid to, to join the group before it execs."""
        return [str(d / "cgroup.procs") for d in self.dirs]

    def kill_all(self, keep: Collection[int] = ()) -> None:
        """SIGKILL every member but `keep` until none is left (pids may appear meanwhile)."""
        _kill_all(self.dirs, keep)

    def remove(self) -> None:
        _kill_and_remove(self.dirs)


def _pids(dirs: tuple[Path, ...]) -> set[int]:
    found: set[int] = set()
    for d in dirs:
        with contextlib.suppress(FileNotFoundError):
            found.update(int(p) for p in (d / "cgroup.procs").read_text().split())
    return found


def _kill_all(dirs: tuple[Path, ...], keep: Collection[int] = (), wait_s: float = 5.0) -> None:
    deadline = time.monotonic() + wait_s
    while (pids := _pids(dirs) - set(keep)) and time.monotonic() < deadline:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.002)


def _kill_and_remove(dirs: tuple[Path, ...]) -> None:
    _kill_all(dirs)
    for d in dirs:
        for _ in range(200):  # a just-killed task can keep the group busy for a moment
            try:
                d.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError as e:
                if e.errno != errno.EBUSY:
                    raise
                time.sleep(0.005)


def sweep_orphan_groups(layout: CgroupLayout | None) -> int:
    """Kill and remove the parent groups beside ours whose owner process is gone; returns
    how many. A live owner's groups are never touched."""
    if layout is None:
        return 0
    swept = 0
    for own in {parent.parent for parent in layout.parents}:
        for group in own.glob("shadowrl-*"):
            owner = _OWNED.match(group.name)
            if owner is None or owner_alive(int(owner[1])) or not group.is_dir():
                continue
            try:  # another process may be sweeping the same orphan: skip what it removed
                for child in [p for p in group.iterdir() if p.is_dir()]:
                    _kill_and_remove((child,))
                group.rmdir()
                swept += 1
            except FileNotFoundError:
                continue
            except OSError:  # still busy: the next sweep gets it
                continue
    if swept:
        log.info("removed %d sandbox cgroup tree(s) left by processes that died", swept)
    return swept
