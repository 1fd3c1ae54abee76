"""Escape attempts against the overlay backend. Each must fail, and afterwards the host
and a sibling sandbox (forked from the same snapshot) must be exactly as before.

Convention: an attack prints ESCAPED only if the forbidden thing worked.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from shadowrl.sandbox import ExecResult, Limits, Sandbox, create_sandbox
from shadowrl.sandbox.layers import get_store
from shadowrl.sandbox.seccomp import DENIED_SYSCALLS

from .conftest import make_workspace, needs_overlay, tree_digest

pytestmark = needs_overlay
LIMITS = Limits(memory_mb=256, pids=64, cpu_seconds=3, file_size_mb=8, disk_mb=32,
                output_bytes=10_000)  # fmt: skip


@dataclass
class Host:
    """What the attacks aim at, and what must be unchanged after each."""

    root: Path
    workspace: Path
    digest: str
    secret: Path
    port: int
    accepted: list[object]
    victim: subprocess.Popen[bytes]
    attacker: Sandbox
    sibling: Sandbox
    abstract: str


def _listener(accepted: list[object]) -> tuple[socket.socket, socket.socket, str]:
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen()
    unix = socket.socket(socket.AF_UNIX)
    name = f"shadowrl-attack-{os.getpid()}"
    unix.bind("\0" + name)
    unix.listen()
    for s in (tcp, unix):
        threading.Thread(target=lambda s=s: accepted.append(s.accept()), daemon=True).start()
    return tcp, unix, name


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    root = tmp_path_factory.mktemp("host")
    ws = make_workspace(root)
    (ws / "canary").write_text("sibling canary")
    secret = root / "secret.txt"
    secret.write_text("host secret")
    accepted: list[object] = []
    tcp, unix, name = _listener(accepted)
    victim = subprocess.Popen(["sleep", "600"])
    base = create_sandbox(ws, "overlay", LIMITS)
    snap = base.snapshot()
    attacker, sibling = snap.fork(), snap.fork()
    snap.release()
    yield Host(root, ws, tree_digest(ws), secret, tcp.getsockname()[1], accepted, victim,
               attacker, sibling, name)  # fmt: skip
    for sb in (base, attacker, sibling):
        sb.close()
    victim.kill()
    tcp.close()
    unix.close()


def _unharmed(h: Host) -> None:
    assert h.victim.poll() is None, "host process died"
    assert h.secret.read_text() == "host secret"
    assert tree_digest(h.workspace) == h.digest, "host workspace changed"
    assert h.accepted == [], "a host socket accepted a connection"
    res = h.sibling.exec("cat canary")
    assert res.exit_code == 0 and res.stdout == "sibling canary"
    deadline = time.monotonic() + 5  # SIGKILLed processes finish exiting asynchronously
    while _leftover_processes(h) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _leftover_processes(h) == [], "processes outlived the exec"


def _leftover_processes(h: Host) -> list[int]:
    """Live members of the two sandboxes' cgroups, but their own bwrap and pid 1."""
    pids = []
    for sb in (h.attacker, h.sibling):
        cgroup, supervisor = sb._cgroup, sb._supervisor  # type: ignore[attr-defined]
        keep = supervisor.pids if supervisor is not None and supervisor.alive else frozenset()
        for procs in cgroup.procs_files if cgroup else ():
            pids += [int(p) for p in Path(procs).read_text().split() if int(p) not in keep]
    return pids


def py(code: str) -> str:
    return f"python3 -c {code!r}"


SYSCALL_PROBE = (
    "import ctypes,os; libc=ctypes.CDLL(None,use_errno=True); "
    "r=libc.syscall({nr},0,0,0,0,0); e=ctypes.get_errno(); "
    "print('ESCAPED' if r>=0 or e!=1 else 'blocked', e)"
)
_NR = {"ptrace": 101, "mount": 165, "unshare": 272, "setns": 308, "bpf": 321, "keyctl": 250,
       "add_key": 248, "init_module": 175, "finit_module": 313, "kexec_load": 246,
       "perf_event_open": 298, "userfaultfd": 323, "open_by_handle_at": 304, "pivot_root": 155,
       "swapon": 167, "reboot": 169, "io_uring_setup": 425, "chroot": 161}  # fmt: skip

