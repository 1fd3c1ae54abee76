"""A warm sandbox's pid 1, seen from the host: start it once, run execs on it, stop it.

Launching bwrap per exec cost 15-65 ms (the setpriv chain, two dozen bind mounts, a
fresh network namespace), most of an agent's tool call. Here the launch happens once
per sandbox, lazily at its first exec; every later exec is a socket round trip plus
one fork+exec inside (`pid1.py` says what pid 1 does with each request).

    exec     two fresh pipes; send the command + their write ends to pid 1 (SCM_RIGHTS);
             read stdout/stderr (capped) until pid 1's reply (wait status) and EOF. pid 1
             replies only after killing all the exec left behind, so pipes end too.
    timeout  send "kill": pid 1 kills everything in its namespace and replies; with no
             reply within KILL_GRACE_S the whole sandbox is stopped instead.
    stop     SIGKILL pid 1 through a pidfd (its host pid comes from bwrap --info-fd):
             the kernel kills the namespace, the outer bwrap reaps pid 1 and exits,
             and we reap bwrap. Killing pid 1 first, not bwrap, keeps it from being
             orphaned to the host's init as a zombie owned by the sandbox uid.

If pid 1 dies on its own (OOM, a crash), the exec in flight reports exit 137, `alive`
turns False, and the owner starts a new supervisor at the next exec.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import selectors
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from shadowrl.sandbox import seccomp
from shadowrl.sandbox.base import ExecResult
from shadowrl.sandbox.bwrap import SANDBOX_ENV
from shadowrl.sandbox.pid1 import EXEC, KILL, KILLED, MAX_COMMAND, MAX_REQUEST
from shadowrl.sandbox.process import Capture, read_into

log = logging.getLogger(__name__)
KILL_GRACE_S = 5.0  # for pid 1 to answer a kill request before we stop the sandbox
_CHUNK = 1 << 16
_SO_SNDBUFFORCE = 32  # Linux; as root, a request of MAX_REQUEST fits whatever wmem_max is


class Died(Exception):
    """pid 1 is gone (its socket closed): the sandbox must be restarted."""


@functools.cache
def _filter() -> bytes:
    return seccomp.deny_filter()


@functools.cache
def _pid1_source() -> bytes:
    return (Path(__file__).parent / "pid1.py").read_bytes()


def _memfd(name: str, data: bytes) -> int:
    """An fd to read `data` from, for bwrap (--seccomp, --ro-bind-data)."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


# bwrap's --die-with-parent is PR_SET_PDEATHSIG, which fires when the *thread* that
# forked bwrap exits, not the process. Sandboxes are often first used from worker
# threads (asyncio.to_thread) that come and go, so every bwrap is forked from this one
# thread, which lives as long as the process.
_SPAWNER = ThreadPoolExecutor(1, thread_name_prefix="sandbox-spawner")


