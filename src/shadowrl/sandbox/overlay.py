"""The `overlay` backend: namespaces + overlayfs layers, forkable in O(1).

A sandbox is an overlay mount: a private tmpfs upper over a stack of shared
read-only layers (see `layers.py`), with the pristine workspace at the bottom.

    snapshot(): unmount, freeze the upper (it joins the stack), mount a fresh upper
                (skipped when nothing changed since the last snapshot)
    fork():     mount a fresh upper over the snapshot's stack

Neither copies a file. Past `squash_depth` frozen layers (overlayfs allows ~500) the
frozen uppers are merged into one, in O(files changed).

Commands run as an unprivileged user in fresh namespaces (`bwrap.py`) inside the
sandbox's cgroup, through a pid 1 started at the first exec and kept until the overlay
is remounted (snapshot) or the sandbox closes (`supervisor.py`, `pid1.py`): a warm
exec is a socket round trip, not a bwrap launch. After every exec, anything left in
the cgroup that is not the sandbox's own bwrap and pid 1 is killed as well.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from shadowrl.sandbox import fsview, layerfs, seccomp, syscalls
from shadowrl.sandbox.base import ExecResult, Limits
from shadowrl.sandbox.bwrap import init_argv, sandbox_python
from shadowrl.sandbox.cgroups import Cgroup
from shadowrl.sandbox.layers import Layer, LayerStore, get_store
from shadowrl.sandbox.supervisor import Supervisor


def unavailable_reason() -> str | None:
    """Why this machine cannot run the overlay backend, or None if it can."""
    if platform.system() != "Linux":
        return "not Linux"
    if os.geteuid() != 0:
        return "not root (needed for overlay and idmapped mounts)"
    missing = [tool for tool in ("bwrap", "setpriv", "unshare") if shutil.which(tool) is None]
    if missing:
        return f"missing tools: {', '.join(missing)}"
    if sandbox_python() is None:
        return "no python3 in /usr/bin or /usr/local/bin (the sandbox's pid 1 needs one)"
    if "overlay" not in Path("/proc/filesystems").read_text():
        return "overlayfs not available"
    if not seccomp.supported():
        return f"no seccomp filter for {platform.machine()}"
    return None


@dataclass(frozen=True)
class _Spec:
    """What a root sandbox and every sandbox forked from it share."""

    store: LayerStore
    base: tuple[Layer, ...]  # workspace + extra read-only layers, top first
    limits: Limits
    workdir: str
    binds: Mapping[str, Layer] = field(default_factory=dict)  # sandbox path -> read-only layer
    squash_depth: int = 32
    path: tuple[str, ...] = ()  # dirs in front of PATH for every exec

    def held(self, lowers: tuple[Layer, ...]) -> tuple[Layer, ...]:
        """Every layer a sandbox or snapshot over `lowers` keeps a reference on."""
        return (*lowers, *self.binds.values())


class OverlaySnapshot:
    """A frozen layer stack; holds a reference on each layer until released."""

    def __init__(self, spec: _Spec, lowers: tuple[Layer, ...]) -> None:
        self._spec, self._lowers = spec, lowers
        # `sb.snapshot().fork()` drops the snapshot at once: free its layers on collection.
        self._finalizer = weakref.finalize(self, spec.store.release, spec.held(lowers))

    @property
    def depth(self) -> int:
        """Number of frozen upper layers in the stack (bounded by squashing)."""
        return sum(layer.is_upper for layer in self._lowers)

    def fork(self) -> OverlaySandbox:
        if not self._finalizer.alive:
            raise RuntimeError("fork() of a released snapshot")
        self._spec.store.acquire(self._spec.held(self._lowers))
        return OverlaySandbox(self._spec, self._lowers)

    def release(self) -> None:
        self._finalizer()  # runs at most once


class OverlaySandbox:
    """One isolated workspace: an overlay mount plus (from the first exec) a cgroup."""

    backend = "overlay"

    def __init__(self, spec: _Spec, lowers: tuple[Layer, ...]) -> None:
        """Takes over one reference on each of `spec.held(lowers)`."""
        self._spec, self._lowers = spec, lowers
        self.workdir = spec.workdir
        self._cgroup: Cgroup | None = None
        self._supervisor: Supervisor | None = None  # pid 1, from the first exec
        self._lock = threading.Lock()
        self._closed = False
        store = spec.store
        self._dir = store.new_path("s")
        self._upper = store.upper(self._disk_left_mb(), like=spec.base[0].dir)
        try:
            store.mount_overlay(lowers, self._upper, self._dir)
        except BaseException:
            store.release([self._upper, *spec.held(lowers)])
            self._dir.rmdir()
            raise

    @classmethod
    def create(
        cls,
        workspace: Path,
        limits: Limits,
        *,
        extra_ro_layers: Sequence[Path] = (),
        ro_binds: Mapping[str, Path] | None = None,
        workdir: str = "/workspace",
        squash_depth: int = 32,
        path: Sequence[str] = (),
    ) -> OverlaySandbox:
        """A root sandbox over `workspace` (left untouched) and `extra_ro_layers` beneath it."""
        store = get_store()
        base: list[Layer] = []
        binds: dict[str, Layer] = {}
        try:  # binds go through our mount root too: bwrap (the sandbox uid) must reach them
            for layer in (workspace, *extra_ro_layers):
                base.append(store.base(Path(layer).resolve(strict=True)))
            for inside, host in (ro_binds or {}).items():
                binds[inside] = store.base(Path(host).resolve(strict=True))
            spec = _Spec(store, tuple(base), limits, workdir, binds, squash_depth, tuple(path))
            return cls(spec, tuple(base))
        except BaseException:
            store.release([*base, *binds.values()])
            raise

    def _disk_left_mb(self) -> float:
        used = sum(layer.used_bytes() for layer in self._lowers if layer.is_upper)
        return max(1.0, self._spec.limits.disk_mb - used / 2**20)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("sandbox is closed")

    def exec(self, cmd: str, timeout: float = 30.0) -> ExecResult:
        with self._lock:  # one exec at a time: each ends by killing all but pid 1
            self._check_open()
            if self._supervisor is None or not self._supervisor.alive:
                self._supervisor = self._start()
            try:
                return self._supervisor.run(cmd, timeout, self._spec.limits.output_bytes)
            finally:
                if self._cgroup is not None:
                    self._cgroup.kill_all(keep=self._supervisor.pids)

    def _start(self) -> Supervisor:
        spec = self._spec
        if self._cgroup is None and spec.store.cgroups is not None:
            self._cgroup = Cgroup(spec.store.cgroups, self._dir.name, spec.limits)
        else:  # a previous pid 1 died or was stopped: clear whatever it left
            self._kill_all()
        argv = functools.partial(
            init_argv, merged=self._dir, workdir=spec.workdir, uid=spec.store.uid,
            limits=spec.limits, cgroup_procs=self._cgroup.procs_files if self._cgroup else [],
            ro_binds={k: layer.dir for k, layer in spec.binds.items()}, path=spec.path,
        )  # fmt: skip
        return Supervisor.start(argv)

    def _kill_all(self) -> None:
        """Stop pid 1 (if any) and everything else in the sandbox's cgroup."""
        if self._supervisor is not None:
            self._supervisor.stop()
        if self._cgroup is not None:
            self._cgroup.kill_all()

    def read_file(self, path: str | Path) -> bytes:
        self._check_open()
        return fsview.read_file(self._dir, fsview.relative(path, self.workdir))

    def write_file(self, path: str | Path, data: str | bytes) -> None:
        self._check_open()
        rel = fsview.relative(path, self.workdir)
        uid = self._spec.store.uid
        fsview.write_file(self._dir, rel, data, owner=(uid, uid))

    def list_files(self) -> list[str]:
        self._check_open()
        return fsview.list_files(self._dir)

    def changed_files(self) -> list[str]:
        self._check_open()
        uppers = [self._upper.dir, *(layer.dir for layer in self._lowers if layer.is_upper)]
        bases = [layer.dir for layer in self._spec.base]
        return layerfs.changed(uppers, bases, self._dir)

    def snapshot(self) -> OverlaySnapshot:
        with self._lock:
            self._check_open()
            if not self._upper.is_empty():
                self._freeze_upper()
            self._spec.store.acquire(self._spec.held(self._lowers))
            return OverlaySnapshot(self._spec, self._lowers)

    def _freeze_upper(self) -> None:
        """Move the upper into the lower stack and continue on a fresh, empty upper."""
        store = self._spec.store
        self._kill_all()  # pid 1 sees the old mount; the next exec starts one on the new
        syscalls.umount(self._dir)
        store.freeze(self._upper)
        lowers = (self._upper, *self._lowers)
        uppers = [layer for layer in lowers if layer.is_upper]
        if len(uppers) > self._spec.squash_depth:
            lowers = (store.squash(uppers), *self._spec.base)
            store.release(uppers)
        self._lowers = lowers
        self._upper = store.upper(self._disk_left_mb(), like=self._spec.base[0].dir)
        store.mount_overlay(self._lowers, self._upper, self._dir)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._kill_all()
        if self._cgroup is not None:
            self._cgroup.remove()
        try:
            syscalls.umount(self._dir)
        except OSError:  # still busy (e.g. a host thread's open file): detach it instead
            syscalls.umount(self._dir, lazy=True)
        self._dir.rmdir()
        self._spec.store.release([self._upper, *self._spec.held(self._lowers)])

    def __enter__(self) -> OverlaySandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
