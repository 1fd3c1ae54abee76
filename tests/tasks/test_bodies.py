"""An id is paid only if test code ran in its call phase (issue 33: "any expected test whose
body did not run voids the episode"). The grader's plugin says in each call phase's
record whether test code ran since the setup was reported; `runner.read_outcomes` voids
a run where an id reported passed ran none. Honest shapes (parametrized tests, a
`unittest.TestCase`, a doctest, a test calling only the code under test) still pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from shadowrl.tasks.env import build_env, env_python
from shadowrl.tasks.runner import TestRun, new_key, read_outcomes, record_line, run_tests_local
from shadowrl.tasks.task import Seed, Task

TESTS = """import unittest

import pytest

from calc import add


def test_add():
    assert add(2, 3) == 5


@pytest.mark.parametrize("a", [1, 2])
def test_add_p(a):
    assert add(a, 0) == a


class TestAdd(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(1, 1), 2)


test_alias = test_add
"""
IDS = (
    "test_calc.py::test_add",
    "test_calc.py::test_add_p[1]",
    "test_calc.py::test_add_p[2]",
    "test_calc.py::TestAdd::test_add",
    "test_calc.py::test_alias",
    "calc.py::calc.add",
)
PROFILE = """

def test_profile():
    import sys

    assert sys.getprofile() is None
"""
PROFILED = "test_calc.py::test_profile"  # passes only where no profile function is set
CALC = '''def add(a, b):
    """
    >>> add(1, 2)
    3
    """
    return a + b
'''
# Through the assertion rewriter's config (`redteam/verdict_hacks.py`'s RUN_STATE).
CONFIG = "import sys\n_cfg = [h for h in sys.meta_path if hasattr(h, 'config')][0].config\n"
HACKS = {
    "emptied": CONFIG + "_cfg.hook.pytest_runtest_call._hookimpls.clear()\n",
    "runtest": "import sys\nsys.modules['_pytest.python'].Function.runtest = lambda self: None\n",
}


@pytest.fixture(scope="module")
def python(cache_dir: Path) -> Path:
    return env_python(build_env(("pytest",), cache_dir))


def _run(root: Path, python: Path, prefix: str = "", *, watched: bool = True) -> TestRun:
    (root / "calc.py").write_text(prefix + CALC)
    (root / "test_calc.py").write_text(TESTS + PROFILE)
    task = Task(
        instance_id="tiny__bodies",
        repo="local/tiny",
        problem_statement="-",
        patch="",
        FAIL_TO_PASS=IDS[:1],
        PASS_TO_PASS=IDS[1:],
        seed=Seed(path=str(root)),
        test_cmd=("python", "-P", "-m", "pytest", "--doctest-modules"),
        timeout_s=60,
    )
    return run_tests_local(task, root, python, (*IDS, PROFILED), root, watched=watched)


@pytest.mark.parametrize("watched", [True, False])
def test_honest_tests_of_every_shape_ran_their_bodies(
    watched: bool, tmp_path: Path, python: Path
) -> None:
    """Watched or not (the generator's own code: canary plans), every honest shape passes;
    the profile function is the watch's only where the run is watched."""
    run = _run(tmp_path, python, watched=watched)
    assert run.status == "ran" and run.results(IDS) == dict.fromkeys(IDS, "passed"), run.log
    assert run.results([PROFILED])[PROFILED] == ("failed" if watched else "passed"), run.log


@pytest.mark.parametrize(("hack", "watched"), [*((h, True) for h in HACKS), ("emptied", False)])
def test_passed_without_a_body_is_tampering(
    hack: str, watched: bool, tmp_path: Path, python: Path
) -> None:
    """No test body runs, every call phase passes: the run is void (it read `ran`, every id
    passed, before the body check). Unwatched, pytest calling the item is the evidence, so
    the hack that empties the call hook is still caught there (one that replaces `runtest`
    is not: only the generator's own code runs unwatched, never an episode's)."""
    run = _run(tmp_path, python, HACKS[hack], watched=watched)
    assert run.status == "tampered", (run.status, run.outcomes, run.log)
    assert any("no test code ran in its call phase" in t for t in run.tampered), run.tampered


def test_the_reader_voids_a_passed_call_without_a_body() -> None:
    key = new_key()
    calls: list[dict[str, object]] = [{"nodeid": "t.py::a", "when": "call", "outcome": "passed", "body": True},
             {"nodeid": "t.py::b", "when": "call", "outcome": "passed"},
             {"nodeid": "t.py::c", "when": "call", "outcome": "failed", "body": False}]  # fmt: skip
    records: list[dict[str, object]] = [*calls, {"exitstatus": 1}]
    text = "".join(record_line(key, i, r) for i, r in enumerate(records))
    found = read_outcomes(text, key, False, 1)
    assert found.status == "tampered"
    assert found.tampered == ("t.py::b: reported passed, but no test code ran in its call phase",)
