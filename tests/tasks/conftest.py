"""Shared fixtures: a persistent prepare cache and a sandbox on a prepared workspace.

The sandbox comes from `shadowrl.sandbox` (the `local` backend) when it is
available; until then a minimal copy-on-fork directory sandbox stands in for the
other side of the interface, with the same semantics the grader relies on.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from shadowrl.sandbox import ExecResult, Sandbox
from shadowrl.tasks.patch import make_patch
from shadowrl.tasks.prepare import PreparedTask, prepare
from shadowrl.tasks.task import Seed, Task

CACHE = Path(
    os.environ.get("SHADOWRL_TEST_CACHE", Path(tempfile.gettempdir()) / "shadowrl-test-cache")
)


class DirSandbox:
    """A sandbox that is just a directory; snapshot and fork copy it."""

    backend = "dir"

    def __init__(self, root: Path, origin: Path) -> None:
        self.root, self.origin = root, origin

    def exec(self, cmd: str, timeout: float = 30.0) -> ExecResult:
        proc = subprocess.Popen(
            ["/bin/sh", "-c", cmd],
            cwd=self.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            timed_out = True
        return ExecResult(
            proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"), timed_out
        )

    def read_file(self, path: str | Path) -> bytes:
        return (self.root / path).read_bytes()

    def write_file(self, path: str | Path, data: str | bytes) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode() if isinstance(data, str) else data)

    def list_files(self) -> list[str]:
        return sorted(str(p.relative_to(self.root)) for p in self.root.rglob("*") if p.is_file())

    def changed_files(self) -> list[str]:
        mine = set(self.list_files())
        base = {str(p.relative_to(self.origin)) for p in self.origin.rglob("*") if p.is_file()}
        return sorted(
            p
            for p in mine | base
            if p not in mine
            or p not in base
            or (self.root / p).read_bytes() != (self.origin / p).read_bytes()
        )

    def snapshot(self) -> DirSnapshot:
        dest = Path(tempfile.mkdtemp(prefix="snap-"))
        shutil.copytree(self.root, dest, dirs_exist_ok=True, symlinks=True)
        return DirSnapshot(dest, self.origin)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


class DirSnapshot:
    def __init__(self, root: Path, origin: Path) -> None:
        self.root, self.origin = root, origin

    def fork(self) -> DirSandbox:
        dest = Path(tempfile.mkdtemp(prefix="fork-"))
        shutil.copytree(self.root, dest, dirs_exist_ok=True, symlinks=True)
        return DirSandbox(dest, self.origin)

    def release(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def open_sandbox(prepared: PreparedTask) -> Sandbox:
    """The real local sandbox if it has landed, else the directory stand-in."""
    try:
        return prepared.sandbox("local")
    except (NotImplementedError, TypeError, ImportError, ValueError):
        return DirSnapshot(prepared.workspace, prepared.workspace).fork()


@pytest.fixture(scope="session")
def cache_dir() -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    return CACHE


@pytest.fixture
def sandbox_for() -> Iterator[Callable[[PreparedTask], Sandbox]]:
    opened: list[Sandbox] = []

    def make(prepared: PreparedTask) -> Sandbox:
        box = open_sandbox(prepared)
        opened.append(box)
        return box

    yield make
    for box in opened:
        box.close()


CALC = '''def add(a, b):
    """Sum of a and b."""
    return a + b


def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x
'''

VISIBLE = """from calc import clamp


def test_clamp():
    assert clamp(5, 0, 3) == 3
    assert clamp(-1, 0, 3) == 0
"""

HIDDEN = """import pytest

from calc import add


def test_add():
    assert add(2, 3) == 5


@pytest.mark.parametrize("a,b", [(1, 2)], ids=["one two"])
def test_add_p(a, b):
    assert add(a, b) == a + b
"""


def tiny_task(root: Path) -> Task:
    seed = root / "seed"
    seed.mkdir(parents=True, exist_ok=True)
    (seed / "calc.py").write_text(CALC)
    (seed / "test_calc.py").write_text(VISIBLE)
    buggy = CALC.replace("a + b", "a - b")
    return Task(
        instance_id="tiny__add-1",
        repo="local/tiny",
        problem_statement="`calc.add(2, 3)` returns -1 instead of 5.",
        patch=make_patch({"calc.py": buggy}, {"calc.py": CALC}),
        bug_patch=make_patch({"calc.py": CALC}, {"calc.py": buggy}),
        test_patch=make_patch({}, {"test_add.py": HIDDEN}),
        FAIL_TO_PASS=("test_add.py::test_add", "test_add.py::test_add_p[one two]"),
        PASS_TO_PASS=("test_calc.py::test_clamp",),
        seed=Seed(path=str(seed)),
        tier="easy",
        source="hand",
        timeout_s=30,
    )


@pytest.fixture(scope="session")
def tiny(cache_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> PreparedTask:
    """The tiny task, prepared once per session."""
    return prepare(tiny_task(tmp_path_factory.mktemp("tiny")), cache_dir)
