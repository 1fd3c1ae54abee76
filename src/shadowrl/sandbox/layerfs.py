"""Reading overlayfs layers directly: squashing a stack and finding what changed.

An upper layer records a deletion as a whiteout (a 0/0 character device) and a
directory that hides everything below it as "opaque" (xattr trusted.overlay.opaque).
Squashing applies layers bottom to top into one directory and keeps those markers,
so the result still hides files of the workspace beneath it. Both operations cost
O(files changed), never O(workspace).
"""

from __future__ import annotations

import contextlib
import filecmp
import os
import shutil
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

_OPAQUE = "trusted.overlay.opaque"


def is_whiteout(st: os.stat_result) -> bool:
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def is_opaque(path: Path) -> bool:
    try:
        return os.getxattr(path, _OPAQUE, follow_symlinks=False) == b"y"
    except OSError:
        return False


def _is_whiteout_path(path: Path) -> bool:
    try:
        return is_whiteout(path.lstat())
    except FileNotFoundError:
        return False


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _copy_entry(src: Path, dst: Path, st: os.stat_result) -> None:
    if is_whiteout(st):
        os.mknod(dst, stat.S_IFCHR | 0o000, 0)
    elif stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(src), dst)
    else:
        shutil.copy2(src, dst, follow_symlinks=False)
    os.chown(dst, st.st_uid, st.st_gid, follow_symlinks=False)


def _merge_dir(src: Path, dst: Path) -> None:
    for entry in os.scandir(src):
        s, d = Path(entry.path), dst / entry.name
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            # A directory over a whiteout or file hid everything beneath it in the stack
            # (lookup stops there), so it must become opaque once the layers are merged.
            covers = d.is_symlink() or (d.exists() and not d.is_dir())
            if is_opaque(s) or covers or _is_whiteout_path(d):
                _remove(d)
                d.mkdir()
                os.setxattr(d, _OPAQUE, b"y", follow_symlinks=False)
            elif not d.exists():
                d.mkdir()
            _merge_dir(s, d)
            shutil.copystat(s, d, follow_symlinks=False)
            os.chown(d, st.st_uid, st.st_gid)
        else:
            _remove(d)
            _copy_entry(s, d, st)


def squash(layers_bottom_up: Sequence[Path], dest: Path) -> None:
    """Apply upper layers, bottom first, into the empty directory `dest`."""
    for layer in layers_bottom_up:
        _merge_dir(layer, dest)
        shutil.copystat(layer, dest)
        st = layer.stat()
        os.chown(dest, st.st_uid, st.st_gid)


def _recorded(upper: Path, rel: str = "") -> Iterator[str]:
    """Every non-directory entry (files, links, whiteouts) and opaque directory of a layer."""
    with os.scandir(upper / rel if rel else upper) as it:
        for entry in it:
            child = f"{rel}/{entry.name}" if rel else entry.name
            if entry.is_dir(follow_symlinks=False):
                if is_opaque(Path(entry.path)):
                    yield child
                yield from _recorded(upper, child)
            else:
                yield child


def _files_under(base: Path, rel: str) -> Iterator[str]:
    top = base / rel
    if not top.is_dir() or top.is_symlink():
        return
    for dirpath, _, files in os.walk(top):
        for name in files:
            yield str(Path(dirpath, name).relative_to(base))


def _file(path: Path) -> Path | None:
    """`path` if it exists as a non-directory (directories count through their files)."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        return path
    return None


def _lookup(layers: Sequence[Path], rel: str) -> Path | None:
    for layer in layers:
        p = layer / rel
        if p.is_symlink() or p.exists():
            return _file(p)
    return None


def _same(a: Path | None, b: Path | None) -> bool:
    if a is None or b is None:
        return a is b
    if a.is_symlink() or b.is_symlink():
        return a.is_symlink() and b.is_symlink() and os.readlink(a) == os.readlink(b)
    return filecmp.cmp(a, b, shallow=False)


def changed(uppers: Sequence[Path], bases: Sequence[Path], merged: Path) -> list[str]:
    """Files of `merged` that differ from the `bases` stack, found through the uppers."""
    recorded: set[str] = set()
    for upper in uppers:
        recorded.update(_recorded(upper))
    candidates = set(recorded)
    for rel in recorded:  # a deleted or opaque directory stands for the base files under it
        for base in bases:
            candidates.update(_files_under(base, rel))
    return sorted(r for r in candidates if not _same(_file(merged / r), _lookup(bases, r)))
