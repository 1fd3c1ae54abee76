"""The `local` backend: a copied directory and a plain subprocess. It isolates nothing.

For machines without namespaces or root (macOS, CI containers): the same API, so
the rest of shadowrl runs anywhere, but commands see the whole host, the network
and every file the user can reach. Snapshot and fork copy the directory (O(size)).
Only rlimits (CPU time, file size, address space) and the wall-clock/output caps
apply.
"""

from __future__ import annotations

import contextlib
import filecmp
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path

from shadowrl.sandbox import fsview
from shadowrl.sandbox.base import ExecResult, Limits
from shadowrl.sandbox.process import run_captured

log = logging.getLogger(__name__)
_WARNING = (
    "SANDBOX BACKEND 'local' ISOLATES NOTHING: commands run on the host with your "
    "user's rights and network. Use it only with trusted commands."
)


def _copy_into(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)


class LocalSnapshot:
    """A full copy of a sandbox directory."""

    def __init__(
        self, src: Path, bases: Sequence[Path], limits: Limits, path: Sequence[str]
    ) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="shadowrl-local-snap-"))
        _copy_into(src, self._dir)
        self._bases, self._limits, self._path = bases, limits, path
        # `sb.snapshot().fork()` drops the snapshot at once: delete its copy on collection.
        self._finalizer = weakref.finalize(self, shutil.rmtree, self._dir, ignore_errors=True)

    def fork(self) -> LocalSandbox:
        if not self._finalizer.alive:
            raise RuntimeError("fork() of a released snapshot")
        return LocalSandbox(self._dir, self._bases, self._limits, self._path)

    def release(self) -> None:
        self._finalizer()  # runs at most once


class LocalSandbox:
    """A temp copy of the workspace; `workdir` is its host path."""

    backend = "local"

    def __init__(
        self, src: Path | None, bases: Sequence[Path], limits: Limits, path: Sequence[str] = ()
    ) -> None:
        """Copies `src`, or the `bases` stack (top first) when None, into a new temp dir."""
        self._root = Path(tempfile.mkdtemp(prefix="shadowrl-local-"))
        self._ws = self._root / "workspace"
        self._ws.mkdir()
        for layer in [src] if src is not None else reversed(bases):
            _copy_into(layer, self._ws)
        self._bases, self._limits, self._path = tuple(bases), limits, tuple(path)
        self.workdir = str(self._ws)
        self._closed = False

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
    ) -> LocalSandbox:
        """`workdir`, `squash_depth` do not apply; `ro_binds` stay at their host paths.

        `path` dirs go in front of the host PATH as given: they name host paths here,
        which is what they are where `ro_binds` map host dirs to themselves.
        """
        log.warning(_WARNING)
        if ro_binds:
            log.warning("local sandbox: ro_binds %s are reachable only at their host paths",
                        dict(ro_binds))  # fmt: skip
        return cls(None, [Path(workspace), *map(Path, extra_ro_layers)], limits, path)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("sandbox is closed")

    def exec(self, cmd: str, timeout: float = 30.0) -> ExecResult:
        self._check_open()
        lim = self._limits
        script = (
            f"ulimit -t {lim.cpu_seconds}; ulimit -f {lim.file_size_mb * 2048}; "
            f'ulimit -v {lim.memory_mb * 1024}; exec /bin/sh -c "$1"'
        )
        host_path = os.environ.get("PATH", "/usr/bin:/bin")
        env = {"PATH": ":".join([*self._path, host_path]), "HOME": str(self._root),
               "LANG": "C.UTF-8", "TERM": "dumb",
               "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip  # a stale .pyc: see bwrap.SANDBOX_ENV
        return run_captured(
            ["/bin/sh", "-c", script, "sh", cmd], timeout=timeout, output_bytes=lim.output_bytes,
            kill=_kill_group, cwd=self.workdir, env=env,
        )  # fmt: skip

    def read_file(self, path: str | Path) -> bytes:
        self._check_open()
        return fsview.read_file(self._ws, fsview.relative(path, self.workdir))

    def write_file(self, path: str | Path, data: str | bytes) -> None:
        self._check_open()
        fsview.write_file(self._ws, fsview.relative(path, self.workdir), data, owner=None)

    def list_files(self) -> list[str]:
        self._check_open()
        return fsview.list_files(self._ws)

    def changed_files(self) -> list[str]:
        self._check_open()
        before: dict[str, Path] = {}
        for base in reversed(self._bases):  # upper layers win
            before.update((p, base / p) for p in fsview.list_files(base))
        now = self.list_files()
        same = {p for p in now if p in before and filecmp.cmp(self._ws / p, before[p], False)}
        return sorted((set(now) | set(before)) - same)

    def snapshot(self) -> LocalSnapshot:
        self._check_open()
        return LocalSnapshot(self._ws, self._bases, self._limits, self._path)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            shutil.rmtree(self._root, ignore_errors=True)

    def __enter__(self) -> LocalSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
