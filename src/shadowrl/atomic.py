"""Atomic writes: a reader (or a crash) sees the old file or directory or the new one, never half.

`write_file` replaces one file (a key file, an index, loop state); `build_dir` builds a
directory once under a temporary sibling name and renames it into place, the first of
several racing writers winning (cached envs, workspaces, converted models, downloads);
`commit_dir` renames a directory that several writers filled (a checkpoint's ranks)
into place, durably; `write_via` is `write_file` on an fsspec file system (a weight
store on S3 or in memory). All write beside the target, so the final rename never
crosses a file system.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Protocol


def _tmp_name(name: str) -> str:
    return f".{name}.{os.getpid()}-{os.urandom(4).hex()}.tmp"


def write_file(path: str | Path, data: str | bytes, *, mode: int = 0o666) -> Path:
    """Replace `path` with `data` (text as UTF-8). The file is created with `mode` less
    the umask (0o600 for a secret), so its content is never readable more widely."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(_tmp_name(path.name))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def write_json(path: str | Path, value: Any, *, indent: int | None = 1) -> Path:
    """`write_file` of `value` as JSON."""
    return write_file(path, json.dumps(value, indent=indent))


def build_dir(
    final: Path,
    build: Callable[[Path], None],
    *,
    complete: Callable[[Path], bool] = Path.exists,
) -> Path:
    """Run `build(tmp)` on a fresh sibling path, then rename it to `final`.

    A `final` that is already `complete` is returned as is; a rename lost to another
    writer (its `final` complete) keeps theirs. The temporary path never outlives the call.
    """
    if complete(final):
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".tmp-{final.name}-{os.getpid()}-{os.urandom(4).hex()}")
    try:
        build(tmp)
        try:
            os.rename(tmp, final)
        except OSError:
            if not complete(final):  # a real failure, not a lost race
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def commit_dir(tmp: Path, final: Path) -> Path:
    """Rename the finished directory `tmp` to `final` (a `final` already there is replaced),
    its files fsynced first and the parent after, so a power loss keeps it whole too."""
    for f in tmp.rglob("*"):
        if f.is_file():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
    _fsync_dir(tmp)
    if final.exists():
        shutil.rmtree(final)
    os.rename(tmp, final)
    _fsync_dir(final.parent)
    return final


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class FileSystem(Protocol):
    """What `write_via` needs of an fsspec file system."""

    def makedirs(self, path: str, exist_ok: bool) -> Any: ...
    def open(self, path: str, mode: str) -> IO[Any]: ...
    def mv(self, path1: str, path2: str) -> Any: ...


def write_via(fs: FileSystem, path: str, data: str | bytes) -> str:
    """`write_file` on an fsspec file system: a unique sibling written whole, then moved
    to `path` (a rename on a local disk; on an object store the one object appears whole)."""
    head, _, name = path.rpartition("/")
    if head:
        fs.makedirs(head, exist_ok=True)
    tmp = f"{head}/{_tmp_name(name)}" if head else _tmp_name(name)
    with fs.open(tmp, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)
    fs.mv(tmp, path)
    return path
