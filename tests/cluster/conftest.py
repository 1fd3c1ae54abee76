"""A real two-node Ray cluster on loopback, started once per test session.

The head runs on 127.0.0.2 (it advertises a `trainer` resource), the worker node on
127.0.0.3 (advertising `rollout`), so where each actor lands is observable. Ray
refuses 127.0.0.1 as a node address and would silently fall back to the network
interface, hence 127.0.0.2/3. The cluster gets its own temp dir and ports, and token
auth is off explicitly (`RAY_AUTH_MODE=disabled`, for the nodes and this driver): a
~/.ray/auth_token left by another cluster would otherwise switch it on and make
`ray.init` fail with InvalidAuthToken. HOME stays as is, so the model and index caches
under ~/.cache are shared with the rest of the suite. Resources are tiny, and the
cluster is stopped by the pids of its own `ray start --block` processes: never
`ray stop`, which would end every Ray process on the machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
HEAD, WORKER = "127.0.0.2", "127.0.0.3"


@dataclass(frozen=True)
class Cluster:
    address: str
    root: Path


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _ray_start(root: Path, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen:
    ray = Path(sys.executable).with_name("ray")
    log = open(root / f"{name}.log", "wb")  # noqa: SIM115 (the process owns it until it ends)
    return subprocess.Popen(
        [str(ray), "start", "--block", "--disable-usage-stats", *args],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: stopped by that, nothing else
    )


def _descendants(pid: int) -> list[int]:
    """Every process below `pid` (Ray's workers start sessions of their own)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _stop(procs: list[subprocess.Popen]) -> None:
    tree = {p.pid: _descendants(p.pid) for p in procs}
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + 5  # `ray start --block` may sit on SIGTERM: then SIGKILL
    for p in procs:
        try:
            p.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    for pid in [d for ds in tree.values() for d in ds]:  # workers that outlived their raylet
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _wait_for_nodes(address: str, n: int, procs: list[subprocess.Popen], root: Path) -> None:
    import ray

    deadline = time.monotonic() + 120
    while True:
        for p in procs:
            if p.poll() is not None:
                logs = "\n".join(f.read_text()[-2000:] for f in root.glob("*.log"))
                raise RuntimeError(f"ray start exited with {p.returncode}:\n{logs}")
        try:
            if not ray.is_initialized():
                ray.init(address=address, namespace="shadowrl", logging_level="WARNING")
            if sum(node["Alive"] for node in ray.nodes()) >= n:
                return
        except ConnectionError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"the test cluster at {address} did not come up")
        time.sleep(0.5)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Cluster]:
    pytest.importorskip("ray")
    import ray

    root = Path(tempfile.mkdtemp(prefix="srl-ray-"))  # short: Ray's socket paths must fit
    port = _free_port(HEAD)
    env = {
        **os.environ,
        "RAY_AUTH_MODE": "disabled",  # a stale ~/.ray/auth_token must not switch auth on
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
        "RAY_USAGE_STATS_ENABLED": "0",
        # a worker process importing torch on a shared, loaded box can take minutes to
        # register; past Ray's 60 s default its actor is declared unschedulable
        "RAY_worker_register_timeout_seconds": "600",
        # Ray's memory monitor reads the whole machine's memory, shared here with other
        # jobs: at 95 % it SIGKILLs this cluster's actors (0.2-0.4 GB each) for them
        "RAY_memory_monitor_refresh_ms": "0",
    }
    common = ["--num-cpus=2", f"--object-store-memory={96 << 20}"]
    address = f"{HEAD}:{port}"
    head = _ray_start(
        root,
        "head",
        [
            "--head",
            f"--node-ip-address={HEAD}",
            f"--port={port}",
            f"--dashboard-host={HEAD}",
            "--include-dashboard=false",
            f"--ray-client-server-port={_free_port(HEAD)}",
            f"--dashboard-agent-listen-port={_free_port(HEAD)}",
            f"--temp-dir={root / 'tmp'}",
            f"--resources={json.dumps({'trainer': 1})}",
            *common,
        ],
        env,
    )
    procs = [head]
    saved = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"  # this driver too
    try:
        # the worker joins once the head answers: on a loaded box a worker started at
        # once may give up on the head's GCS before that is up
        _wait_for_nodes(address, 1, procs, root)
        worker = _ray_start(
            root,
            "worker",
            [
                f"--address={address}",
                f"--node-ip-address={WORKER}",
                f"--dashboard-agent-listen-port={_free_port(WORKER)}",
                f"--resources={json.dumps({'rollout': 8})}",
                *common,
            ],
            env,
        )
        procs.append(worker)
        _wait_for_nodes(address, 2, procs, root)
        yield Cluster(address, root)
    finally:
        ray.shutdown()
        _stop(procs)
        if saved is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = saved
        shutil.rmtree(root, ignore_errors=True)
