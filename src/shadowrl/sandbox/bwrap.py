"""The command line that starts one sandboxed command under bubblewrap.

    sh (host, root): join the sandbox's cgroups, set rlimits, exec
    setpriv: become the unprivileged sandbox uid, drop every capability, no_new_privs
    bwrap: new user/pid/net/ipc/uts/cgroup/mount namespaces, a root built from
           read-only system dirs + the workspace overlay, the seccomp filter, exec
    /bin/sh -c CMD (uid 61000 on the host, no capabilities, no network)

The command joins the cgroups before anything is forked, so nothing escapes the caps;
bwrap is pid 1 of its namespace, so when the command ends everything it left behind
is killed by the kernel.
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
SANDBOX_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
    "HOME": "/tmp",
    "LANG": "C.UTF-8",
    "TERM": "dumb",
    "TMPDIR": "/tmp",
}


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
    """`ulimit` lines for the launcher shell; RLIMIT_AS only when no memory cgroup."""
    lines = [
        f"ulimit -t {limits.cpu_seconds}",
        f"ulimit -f {limits.file_size_mb * 2048}",  # 512-byte blocks
        "ulimit -c 0",
    ]
    if not memory_in_cgroup:
        lines.append(f"ulimit -v {limits.memory_mb * 1024}")
    return "; ".join(lines)


def launcher_argv(
    cmd: str,
    *,
    merged: Path,
    workdir: str,
    uid: int,
    limits: Limits,
    cgroup_procs: Sequence[str],
    ro_binds: Mapping[str, Path],
    seccomp_fd: int | None,
) -> list[str]:
    """argv for `run_captured`; the host process must be root."""
    join = "".join(f"echo $$ > {shlex.quote(f)} || exit 125; " for f in cgroup_procs)
    script = f'{join}{_rlimits(limits, bool(cgroup_procs))}; exec "$@"'
    setpriv = [
        "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
        "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs",
    ]  # fmt: skip
    bwrap = [
        "bwrap", "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc",
        "--unshare-uts", "--unshare-cgroup", "--disable-userns", "--die-with-parent",
        "--new-session", "--hostname", "sandbox", "--cap-drop", "ALL",
        *_system_binds(),
        "--proc", "/proc", "--dev", "/dev",
        "--size", str(limits.disk_mb << 20), "--tmpfs", "/tmp",
        "--bind", str(merged), workdir,
    ]  # fmt: skip
    for inside, host in ro_binds.items():
        bwrap += ["--ro-bind", str(host), inside]
    if seccomp_fd is not None:
        bwrap += ["--seccomp", str(seccomp_fd)]
    bwrap += ["--chdir", workdir, "--", "/bin/sh", "-c", cmd]
    return ["/bin/sh", "-c", script, "launch", *setpriv, *bwrap]