# name -> command, or a function of the Host returning one
ATTACKS: dict[str, str | Callable[[Host], str]] = {
    "net_egress": py("import socket; socket.create_connection(('1.1.1.1', 53), 2); print('ESCAPED')"),
    "net_loopback_host_port": lambda h: py(
        f"import socket; socket.create_connection(('127.0.0.1', {h.port}), 2); print('ESCAPED')"
    ),
    "dns": py("import socket; socket.getaddrinfo('example.com', 80); print('ESCAPED')"),
    "net_interfaces": py(
        "import socket; n=[x for _, x in socket.if_nameindex()]; print('ESCAPED' if n != ['lo'] else n)"
    ),
    "abstract_unix_socket": lambda h: py(
        f"import socket; s=socket.socket(socket.AF_UNIX); s.connect('\\0{h.abstract}'); print('ESCAPED')"
    ),
    "read_etc_shadow": "cat /etc/shadow && echo ESCAPED",
    "list_root_home": "ls /root && echo ESCAPED",
    "read_host_file_by_path": lambda h: f"cat {h.secret} && echo ESCAPED",
    "read_other_uppers": lambda h: f"ls {get_store().root} && echo ESCAPED",
    "write_usr": "touch /usr/bin/evil && echo ESCAPED",
    "write_etc": "echo x >> /etc/passwd && echo ESCAPED",
    "tmp_is_private": "echo x > /tmp/shadowrl-attack-marker; test -e /tmp/shadowrl-attack-marker",
    "proc1_root": "cat /proc/1/root/etc/shadow && echo ESCAPED; ls /proc/1/root/root && echo ESCAPED",
    "mountinfo_host_paths": lambda h: (
        f"grep -q -e {get_store().root} -e {h.workspace} /proc/self/mountinfo && echo ESCAPED"
    ),
    "cgroupfs_write": "echo $$ > /sys/fs/cgroup/pids/cgroup.procs && echo ESCAPED; ls /sys/fs && echo ESCAPED",
    "proc_sys_write": "echo 1 > /proc/sys/kernel/sysrq && echo ESCAPED; echo h > /proc/sysrq-trigger && echo ESCAPED",
    "kill_host_process": lambda h: f"kill -9 {h.victim.pid} && echo ESCAPED",
    "kill_everything": "kill -9 -1; echo survived-kill",
    "see_host_processes": "ps -e | grep -q -e pytest -e sleep && echo ESCAPED",
    "setuid_su": "su root -c 'echo ESCAPED' </dev/null",
    "setuid_mount": "mount -t tmpfs none /tmp && echo ESCAPED",
    "unshare_userns": "unshare -r true && echo ESCAPED; unshare -U true && echo ESCAPED",
    "chroot_binary": "chroot / true && echo ESCAPED",
    "mknod_device": "mknod /tmp/disk b 254 0 && echo ESCAPED; test -e /dev/vda && echo ESCAPED",
    "hardlink_host_file": "ln /etc/passwd ./pw && echo ESCAPED; ln /usr/bin/su ./su && echo ESCAPED",
    "strace": "strace -f true 2>/dev/null && echo ESCAPED",
    "clone_new_namespace": py(
        "import ctypes; libc=ctypes.CDLL(None,use_errno=True); "
        "r=libc.syscall(56, 0x40000000|17, 0, 0, 0, 0); print('ESCAPED' if r>=0 else 'blocked')"
    ),
    "capabilities": "grep -E '^(CapEff|CapPrm|CapBnd):' /proc/self/status | grep -v 0000000000000000 && echo ESCAPED;"
    " grep -q 'NoNewPrivs:.1' /proc/self/status || echo ESCAPED; grep -q 'Seccomp:.2' /proc/self/status || echo ESCAPED",
    "host_uid": "test $(id -u) = 0 && echo ESCAPED",
    "env_leak": "env | grep -q SHADOWRL_TEST_SECRET && echo ESCAPED",
    "host_dev_shm": "ls /dev/shm | grep -q shadowrl-host && echo ESCAPED",
    **{f"syscall_{n}": py(SYSCALL_PROBE.format(nr=nr)) for n, nr in _NR.items()},
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attack_fails(host: Host, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHADOWRL_TEST_SECRET", "1")
    marker = Path("/dev/shm/shadowrl-host-file")
    marker.touch()
    attack = ATTACKS[name]
    cmd = attack(host) if callable(attack) else attack
    res = host.attacker.exec(cmd, timeout=10)
    assert "ESCAPED" not in res.stdout, (name, res)
    if name == "tmp_is_private":
        assert res.exit_code == 0 and not Path("/tmp/shadowrl-attack-marker").exists()
    marker.unlink()
    _unharmed(host)


def test_syscall_list_covers_the_brief() -> None:
    assert set(_NR) - {"chroot", "io_uring_setup"} <= set(DENIED_SYSCALLS)


def _run(h: Host, cmd: str, timeout: float = 10) -> ExecResult:
    res = h.attacker.exec(cmd, timeout=timeout)
    _unharmed(h)
    return res


def test_fork_bomb(host: Host) -> None:
    _run(host, "f() { f | f & }; f; sleep 2", timeout=4)  # contained: see _unharmed
    assert host.attacker.exec("echo ok").stdout == "ok\n"


def test_memory_bomb(host: Host) -> None:
    res = _run(host, py("b = b'x' * (1 << 30); print('ESCAPED')"))
    assert "ESCAPED" not in res.stdout and res.exit_code != 0


def test_disk_fill(host: Host) -> None:
    fill = "for i in 1 2 3 4 5 6; do head -c 7000000 /dev/zero > fill$i || break; done"
    res = _run(host, f"{fill}; cat fill* | wc -c")
    assert int(res.stdout) <= LIMITS.disk_mb << 20
    assert "No space" in res.stderr
    host.attacker.exec("rm -f fill*")


def test_file_size_limit(host: Host) -> None:
    res = _run(host, "head -c 20000000 /dev/zero > big; stat -c %s big; rm big")
    assert int(res.stdout.split()[0]) <= LIMITS.file_size_mb << 20 and res.exit_code == 0


def test_infinite_loop_times_out(host: Host) -> None:
    res = _run(host, "while :; do :; done", timeout=1)
    assert res.timed_out


def test_cpu_time_limit(host: Host) -> None:
    sb = create_sandbox(host.workspace, "overlay", Limits(cpu_seconds=1))
    res = sb.exec(py("while True: pass"), timeout=60)
    sb.close()
    assert not res.timed_out and res.exit_code in (128 + 9, 128 + 24)  # SIGKILL/SIGXCPU
    _unharmed(host)


def test_huge_output(host: Host) -> None:
    res = _run(host, "yes", timeout=1.5)
    assert res.truncated and len(res.stdout) == LIMITS.output_bytes


def test_background_process_does_not_survive(host: Host) -> None:
    res = _run(host, "(sleep 100 &) ; nohup sleep 100 >/dev/null 2>&1 & echo started")
    assert res.stdout == "started\n"


def test_symlink_escape_via_read_file(host: Host) -> None:
    _run(
        host, f"ln -sf /etc/shadow s1; ln -sf ../../../../../../{host.secret} s2; ln -sfn / rootdir"
    )
    for path in ("s1", "s2", "rootdir/etc/shadow", f"rootdir{host.secret}"):
        with pytest.raises(PermissionError):
            host.attacker.read_file(path)


def test_symlink_escape_via_write_file(host: Host) -> None:
    _run(host, f"ln -sfn {host.root} hostdir; ln -sf {host.secret} secretlink")
    with pytest.raises(PermissionError):
        host.attacker.write_file("hostdir/pwned.txt", "x")
    with pytest.raises(PermissionError):
        host.attacker.write_file("secretlink", "overwritten")
    assert not (host.root / "pwned.txt").exists()
    _unharmed(host)
