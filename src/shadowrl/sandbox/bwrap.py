"""The command line that starts a sandbox's pid 1 (`pid1.py`) under bubblewrap.

    sh (host, root): join the sandbox's cgroups, set rlimits, exec
    setpriv: become the unprivileged sandbox uid, drop every capability, no_new_privs
    bwrap: new user/pid/net/ipc/uts/cgroup/mount namespaces, a read-only root built
           from read-only system dirs + the workspace overlay, the seccomp filter, exec
    python3 pid1.py (pid 1 of the namespace; uid 61000 on the host, no capabilities,
           no network), which runs each exec's `/bin/sh -c CMD` as its child

This chain runs once per sandbox, not per exec (see `supervisor.py`). It joins the
cgroups before anything is forked, so nothing escapes the caps. The root and /dev are
remounted read-only, so the only places an exec can leave state are the workspace
(meant to persist) and /tmp and /dev/shm (private tmpfs mounts pid 1 empties after
every exec).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from shadowrl.sandbox.base import Limits

# Host dirs bound read-only: enough for coreutils, git, python3 and compilers.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_ENTRIES = (
    "alternatives", "ca-certificates", "ssl", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
    "localtime", "mime.types", "nsswitch.conf", "passwd", "group", "gitconfig", "python3",
    "python3.11", "pip.conf", "profile", "bash.bashrc", "inputrc", "terminfo",
)  # fmt: skip
PID1_PATH = "/run/shadowrl/pid1.py"  # where the sandbox sees `pid1.py`
SANDBOX_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
    "HOME": "/tmp",
    "LANG": "C.UTF-8",
    "TERM": "dumb",
    "TMPDIR": "/tmp",
    # no .pyc: CPython checks one against the source's whole-second mtime and size, so an
    # edit of the same size right after an import would run the replaced code
    "PYTHONDONTWRITEBYTECODE": "1",
}


def exec_path(extra: Sequence[str]) -> str:
    """PATH inside the sandbox: `extra` dirs first, then the default one."""
    return ":".join([*extra, SANDBOX_ENV["PATH"]])


def _system_binds() -> list[str]:
    args: list[str] = []
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    for name in ETC_ENTRIES:
        if os.path.lexists(f"/etc/{name}"):
            args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    return args


def _rlimits(limits: Limits, memory_in_cgroup: bool) -> str:
    """`ulimit` lines for the launcher shell; RLIMIT_AS only when no memory cgroup.

    RLIMIT_CPU is per exec, so pid 1 sets it in each child instead.
    """
    lines = [
        f"ulimit -f {limits.file_size_mb * 2048}",  # 512-byte blocks
        "ulimit -c 0",
    ]
    if not memory_in_cgroup:
        lines.append(f"ulimit -v {limits.memory_mb * 1024}")
    return "; ".join(lines)


def sandbox_python() -> str | None:
    """The interpreter pid 1 runs under: a python3 >= 3.9 the sandbox can see."""
    for path in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(path, os.X_OK):
            return path
    return None


def init_argv(
    *,
    merged: Path,
    workdir: str,
    uid: int,
    limits: Limits,
    cgroup_procs: Sequence[str],
    ro_binds: Mapping[str, Path],
    path: Sequence[str] = (),
    seccomp_fd: int | None,
    info_fd: int,
    control_fd: int,
    pid1_fd: int,
) -> list[str]:
    """argv that starts pid 1 on `control_fd`; the host process must be root.

    `pid1_fd` holds the source of `pid1.py`; bwrap writes `{"child-pid": N}` (pid 1's
    host pid) to `info_fd`. `path` dirs go in front of PATH for pid 1 and so for every
    exec (set by bwrap, not here: the host side must still find setpriv and bwrap).
    """
    join = "".join(f"echo $$ > {shlex.quote(f)} || exit 125; " for f in cgroup_procs)
    script = f'{join}{_rlimits(limits, bool(cgroup_procs))}; exec "$@"'
    setpriv = [
        "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
        "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs",
    ]  # fmt: skip
    size = str(limits.disk_mb << 20)
    bwrap = [
        "bwrap", "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc",
        "--unshare-uts", "--unshare-cgroup", "--disable-userns", "--die-with-parent",
        "--as-pid-1", "--new-session", "--hostname", "sandbox", "--cap-drop", "ALL",
        "--info-fd", str(info_fd),
        *_system_binds(),
        "--proc", "/proc", "--dev", "/dev",
        "--size", size, "--tmpfs", "/tmp", "--size", size, "--tmpfs", "/dev/shm",
        "--bind", str(merged), workdir,
        "--setenv", "PATH", exec_path(path),
    ]  # fmt: skip
    for inside, host in ro_binds.items():
        bwrap += ["--ro-bind", str(host), inside]
    bwrap += [
        "--ro-bind-data",
        str(pid1_fd),
        PID1_PATH,
        "--remount-ro",
        "/dev",
        "--remount-ro",
        "/",
    ]
    if seccomp_fd is not None:
        bwrap += ["--seccomp", str(seccomp_fd)]
    python = sandbox_python() or "python3"
    pid1 = [python, "-I", "-S", PID1_PATH, str(control_fd), workdir, str(limits.cpu_seconds)]
    bwrap += ["--chdir", workdir, "--", *pid1]
    return ["/bin/sh", "-c", script, "launch", *setpriv, *bwrap]
