"""The server the real-time loop deploys into: its own process, found again on a rerun.

`shadowrl serve` runs as a child in a session of its own, so the cycle driver can die
(a bug, a kill, a reboot of the driver alone) while users keep being served. Its pid
and URL are kept in `server.json`; a rerun that finds that process alive and healthy
reuses it, else it starts a new one serving the registry's live checkpoint. Deploys
and rollbacks are hot swaps through the server's admin route: requests in flight
finish, and their tokens keep the version that produced them.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from shadowrl.atomic import write_file, write_json


class ServerError(RuntimeError):
    """The server did not start, or refused an admin call."""


@dataclass(frozen=True)
class ServerProcess:
    pid: int
    url: str
    admin_token: str

    def healthy(self) -> dict[str, object] | None:
        """The server's /health body, or None when it does not answer."""
        try:
            resp = httpx.get(f"{self.url}/health", timeout=5)
        except httpx.HTTPError:
            return None
        return resp.json() if resp.status_code == 200 else None

    def load_weights(self, path: str, version: int) -> dict[str, object]:
        """Hot-swap `path` in as policy `version`."""
        return self._admin("/admin/load_weights", {"path": path, "version": version})

    def rollback(self) -> dict[str, object]:
        """`POST /admin/rollback`: the server restores the previous deployed checkpoint."""
        return self._admin("/admin/rollback", None)

    def _admin(self, route: str, body: dict[str, object] | None) -> dict[str, object]:
        headers = {"Authorization": f"Bearer {self.admin_token}"}
        resp = httpx.post(f"{self.url}{route}", json=body, headers=headers, timeout=600)
        if resp.status_code != 200:
            raise ServerError(f"{route}: HTTP {resp.status_code}: {resp.text[:300]}")
        out: dict[str, object] = resp.json()
        return out

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM the server (its whole process group), SIGKILL if it lingers."""
        try:
            os.killpg(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout_s
        while alive(self.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if alive(self.pid):
            os.killpg(self.pid, signal.SIGKILL)


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie counts as gone; our own child is reaped here)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    except ChildProcessError:
        pass  # not our child: ask /proc
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


TOKEN_FILE = "admin_token"


def run_admin_token(root: Path, given: str = "") -> Path:
    """The file under `root` holding the run's admin token (mode 0600): `given`, else the one
    a previous start of the run made, else a fresh random one. A file, so the token never
    appears on a command line (`ps` shows those to every user)."""
    path = root / TOKEN_FILE
    if given or not path.exists():
        write_file(path, (given or secrets.token_urlsafe(32)) + "\n", mode=0o600)
    return path


def read_admin_token(path: Path) -> str:
    return path.read_text().strip()


def find_server(state: Path, admin_token: str) -> ServerProcess | None:
    """The server a previous run started, if it still runs and answers."""
    if not state.exists():
        return None
    saved = json.loads(state.read_text())
    proc = ServerProcess(int(saved["pid"]), str(saved["url"]), admin_token)
    return proc if alive(proc.pid) and proc.healthy() is not None else None


def start_server(
    argv: Sequence[str], port: int, state: Path, log_path: Path, admin_token: str,
    timeout_s: float = 900.0,
) -> ServerProcess:  # fmt: skip
    """Start `argv` (a `shadowrl serve` command line listening on `port`), wait for health."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        child = subprocess.Popen(
            list(argv), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    proc = ServerProcess(child.pid, f"http://127.0.0.1:{port}", admin_token)
    deadline = time.monotonic() + timeout_s
    while proc.healthy() is None:
        if child.poll() is not None:
            raise ServerError(f"the server exited with {child.returncode}; see {log_path}")
        if time.monotonic() > deadline:
            proc.stop()
            raise ServerError(f"the server did not answer within {timeout_s:.0f} s; see {log_path}")
        time.sleep(0.5)
    write_json(state, asdict(proc) | {"admin_token": None})
    return proc
