"""A real S3 API on loopback (moto's server, started here, stopped by its pid) and the
three weight-store backends the store's tests run over."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest


@dataclass(frozen=True)
class StoreUrl:
    """Where a test's weight store lives, and what fsspec needs to open it."""

    url: str
    options: dict[str, Any] = field(default_factory=dict)
    local: Path | None = None  # the directory behind a file:// store


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def s3_server() -> Iterator[dict[str, Any]]:
    """`moto.server` on 127.0.0.1 as a subprocess; yields s3fs storage options for it."""
    pytest.importorskip("s3fs", reason="the s3:// store needs s3fs (pip install .[s3])")
    pytest.importorskip(
        "moto.server", reason="the local S3 server is moto's (pip install moto[server])"
    )
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(endpoint, timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto server did not start (exit {proc.poll()})") from None
                time.sleep(0.1)
        yield {"endpoint_url": endpoint, "key": "test", "secret": "test",
               "client_kwargs": {"region_name": "eu-west-1"}}  # fmt: skip
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(params=["file", "memory", "s3"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> StoreUrl:
    """A fresh, empty store location on each backend."""
    name = uuid.uuid4().hex[:12]
    if request.param == "file":
        return StoreUrl(f"file://{tmp_path}/weights", local=tmp_path / "weights")
    if request.param == "memory":
        return StoreUrl(f"memory://weights-{name}")
    return StoreUrl(f"s3://weights-{name}/run", request.getfixturevalue("s3_server"))
