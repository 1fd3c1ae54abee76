"""Fixtures of the server tests: the tiny tokenizer, servers on free ports, the engine,
and the trace stores (SQLite, and a real PostgreSQL server) the server and store
suites both run on.

The server is Debian's `postgresql` (installed by scripts/setup.sh), started once per
session with initdb/pg_ctl as an unprivileged user (`nobody` when the tests run as
root), listening only on a unix socket in a temp dir, and stopped by its pid at the
end. Every store test runs on SQLite and on that server (`store_url`). Without the
binaries the PostgreSQL half fails under CI (CI=true) and skips elsewhere.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from serve_fakes import MODEL

from chromium import browser  # noqa: F401  (the page tests' headless Chromium)
from required import unavailable
from shadowrl.models import load_tokenizer
from shadowrl.serve.app import create_app
from shadowrl.serve.store import TraceStore
from shadowrl.serve.store.db import open_engine
from shadowrl.serve.threaded import serve_in_thread


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return load_tokenizer("tiny")


@pytest.fixture
def serve(tokenizer: Any) -> Iterator[Any]:
    """`serve(policy, **create_app kwargs)` -> (openai client, base url); servers stop at exit."""
    stack: list[Any] = []

    def start(policy: Any, **kw: Any) -> tuple[openai.OpenAI, str]:
        kw.setdefault("max_context_tokens", 2048)
        ctx = serve_in_thread(create_app(policy, tokenizer, MODEL, **kw))
        url = ctx.__enter__()
        stack.append(ctx)
        return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0), url

    yield start
    for ctx in reversed(stack):
        ctx.__exit__(None, None, None)


@pytest.fixture(scope="module")
def engine() -> Iterator[Any]:
    from shadowrl.inference.config import EngineConfig
    from shadowrl.inference.engine import Engine
    from shadowrl.models import tiny_model

    model, tok = tiny_model(seed=0)
    config = EngineConfig(max_batch=8, max_seq_len=1024, initial_kv_len=128)
    with Engine(model, tok, config) as eng:
        yield eng


_db_names = itertools.count()


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if found:
        return Path(found[-1]).parent
    which = shutil.which("pg_ctl")
    return Path(which).resolve().parent if which else None


def _as_owner(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "nobody", "--", *cmd] if os.geteuid() == 0 else cmd


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, exited but not yet reaped, counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_gone(pid: int, seconds: float = 30.0) -> bool:
    # pg_ctl -w returns once postmaster.pid is removed, a moment before the process exits
    deadline = time.monotonic() + seconds
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The libpq host (socket dir) of a throwaway PostgreSQL server."""
    bindir = _pg_bin()
    if bindir is None or not (bindir / "initdb").exists():
        unavailable("PostgreSQL binaries not found: apt-get install postgresql (scripts/setup.sh)")
    root = Path(tempfile.mkdtemp(prefix="shadowrl-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, "nobody")
        shutil.chown(sock, "nobody")
    run = lambda *a: subprocess.run(_as_owner([str(x) for x in a]), check=True, capture_output=True)  # noqa: E731
    run(bindir / "initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
    # socket only (no TCP port to collide on); fsync off: the tests kill clients, never the server
    opts = f"-k {sock} -c listen_addresses='' -c fsync=off"
    run(bindir / "pg_ctl", "-D", data, "-o", opts, "-l", root / "log", "-w", "start")
    pid = int((data / "postmaster.pid").read_text().split()[0])
    try:
        yield str(sock)
    finally:
        run(bindir / "pg_ctl", "-D", data, "-m", "fast", "-w", "stop")
        assert _wait_gone(pid), f"postmaster {pid} still running after pg_ctl stop"
        shutil.rmtree(root, ignore_errors=True)


def _new_pg_database(host: str) -> str:
    import psycopg

    name = f"traces_{os.getpid()}_{next(_db_names)}"
    with psycopg.connect(host=host, user="postgres", dbname="postgres", autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    return f"postgresql+psycopg://postgres@/{name}?host={host}"


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL of an empty database: a SQLite file, or a new database on the server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'traces.db'}"
    return _new_pg_database(request.getfixturevalue("postgres_server"))


@pytest.fixture
def open_store(store_url: str) -> Iterator[Callable[..., TraceStore]]:
    """Opens stores on `store_url` (migrated), closing each at the end of the test."""
    opened: list[TraceStore] = []

    def opener(max_batch: int = 512) -> TraceStore:
        store = TraceStore(open_engine(store_url), max_batch=max_batch)
        opened.append(store)
        return store

    yield opener
    for store in opened:
        store.close()


@pytest.fixture
def sqlite_trace_store(tmp_path: Path) -> Iterator[TraceStore]:
    """A store on a SQLite file (the default backend), for tests that need only one."""
    store = TraceStore(open_engine(f"sqlite:///{tmp_path / 'traces.db'}"))
    yield store
    store.close()
