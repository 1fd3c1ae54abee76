"""Shared fixtures: a persistent prepare cache, real sandboxes, and a tiny task.

The prepare cache survives test sessions (envs take seconds to build the first
time, then are reused); set SHADOWRL_TEST_CACHE to move it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from required import unavailable
from shadowrl.sandbox import Sandbox
from shadowrl.tasks.patch import make_patch
from shadowrl.tasks.prepare import PreparedTask, prepare
from shadowrl.tasks.task import Seed, Task

CACHE = Path(
    os.environ.get("SHADOWRL_TEST_CACHE", Path(tempfile.gettempdir()) / "shadowrl-test-cache")
)


def overlay_available() -> bool:
    from shadowrl.sandbox.overlay import unavailable_reason

    return unavailable_reason() is None


@pytest.fixture(scope="session")
def cache_dir() -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    return CACHE


@pytest.fixture
def sandbox_for() -> Iterator[Callable[..., Sandbox]]:
    """Opens sandboxes on prepared tasks (local backend unless asked) and closes them."""
    opened: list[Sandbox] = []

    def make(prepared: PreparedTask, backend: str = "local") -> Sandbox:
        if backend == "overlay" and not overlay_available():
            unavailable("overlay sandbox unavailable here")
        box = prepared.sandbox(backend)
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
