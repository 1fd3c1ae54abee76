"""A throwaway PostgreSQL server for a benchmark: Debian's binaries, initdb + pg_ctl as
an unprivileged user (`nobody` under root), a unix socket in a temp dir, no TCP port;
stopped by pg_ctl and removed on exit. Unlike the test fixture it keeps `fsync` on:
a benchmark of commit cost must pay for durable commits."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    which = shutil.which("initdb")
    return Path(which).resolve().parent if which else None


@contextmanager
def postgres_server() -> Iterator[str]:
    """Yield a SQLAlchemy URL of a fresh database on a server started for the block."""
    bindir = pg_bin()
    if bindir is None:
        raise RuntimeError("PostgreSQL binaries not found: apt-get install postgresql")
    root = Path(tempfile.mkdtemp(prefix="shadowrl-bench-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    as_owner: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "nobody")
        shutil.chown(sock, "nobody")
        as_owner = ["runuser", "-u", "nobody", "--"]

    def run(*cmd: object) -> None:
        subprocess.run([*as_owner, *map(str, cmd)], check=True, capture_output=True)

    try:
        # --no-sync: only initdb's own final flush; the server runs with fsync on
        run(
            bindir / "initdb",
            "-D",
            data,
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-sync",
        )
        opts = f"-k {sock} -c listen_addresses=''"
        run(bindir / "pg_ctl", "-D", data, "-o", opts, "-l", root / "log", "-w", "start")
        try:
            run(bindir / "createdb", "-h", sock, "-U", "postgres", "traces")
            yield f"postgresql+psycopg://postgres@/traces?host={sock}"
        finally:
            run(bindir / "pg_ctl", "-D", data, "-m", "fast", "-w", "stop")
    finally:
        shutil.rmtree(root, ignore_errors=True)
