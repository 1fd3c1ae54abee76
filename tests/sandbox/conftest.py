"""Shared fixtures: a small workspace and sandboxes of each available backend."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from required import require
from shadowrl.sandbox import Limits, Sandbox, create_sandbox
from shadowrl.sandbox.overlay import unavailable_reason

# skipped where the overlay sandbox is unavailable, a failure under CI (`required.py`)
needs_overlay = pytest.mark.needs_overlay
BACKENDS = [pytest.param("overlay", marks=needs_overlay), "local"]


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("needs_overlay") is not None:
        require(unavailable_reason(), "overlay sandbox")


def make_workspace(root: Path) -> Path:
    ws = root / "ws"
    (ws / "src" / "pkg").mkdir(parents=True)
    (ws / "tests").mkdir()
    (ws / "README.md").write_text("# demo\n")
    (ws / "src" / "pkg" / "mod.py").write_text("def add(a, b):\n    return a + b\n")
    (ws / "tests" / "test_mod.py").write_text("from pkg.mod import add\n")
    os.symlink("src/pkg/mod.py", ws / "link.py")
    return ws


def tree_digest(root: Path) -> str:
    """Hash of every path, mode, owner and content under `root` (symlinks not followed)."""
    h = hashlib.sha256()
    for dirpath, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(dirs + files):
            p = Path(dirpath, name)
            st = p.lstat()
            h.update(f"{p.relative_to(root)}|{st.st_mode}|{st.st_uid}|".encode())
            if p.is_symlink():
                h.update(os.readlink(p).encode())
            elif p.is_file():
                h.update(p.read_bytes())
    return h.hexdigest()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


@pytest.fixture(params=BACKENDS)
def sandbox(request: pytest.FixtureRequest, workspace: Path) -> Iterator[Sandbox]:
    limits = Limits(output_bytes=1000, disk_mb=16, memory_mb=256, pids=64)
    sb = create_sandbox(workspace, request.param, limits)
    yield sb
    sb.close()