class Supervisor:
    """One running sandbox: the outer bwrap (our child), pid 1 inside, and its socket."""

    def __init__(self, proc: subprocess.Popen[bytes], pid1: int, sock: socket.socket) -> None:
        self._proc, self._sock = proc, sock
        self.pids = frozenset((proc.pid, pid1))  # host pids that belong to the sandbox itself
        self._pidfd = os.pidfd_open(pid1)  # bwrap is alive and has not reaped it yet
        self.alive = True

    @classmethod
    def start(cls, argv: Callable[..., list[str]]) -> Supervisor:
        """Launch `argv(seccomp_fd=, pid1_fd=, info_fd=, control_fd=)` (`bwrap.init_argv`)."""
        sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sock.setsockopt(socket.SOL_SOCKET, _SO_SNDBUFFORCE, MAX_REQUEST + _CHUNK)
        info_r, info_w = os.pipe()
        seccomp_fd = _memfd("shadowrl-seccomp", _filter())
        pid1_fd = _memfd("shadowrl-pid1", _pid1_source())
        fds = (seccomp_fd, pid1_fd, info_w, theirs.fileno())
        try:
            cmd = argv(
                seccomp_fd=seccomp_fd, pid1_fd=pid1_fd, info_fd=info_w,
                control_fd=theirs.fileno(),
            )  # fmt: skip
            proc = _SPAWNER.submit(
                subprocess.Popen, cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, env=SANDBOX_ENV, pass_fds=fds, start_new_session=True,
            ).result()  # fmt: skip
        except BaseException:
            sock.close()
            os.close(info_r)
            raise
        finally:
            for fd in fds[:3]:
                os.close(fd)
            theirs.close()
        with open(info_r, "rb") as f:
            info = f.read()  # bwrap closes it once pid 1 runs, or exits on failure
        if not info:
            sock.close()
            _, err = proc.communicate()
            raise OSError(f"sandbox failed to start (exit {proc.returncode}): {err.decode()}")
        try:
            return cls(proc, int(json.loads(info)["child-pid"]), sock)
        except ProcessLookupError:  # pid 1 exited at once (and bwrap reaped it)
            sock.close()
            _, err = proc.communicate()
            raise OSError(f"sandbox pid 1 exited at start: {err.decode()}") from None

    def run(self, cmd: str, timeout: float, output_bytes: int) -> ExecResult:
        """Run `cmd` in the sandbox. If pid 1 dies meanwhile, stop and report exit 137."""
        request = EXEC + os.fsencode(cmd)
        if len(request) > MAX_REQUEST:  # what execve would say; the sandbox stays up
            msg = f"sandbox: command of {len(request)} bytes is over the {MAX_COMMAND} limit\n"
            return ExecResult(exit_code=126, stdout="", stderr=msg)
        r_out, w_out = os.pipe()
        r_err, w_err = os.pipe()
        caps = {r_out: Capture(output_bytes), r_err: Capture(output_bytes)}
        code, timed_out = 137, False
        try:
            try:
                socket.send_fds(self._sock, [request], [w_out, w_err])
            finally:
                os.close(w_out)
                os.close(w_err)
            reply = self._collect(caps, time.monotonic() + timeout)
            if reply is None:  # deadline: have pid 1 kill the exec, or kill pid 1
                timed_out, code = True, 124
                self._sock.send(KILL)
                if self._collect(caps, time.monotonic() + KILL_GRACE_S) is None:
                    self.stop()
            else:
                code = os.waitstatus_to_exitcode(reply)
                code = 128 - code if code < 0 else code  # killed by a signal: as a shell says
        except (Died, OSError) as e:
            log.warning("sandbox pid 1 died during an exec (%s): %s", e, self.stop())
            caps[r_err].add(b"\nsandbox: the sandbox died; it restarts at the next exec\n")
        finally:
            os.close(r_out)
            os.close(r_err)
        out, err = caps[r_out], caps[r_err]
        return ExecResult(
            exit_code=code, stdout=out.text(), stderr=err.text(), timed_out=timed_out,
            truncated=out.truncated or err.truncated,
        )  # fmt: skip

    def _collect(self, caps: dict[int, Capture], deadline: float) -> int | None:
        """Read output into `caps` until pid 1's reply and both pipes' EOF.

        Returns the wait status pid 1 replied, or None if the deadline came first.
        Pipes still open at the deadline after the reply (a host process that
        inherited a write end) are abandoned.
        """
        reply = None
        with selectors.DefaultSelector() as sel:
            for fd in caps:
                os.set_blocking(fd, False)  # (a pipe at EOF reads EOF again: harmless)
                sel.register(fd, selectors.EVENT_READ)
            sel.register(self._sock, selectors.EVENT_READ)
            while sel.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    return reply
                for key, _ in sel.select(timeout=left):
                    if key.fileobj is self._sock:
                        msg = self._sock.recv(_CHUNK)
                        if not msg:
                            raise Died("pid 1 exited")
                        reply = int(signal.SIGKILL if msg == KILLED else msg)
                        sel.unregister(self._sock)
                        continue
                    read_into(sel, int(key.fd), caps)
        return reply

    def stop(self) -> str:
        """Kill the sandbox's namespace and reap its processes; what pid 1 said on stderr."""
        if not self.alive:
            return ""
        self.alive = False
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
        os.close(self._pidfd)
        self._sock.close()
        try:
            self._proc.wait(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        assert self._proc.stderr is not None
        with self._proc.stderr:
            return self._proc.stderr.read().decode(errors="replace")[-2000:]
