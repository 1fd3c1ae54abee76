"""The overlay sandbox's warm pid 1: execs share it, yet nothing leaks from one to the next.

Also: pid 1 cannot be killed from inside, a pid 1 that dies anyway (e.g. OOM) is
replaced at the next exec, and closing reaps every process the sandbox had.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shadowrl.sandbox import Limits, create_sandbox
from shadowrl.sandbox.overlay import OverlaySandbox

from .conftest import needs_overlay

pytestmark = needs_overlay


@pytest.fixture
def sb(workspace: Path) -> Iterator[OverlaySandbox]:
    box = create_sandbox(workspace, "overlay", Limits(cpu_seconds=1, disk_mb=16))
    assert isinstance(box, OverlaySandbox)
    yield box
    box.close()


def _pid1(sb: OverlaySandbox) -> int:
    assert sb._supervisor is not None and sb._supervisor.alive
    (outer,) = [p for p in sb._supervisor.pids if p == sb._supervisor._proc.pid]
    (pid1,) = sb._supervisor.pids - {outer}
    return pid1


def _gone(pid: int) -> bool:
    """No process and no zombie with this pid (it was reaped)."""
    return not Path(f"/proc/{pid}").exists()


def test_execs_share_one_pid1(sb: OverlaySandbox) -> None:
    assert sb.exec("true").exit_code == 0
    first = _pid1(sb)
    for _ in range(3):
        assert sb.exec("echo $$").exit_code == 0
    assert _pid1(sb) == first


def test_nothing_leaks_between_execs(sb: OverlaySandbox) -> None:
    setup = (
        "echo x > /tmp/t; mkdir -p /tmp/d/e; chmod 0 /tmp/d /tmp; echo y > /dev/shm/s; "
        "python3 -c 'import ctypes; print(ctypes.CDLL(None).shmget(0, 4096, 0o1600) >= 0)'; "
        "export LEAK=1; cd /tmp; (setsid sleep 100 >/dev/null 2>&1 &); echo kept > kept"
    )
    res = sb.exec(setup)
    assert res.stdout == "True\n", res
    res = sb.exec(
        "ls -A /tmp /dev/shm; ipcs -m | grep -c 0x; echo ${LEAK:-none} $PWD; ps -e -o comm="
    )
    assert res.stdout.split() == [
        "/dev/shm:",
        "/tmp:",
        "0",
        "none",
        "/workspace",
        "python3",
        "sh",
        "ps",
    ]
    assert sb.read_file("kept") == b"kept\n"  # the workspace is what persists


def test_root_dev_and_etc_are_read_only(sb: OverlaySandbox) -> None:
    res = sb.exec("touch /x || touch /dev/x || touch /etc/x || mkdir /run/y || echo refused")
    assert res.stdout == "refused\n" and res.stderr.count("Read-only file system") == 4


def test_pid1_cannot_be_killed_from_inside(sb: OverlaySandbox) -> None:
    sb.exec("true")
    pid1 = _pid1(sb)
    res = sb.exec("kill -9 1; kill -INT 1; kill -TERM 1; kill -9 -1; echo survived")
    assert res.stdout == "survived\n" and res.exit_code == 0
    assert sb.exec("echo ok").stdout == "ok\n" and _pid1(sb) == pid1


def test_timeout_keeps_the_sandbox_warm(sb: OverlaySandbox) -> None:
    sb.exec("true")
    pid1 = _pid1(sb)
    res = sb.exec("echo started; sleep 30 & sleep 30", timeout=0.5)
    assert res.timed_out and res.exit_code == 124 and res.stdout == "started\n"
    assert sb.exec("ps -e -o comm=").stdout.split() == ["python3", "sh", "ps"]
    assert _pid1(sb) == pid1


def test_dead_pid1_is_replaced(sb: OverlaySandbox) -> None:
    sb.exec("true")
    pid1 = _pid1(sb)
    os.kill(pid1, signal.SIGKILL)  # what the OOM killer would do
    res = sb.exec("echo never")
    assert res.exit_code == 137 and "sandbox died" in res.stderr
    assert sb.exec("echo back").stdout == "back\n" and _pid1(sb) != pid1
    assert _gone(pid1)


def test_pid1_killed_mid_exec(sb: OverlaySandbox) -> None:
    sb.exec("true")
    pid1 = _pid1(sb)
    res = sb.exec(f"echo before; kill -9 {pid1} 2>/dev/null; sleep 0.2; echo after")
    assert res.stdout == "before\nafter\n"  # host pids mean nothing inside: pid 1 lives on
    assert _pid1(sb) == pid1


def test_close_reaps_everything(sb: OverlaySandbox) -> None:
    sb.exec("(setsid sleep 100 &) ; echo ok")
    assert sb._supervisor is not None
    pids = sb._supervisor.pids
    sb.close()
    deadline = time.monotonic() + 5
    while not all(map(_gone, pids)) and time.monotonic() < deadline:
        time.sleep(0.01)  # pid 1's parent (bwrap) reaps it asynchronously
    assert all(map(_gone, pids)), "a sandbox process outlived close()"


def test_snapshot_restarts_pid1_on_the_new_upper(sb: OverlaySandbox) -> None:
    sb.exec("echo 1 > state")
    snap = sb.snapshot()
    assert sb._supervisor is not None and not sb._supervisor.alive
    sb.exec("echo 2 > state")
    child = snap.fork()
    try:
        assert child.exec("cat state").stdout == "1\n" and sb.exec("cat state").stdout == "2\n"
    finally:
        child.close()
        snap.release()


def test_cpu_limit_is_per_exec(sb: OverlaySandbox) -> None:
    burn = "python3 -c 'import time; t=time.process_time()\nwhile time.process_time()-t < .7: pass'"
    for _ in range(2):  # 1.4 s of CPU in total, over a 1 s per-exec limit
        assert sb.exec(burn, timeout=60).exit_code == 0


def test_overlong_command_is_refused_cleanly(sb: OverlaySandbox) -> None:
    sb.exec("true")
    pid1 = _pid1(sb)
    for n in (131_070, 200_000):  # fits the socket or not; both over execve's cap
        res = sb.exec(f": {'x' * n}")
        assert res.exit_code == 126 and res.stdout == "" and res.stderr, res.stderr
    assert sb.exec(f"echo {'y' * 100_000} | wc -c").stdout == "100001\n" and _pid1(sb) == pid1


def test_sandbox_started_from_a_worker_thread_outlives_it(sb: OverlaySandbox) -> None:
    # pdeathsig fires when the forking *thread* exits: a sandbox first used from a
    # short-lived worker (asyncio.to_thread) must keep running after that thread ends
    import threading

    worker = threading.Thread(target=lambda: sb.exec("true"))
    worker.start()
    worker.join()
    time.sleep(0.2)
    res = sb.exec("echo alive")
    assert (res.exit_code, res.stdout) == (0, "alive\n")
