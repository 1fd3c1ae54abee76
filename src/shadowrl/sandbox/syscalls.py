"""Thin ctypes wrappers for the Linux calls the overlay backend makes from the host.

Spawning `mount` costs ~2 ms per call; a fork needs two mounts, so we call mount(2)
directly (~0.3 ms). `openat2(RESOLVE_BENEATH)` lets host-side file access refuse any
path that would leave the sandbox root, symlinks included, in one kernel-checked step.
The idmapped-mount calls give the host's root-owned workspace to the sandbox user
without copying or chowning it. Syscall numbers are those of x86_64 and aarch64
(the new-mount and openat2 numbers are shared by both).
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import subprocess
from pathlib import Path

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_PRIVATE = 1, 2, 4, 32, 4096, 1 << 18
MNT_DETACH = 2
RESOLVE_NO_MAGICLINKS, RESOLVE_BENEATH = 0x02, 0x08
_SYS_OPENAT2, _SYS_OPEN_TREE, _SYS_MOVE_MOUNT, _SYS_MOUNT_SETATTR = 437, 428, 429, 442
_OPEN_TREE_CLONE, _AT_EMPTY_PATH, _MOVE_MOUNT_F_EMPTY_PATH = 1, 0x1000, 0x4
_MOUNT_ATTR_RDONLY, _MOUNT_ATTR_NOSUID, _MOUNT_ATTR_NODEV, _MOUNT_ATTR_IDMAP = 1, 2, 4, 0x100000


def _check(ret: int, what: str) -> int:
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return ret


def mount(source: str, target: Path, fstype: str, flags: int = 0, data: str = "") -> None:
    """mount(2); `data` is the comma-separated option string."""
    ret = _libc.mount(source.encode(), os.fsencode(target), fstype.encode(), flags, data.encode())
    _check(ret, f"mount {fstype} on {target}")


def umount(target: Path, lazy: bool = False) -> None:
    """umount2(2); `lazy` detaches now and frees once nothing uses the mount."""
    _check(_libc.umount2(os.fsencode(target), MNT_DETACH if lazy else 0), f"umount {target}")


def openat2(dirfd: int, path: str, flags: int, mode: int = 0o644) -> int:
    """Open `path` relative to `dirfd`, refusing to resolve anything outside it."""
    mode = mode if flags & os.O_CREAT else 0  # the kernel rejects a mode without O_CREAT
    how = struct.pack("QQQ", flags | os.O_CLOEXEC, mode, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
    ret = _libc.syscall(_SYS_OPENAT2, dirfd, os.fsencode(path), how, len(how))
    if ret < 0:
        err = ctypes.get_errno()
        if err == errno.EXDEV:  # the kernel's answer to "this path escapes the root"
            raise PermissionError(err, f"path escapes the sandbox: {path}")
        raise OSError(err, os.strerror(err), path)
    return int(ret)


def _identity_but(uid: int) -> str:
    """A uid/gid map showing id 0 as `uid` and every other id (except `uid`) as itself."""
    top = 4294967295
    return f"0 {uid} 1\n1 1 {uid - 1}\n{uid + 1} {uid + 1} {top - uid - 1}\n"


def idmap_userns(uid: int) -> int:
    """An fd of a user namespace mapping 0 -> `uid`, for idmapped mounts.

    A helper process unshares a user namespace and waits; we (root in the parent
    namespace) write its maps, keep an fd to the namespace and let the helper exit.
    """
    helper = subprocess.Popen(
        ["unshare", "--user", "--", "sh", "-c", "echo ready; read _"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert helper.stdout is not None and helper.stdin is not None
        if helper.stdout.readline().strip() != b"ready":
            raise OSError(errno.EPERM, "could not create a user namespace")
        for name in ("uid_map", "gid_map"):
            Path(f"/proc/{helper.pid}/{name}").write_text(_identity_but(uid))
        return os.open(f"/proc/{helper.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        if helper.stdin is not None:
            helper.stdin.close()
        helper.wait()


def idmapped_bind(source: Path, target: Path, userns_fd: int) -> None:
    """Bind `source` read-only at `target`, showing its owners through `userns_fd`'s map."""
    fd = _check(
        _libc.syscall(_SYS_OPEN_TREE, -100, os.fsencode(source), _OPEN_TREE_CLONE | os.O_CLOEXEC),
        f"open_tree {source}",
    )
    try:
        set_ = _MOUNT_ATTR_IDMAP | _MOUNT_ATTR_RDONLY | _MOUNT_ATTR_NOSUID | _MOUNT_ATTR_NODEV
        attr = struct.pack("QQQQ", set_, 0, 0, userns_fd)
        ret = _libc.syscall(_SYS_MOUNT_SETATTR, fd, b"", _AT_EMPTY_PATH, attr, len(attr))
        _check(ret, f"mount_setattr idmap {source}")
        ret = _libc.syscall(
            _SYS_MOVE_MOUNT, fd, b"", -100, os.fsencode(target), _MOVE_MOUNT_F_EMPTY_PATH
        )
        _check(ret, f"move_mount {target}")
    finally:
        os.close(fd)
