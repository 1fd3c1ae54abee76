"""Overlay layers with reference counts: what makes snapshot and fork O(1).

Every layer is its own mount under one private temp root:

    base   the workspace (and extra read-only dirs), bind-mounted read-only with an
           idmap that shows root-owned files as owned by the sandbox user, so it can
           edit them without us copying or chowning the pristine original;
    upper  a size-limited tmpfs holding one sandbox's writes (the disk quota); a
           snapshot remounts it read-only and it becomes a lower layer, shared by the
           snapshot and everything forked from it.

A layer is unmounted when the last sandbox or snapshot holding it lets go, and the
whole store at exit. A process killed before that (kill -9, the OOM killer) cannot
clean up, so its mounts, tmpfs memory included, would stay until reboot: the store's
root is named after its owner's pid, and the next process to open a store sweeps the
roots (and cgroups: `cgroups.sweep_orphan_groups`) of owners that are gone. Overlay
options name layers as /proc/self/fd/N, so a sandbox reading its own mountinfo learns
nothing about host paths.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import logging
import os
import re
import tempfile
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from shadowrl.sandbox import layerfs, syscalls
from shadowrl.sandbox.cgroups import CgroupLayout, find_cgroups, owner_alive, sweep_orphan_groups

SANDBOX_UID = 61_000  # host uid (and gid) every sandboxed process runs as
_PREFIX = "shadowrl-sb-"
_OWNED = re.compile(rf"{_PREFIX}(\d+)-")  # root names: shadowrl-sb-<owner pid>-<random>

log = logging.getLogger(__name__)
_OVERLAY_OPTS = "redirect_dir=off,index=off,metacopy=off,xino=off"


class Layer:
    """One directory of an overlay stack; `dir` is what overlayfs sees."""

    def __init__(self, mountpoint: Path, dir: Path, is_upper: bool) -> None:
        self.mountpoint, self.dir, self.is_upper = mountpoint, dir, is_upper
        self.refs = 0

    def used_bytes(self) -> int:
        st = os.statvfs(self.mountpoint)
        return (st.f_blocks - st.f_bfree) * st.f_frsize

    def is_empty(self) -> bool:
        with os.scandir(self.dir) as it:
            return next(it, None) is None


class LayerStore:
    """Creates, shares and frees layers and overlay mounts for one process."""

    def __init__(self, uid: int = SANDBOX_UID, parent: Path | None = None) -> None:
        self.uid = uid
        self.root = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=parent))
        self.root.chmod(0o711)  # bwrap, running as the sandbox user, must reach its mount
        self._lock = threading.RLock()  # release() may run from a GC finalizer
        self._ids = itertools.count()
        self._userns_fd: int | None = None
        self._live: set[Layer] = set()
        self.cgroups: CgroupLayout | None = find_cgroups()

    def new_path(self, prefix: str) -> Path:
        path = self.root / f"{prefix}{next(self._ids)}"
        path.mkdir()
        return path

    def base(self, host_dir: Path) -> Layer:
        """`host_dir` as a read-only layer whose root-owned files belong to the sandbox user."""
        with self._lock:
            if self._userns_fd is None:
                self._userns_fd = syscalls.idmap_userns(self.uid)
        target = self.new_path("b")
        syscalls.idmapped_bind(host_dir, target, self._userns_fd)
        return self._track(Layer(target, target, is_upper=False))

    def upper(self, size_mb: float, like: Path | None = None) -> Layer:
        """A fresh, empty writable layer on its own tmpfs of `size_mb`."""
        mnt = self.new_path("u")
        size_kb = max(1024, int(size_mb * 1024))
        opts = f"size={size_kb}k,nr_inodes={max(16_384, size_kb // 4)},mode=0700"
        syscalls.mount("tmpfs", mnt, "tmpfs", syscalls.MS_NOSUID | syscalls.MS_NODEV, opts)
        (mnt / "work").mkdir()
        (mnt / "data").mkdir(mode=0o755)
        if like is not None:
            os.chmod(mnt / "data", like.stat().st_mode & 0o7777)
        os.chown(mnt / "data", self.uid, self.uid)
        return self._track(Layer(mnt, mnt / "data", is_upper=True))

    def _track(self, layer: Layer) -> Layer:
        layer.refs = 1
        with self._lock:
            self._live.add(layer)
        return layer

    def freeze(self, layer: Layer) -> None:
        """Make an upper immutable, ready to serve as a shared lower layer."""
        flags = syscalls.MS_REMOUNT | syscalls.MS_RDONLY | syscalls.MS_NOSUID | syscalls.MS_NODEV
        syscalls.mount("tmpfs", layer.mountpoint, "tmpfs", flags)

    def squash(self, uppers: Sequence[Layer]) -> Layer:
        """One frozen layer equal to the (top-first) stack of frozen uppers."""
        size_mb = sum(layer.used_bytes() for layer in uppers) / 2**20 + 1
        out = self.upper(size_mb)
        layerfs.squash([layer.dir for layer in reversed(uppers)], out.dir)
        self.freeze(out)
        return out

    def acquire(self, layers: Iterable[Layer]) -> None:
        with self._lock:
            for layer in layers:
                layer.refs += 1

    def release(self, layers: Iterable[Layer]) -> None:
        """Drop one reference to each layer; unmount those nobody uses any more."""
        dead = []
        with self._lock:
            for layer in layers:
                layer.refs -= 1
                if layer.refs == 0:
                    dead.append(layer)
                    self._live.discard(layer)
        for layer in dead:
            _unmount_dir(layer.mountpoint)

    def mount_overlay(self, lowers: Sequence[Layer], upper: Layer, target: Path) -> None:
        """Mount lowers (top first) + upper on `target`."""
        dirs = [*(layer.dir for layer in lowers), upper.dir, upper.mountpoint / "work"]
        fds = [os.open(d, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC) for d in dirs]
        try:
            *low, up, work = (f"/proc/self/fd/{fd}" for fd in fds)
            opts = f"lowerdir={':'.join(low)},upperdir={up},workdir={work},{_OVERLAY_OPTS}"
            syscalls.mount("overlay", target, "overlay", syscalls.MS_NOSUID, opts)
        finally:
            for fd in fds:
                os.close(fd)

    def close(self) -> None:
        """Unmount whatever is left (at exit) and remove the temp root."""
        with self._lock:
            leftover, self._live = self._live, set()
        for layer in leftover:
            _unmount_dir(layer.mountpoint)
        for path in self.root.iterdir():
            _unmount_dir(path)
        with contextlib.suppress(OSError):
            self.root.rmdir()
        if self.cgroups is not None:
            self.cgroups.remove()


def sweep_orphans(parent: Path | None = None) -> int:
    """Unmount and remove the stores under `parent` (default: the temp dir) whose owner
    process is gone; returns how many. A live owner's store is never touched."""
    swept = 0
    for root in Path(parent or tempfile.gettempdir()).glob(f"{_PREFIX}*"):
        owner = _OWNED.match(root.name)
        if owner is None or owner_alive(int(owner[1])):
            continue
        try:
            paths = list(root.iterdir())
        except FileNotFoundError:  # another process's sweep (e.g. a sibling Ray worker) won
            continue
        for path in paths:
            _unmount_dir(path)
        with contextlib.suppress(OSError):
            root.rmdir()
            swept += 1
    if swept:
        log.info("removed %d sandbox store(s) left by processes that died", swept)
    return swept


def _unmount_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        syscalls.umount(path, lazy=True)
    with contextlib.suppress(OSError):
        path.rmdir()


_store: LayerStore | None = None
_store_lock = threading.Lock()


def get_store() -> LayerStore:
    """The process-wide store, created on first use and cleaned up at exit."""
    global _store
    with _store_lock:
        if _store is None:
            sweep_orphans()
            _store = LayerStore()
            sweep_orphan_groups(_store.cgroups)
            atexit.register(_store.close)
        return _store
