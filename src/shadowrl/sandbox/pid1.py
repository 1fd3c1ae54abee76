"""The program a warm sandbox runs as its pid 1: one exec per request, then a clean slate.

Starting bwrap costs ~15-40 ms (namespaces, two dozen bind mounts, a network
namespace); an agent execs dozens of times per sandbox. So each sandbox starts bwrap
once with this program as pid 1 (`supervisor.py`), and an exec becomes a message on a
socket: the host sends the command with the write ends of two fresh pipes (SCM_RIGHTS);
we fork `/bin/sh -c CMD` in a new session with per-exec rlimits, wait for it (or for a
kill request), then SIGKILL every other process in the pid namespace, empty /tmp,
/dev/shm (all but read-only binds placed there) and SysV IPC, and only then reply with the wait status. So when the host
reads the reply, nothing the exec started is alive and nothing it left in memory-backed
dirs reaches the next exec; the workspace itself persists, as it should.

Being pid 1 protects us: the kernel drops signals from inside the namespace that pid 1
has no handler for (so `kill -9 -1` and `kill 1` do nothing), and we are non-dumpable,
so the same-uid command cannot open /proc/1/mem or our fds. If we die anyway (OOM), the
namespace dies with us and the host starts a new pid 1 at the next exec.

Runs inside the sandbox under its system python3 (>= 3.9), from a read-only copy bwrap
places at /run/shadowrl/pid1.py. Start-up is on the first exec's path, so only cheap C
modules are imported (no json, socket or re: the wire format is bytes). The host
imports nothing here but the protocol constants.
"""

from __future__ import annotations

import _socket
import array
import ctypes
import os
import resource
import select
import signal
import stat  # (imported by os already)
import sys

# The wire format: requests are EXEC + command bytes, with two fds (stdout, stderr)
# attached, or KILL; a reply is the decimal wait status, or KILLED.
EXEC, KILL, KILLED = b"exec\0", b"kill", b"killed"
MAX_COMMAND = 32 * 4096  # bytes: the kernel's MAX_ARG_STRLEN, so `sh -c` could take no more
MAX_REQUEST = len(EXEC) + MAX_COMMAND
SCRUBBED_DIRS = ("/tmp", "/dev/shm")
_PR_SET_DUMPABLE, _IPC_RMID = 4, 0
_FDS_SPACE = _socket.CMSG_SPACE(2 * array.array("i").itemsize)


def _recv(sock: _socket.socket) -> tuple[bytes, list[int]]:
    """One message and the fds attached to it."""
    msg, ancillary, _, _ = sock.recvmsg(MAX_REQUEST, _FDS_SPACE)
    fds = array.array("i")
    for level, kind, data in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    return msg, list(fds)


def _child(cmd: bytes, fds: list[int], workdir: str, cpu_seconds: int) -> None:
    """In the forked child: become the exec's process; never returns."""
    try:
        os.setsid()
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for fd in (null, *fds):
            if fd > 2:
                os.close(fd)
        for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT):  # python changed these
            signal.signal(sig, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))
        os.chdir(workdir)
        os.execv(b"/bin/sh", [b"/bin/sh", b"-c", cmd])
    except BaseException as e:  # report anything, then die
        os.write(2, f"sandbox: cannot run command: {e}\n".encode())
    os._exit(126)


def _wait(pid: int, sock: _socket.socket) -> int | None:
    """The child's wait status, or None if the host asked to kill it (or went away)."""
    pidfd = os.pidfd_open(pid)
    try:
        while True:
            ready, _, _ = select.select([pidfd, sock.fileno()], [], [])
            if sock.fileno() in ready:
                sock.recv(16)  # a kill request; EOF means the host is gone: kill too
                return None
            if pidfd in ready:
                return os.waitpid(pid, 0)[1]
    finally:
        os.close(pidfd)


def _sweep() -> None:
    """SIGKILL everything else in the namespace and reap it all (orphans are ours)."""
    try:
        while True:
            os.kill(-1, signal.SIGKILL)  # from pid 1: every process in the namespace but us
            os.waitpid(-1, 0)
    except (ProcessLookupError, ChildProcessError):
        return  # no process but us, not even a zombie (kill(-1) counts those)


def _remove(path: str, dev: int) -> bool:
    """Delete `path` even where the command took away its own write/search bits.

    Mount points (another device than the scrubbed dir's: read-only binds that bwrap
    placed under /tmp, e.g. a task env) and the dirs leading to them are kept, as
    they were at start; the command cannot mount, so nothing else is. False if kept.
    """
    st = os.lstat(path)
    if st.st_dev != dev:
        return False
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(path)
        return True
    os.chmod(path, 0o700)
    if not all([_remove(os.path.join(path, entry), dev) for entry in os.listdir(path)]):
        return False
    os.rmdir(path)
    return True


def _ipc_ids(kind: str) -> list[int]:
    with open(f"/proc/sysvipc/{kind}") as f:
        return [int(line.split()[1]) for line in f.readlines()[1:]]


def _scrub(libc: ctypes.CDLL, modes: dict[str, int]) -> None:
    """Empty what outlives processes but is not the workspace; failing here kills us."""
    for d, mode in modes.items():
        os.chmod(d, mode)  # the command owns these dirs and may have locked them
        dev = os.lstat(d).st_dev
        for entry in os.listdir(d):
            _remove(os.path.join(d, entry), dev)
    for shm in _ipc_ids("shm"):
        libc.shmctl(shm, _IPC_RMID, None)
    for sem in _ipc_ids("sem"):
        libc.semctl(sem, 0, _IPC_RMID)
    for msq in _ipc_ids("msg"):
        libc.msgctl(msq, _IPC_RMID, None)


def serve(sock: _socket.socket, workdir: str, cpu_seconds: int, libc: ctypes.CDLL) -> None:
    """Run requests until the host closes the socket."""
    modes = {d: os.stat(d).st_mode & 0o7777 for d in SCRUBBED_DIRS}
    while True:
        msg, fds = _recv(sock)
        if not msg:
            return  # the host closed the sandbox (or died)
        if not msg.startswith(EXEC) or len(fds) != 2:  # a KILL that raced our last reply
            for fd in fds:
                os.close(fd)
            continue
        pid = os.fork()
        if pid == 0:
            _child(msg[len(EXEC) :], fds, workdir, cpu_seconds)
        for fd in fds:
            os.close(fd)
        status = _wait(pid, sock)
        _sweep()
        _scrub(libc, modes)
        sock.send(KILLED if status is None else str(status).encode())


def main(argv: list[str]) -> None:
    control_fd, workdir, cpu_seconds = int(argv[1]), argv[2], int(argv[3])
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # no handler: pid 1 ignores it from inside
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE)")
    os.set_inheritable(control_fd, False)
    sock = _socket.socket(fileno=control_fd)
    try:
        serve(sock, workdir, cpu_seconds, libc)
    finally:
        _sweep()


if __name__ == "__main__":
    main(sys.argv)
