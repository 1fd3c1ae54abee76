"""Run one command to completion with a wall-clock deadline and capped output capture.

The `local` backend runs each command this way; the overlay supervisor reads its pipes
into the same `Capture`. Pipes are read incrementally as data arrives, so a command
printing gigabytes neither fills our memory (we stop storing at the cap and keep
draining, so it is not blocked on a full pipe) nor stalls. On the deadline, `kill`
(the backend's way to end everything the command started) is called.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence

from shadowrl.sandbox.base import ExecResult

_CHUNK = 1 << 16


class Capture:
    """Bytes kept from one stream, up to `cap`."""

    def __init__(self, cap: int) -> None:
        self.cap, self.parts, self.size, self.truncated = cap, list[bytes](), 0, False

    def add(self, data: bytes) -> None:
        room = self.cap - self.size
        if len(data) > room:
            self.truncated = True
            data = data[: max(room, 0)]
        if data:
            self.parts.append(data)
            self.size += len(data)

    def text(self) -> str:
        return b"".join(self.parts).decode("utf-8", errors="replace")


def _pump(proc: subprocess.Popen[bytes], caps: dict[int, Capture], deadline: float) -> bool:
    """Read both pipes until EOF; False if the deadline passed first."""
    with selectors.DefaultSelector() as sel:
        for fd in caps:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            for key, _ in sel.select(timeout=left):
                read_into(sel, int(key.fd), caps)
    return True


def read_into(sel: selectors.BaseSelector, fd: int, caps: dict[int, Capture]) -> None:
    """Move what is ready on `fd` into its capture; unregister it at end of file."""
    data = os.read(fd, _CHUNK)
    if data:
        caps[fd].add(data)
    else:
        sel.unregister(fd)


def run_captured(
    argv: Sequence[str],
    *,
    timeout: float,
    output_bytes: int,
    kill: Callable[[subprocess.Popen[bytes]], None],
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    pass_fds: Sequence[int] = (),
) -> ExecResult:
    """Run `argv`; on timeout call `kill(proc)` and report `timed_out`. `kill` runs once
    more after the command is done, for what it left behind (its process group)."""
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        pass_fds=tuple(pass_fds),
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    out, err = Capture(output_bytes), Capture(output_bytes)
    caps = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    deadline = time.monotonic() + timeout
    try:
        finished = _pump(proc, caps, deadline)
        if finished:  # pipes closed; the command itself may still be exiting
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                finished = False
        if not finished:
            kill(proc)
        code = proc.wait()
    finally:
        proc.stdout.close()
        proc.stderr.close()
        kill(proc)  # also what the command left running: nothing outlives its exec
        proc.wait()
    if code < 0:  # killed by a signal: report it the way a shell does
        code = 128 - code
    return ExecResult(
        exit_code=code if finished else 124,
        stdout=out.text(),
        stderr=err.text(),
        timed_out=not finished,
        truncated=out.truncated or err.truncated,
    )
