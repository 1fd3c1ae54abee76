"""Host-side access to a sandbox's files that can never leave the sandbox root.

The agent controls the workspace, so any path (or symlink in it) may point at
`/etc/shadow` or `../../other-sandbox`. Every open resolves relative to the root with
`openat2(RESOLVE_BENEATH)`: the kernel refuses `..` above the root, absolute symlinks
and magic links, with no window between check and use. Kernels without openat2 get a
resolve-then-compare fallback (fine for the `local` backend, which isolates nothing).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path, PurePosixPath

from shadowrl.sandbox.syscalls import openat2


def relative(path: str | Path, workdir: str) -> str:
    """`path` relative to the workspace root; absolute paths must lie under `workdir`."""
    p = PurePosixPath(path)
    if p.is_absolute():
        try:
            p = p.relative_to(workdir)
        except ValueError:
            raise PermissionError(errno.EACCES, f"path outside the workspace: {path}") from None
    rel = str(p)
    if rel in ("", "."):
        raise IsADirectoryError(errno.EISDIR, f"not a file path: {path!r}")
    return rel


def _open(root: Path, rel: str, flags: int, mode: int = 0o644) -> int:
    rootfd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return openat2(rootfd, rel, flags, mode)
    except OSError as e:
        if e.errno != errno.ENOSYS:
            raise
    finally:
        os.close(rootfd)
    real = os.path.realpath(root / rel)  # no openat2: check, then open without following
    if os.path.commonpath([real, os.path.realpath(root)]) != os.path.realpath(root):
        raise PermissionError(errno.EXDEV, f"path escapes the sandbox: {rel}")
    return os.open(real, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)


def read_file(root: Path, rel: str) -> bytes:
    fd = _open(root, rel, os.O_RDONLY)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def _make_parents(root: Path, rel: str, owner: tuple[int, int] | None) -> None:
    parts = PurePosixPath(rel).parts[:-1]
    for i in range(len(parts)):
        prefix = "/".join(parts[: i + 1])
        try:
            os.close(_open(root, prefix, os.O_PATH | os.O_DIRECTORY))
            continue
        except FileNotFoundError:
            pass
        parent = _open(root, "/".join(parts[:i]) or ".", os.O_PATH | os.O_DIRECTORY)
        try:
            os.mkdir(parts[i], 0o755, dir_fd=parent)
            if owner is not None:
                os.chown(parts[i], *owner, dir_fd=parent, follow_symlinks=False)
        finally:
            os.close(parent)


def write_file(root: Path, rel: str, data: str | bytes, owner: tuple[int, int] | None) -> None:
    """Create or replace `rel`, owned by `owner` (the sandbox user) when given."""
    _make_parents(root, rel, owner)
    fd = _open(root, rel, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    with os.fdopen(fd, "wb") as f:
        if owner is not None:
            os.fchown(f.fileno(), *owner)
        f.write(data.encode() if isinstance(data, str) else data)


def list_files(root: Path) -> list[str]:
    """Every regular file under `root` (symlinks not followed), relative and sorted."""
    found: list[str] = []
    stack = [""]
    while stack:
        rel = stack.pop()
        with os.scandir(root / rel if rel else root) as it:
            for entry in it:
                child = f"{rel}/{entry.name}" if rel else entry.name
                if entry.is_dir(follow_symlinks=False):
                    stack.append(child)
                elif entry.is_file(follow_symlinks=False):
                    found.append(child)
    return sorted(found)
