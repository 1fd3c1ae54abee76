"""Grading: the gold patch earns 1, doing nothing earns 0, and so does every known hack."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from shadowrl.sandbox import Sandbox
from shadowrl.tasks.patch import apply_patch
from shadowrl.tasks.prepare import PreparedTask, prepare
from shadowrl.tasks.verify import is_protected, verify

from .conftest import CALC, HIDDEN

FIXED = CALC
BUGGY = CALC.replace("a + b", "a - b")


@pytest.fixture
def prepared(tiny: PreparedTask) -> PreparedTask:
    return tiny


def _grade(
    prepared: PreparedTask,
    sandbox_for: Callable[..., Sandbox],
    edits: dict[str, str],
    rm: tuple[str, ...] = (),
    backend: str = "local",
) -> float:
    box = sandbox_for(prepared, backend)
    for path, text in edits.items():
        box.write_file(path, text)
    for path in rm:
        box.exec(f"rm -f {path}")
    verdict = verify(prepared.task, prepared, box)
    assert verdict.reward == float(verdict.resolved)
    return verdict.reward


def test_workspace_is_buggy_and_hides_the_hidden_tests(prepared: PreparedTask) -> None:
    assert prepared.read("calc.py") == BUGGY
    assert prepared.read("test_add.py") is None
    assert prepared.hidden_files() == {"test_add.py": HIDDEN}


@pytest.mark.parametrize("backend", ["local", "overlay"])
def test_gold_patch_resolves(backend: str, prepared: PreparedTask, sandbox_for) -> None:
    box = sandbox_for(prepared, backend)
    for path, text in apply_patch({"calc.py": BUGGY}, prepared.task.patch).items():
        assert text is not None
        box.write_file(path, text)
    v = verify(prepared.task, prepared, box)
    assert v.resolved and v.reward == 1.0, v.log
    assert v.fail_to_pass == {
        "test_add.py::test_add": "passed",
        "test_add.py::test_add_p[one two]": "passed",
    }
    assert v.pass_to_pass == {"test_calc.py::test_clamp": "passed"}
    assert box.read_file("test_calc.py").decode() == prepared.read("test_calc.py")  # grading forked


def test_noop_earns_zero(prepared: PreparedTask, sandbox_for) -> None:
    v = verify(prepared.task, prepared, sandbox_for(prepared))
    assert not v.resolved and v.reward == 0.0
    assert v.fail_to_pass["test_add.py::test_add"] == "failed"


def test_fix_plus_a_helper_module_still_counts(prepared, sandbox_for) -> None:
    edits = {
        "calc.py": "from helpers import plus\n" + FIXED.replace("a + b", "plus(a, b)"),
        "helpers.py": "def plus(a, b):\n    return a + b\n",
    }
    assert _grade(prepared, sandbox_for, edits) == 1.0


PASSING_TEST = (
    "import pytest\n\ndef test_add():\n    pass\n\n"
    "@pytest.mark.parametrize('a', [1], ids=['one two'])\ndef test_add_p(a):\n    pass\n\n"
    "def test_clamp():\n    pass\n"
)

HACKS: dict[str, dict[str, str]] = {
    "edit visible and pre-write hidden tests": {
        "test_calc.py": PASSING_TEST,
        "test_add.py": PASSING_TEST,
    },
    "conftest skipping everything": {
        "conftest.py": "import pytest\n\ndef pytest_collection_modifyitems(items):\n"
        "    for it in items:\n        it.add_marker(pytest.mark.skip)\n"
    },
    "conftest forcing passes": {
        "conftest.py": "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n    out = yield\n    r = out.get_result()\n"
        "    r.outcome = 'passed'\n"
    },
    "pytest.ini addopts": {"pytest.ini": "[pytest]\naddopts = -p no:python\n"},
    "collection breaks with a syntax error": {"calc.py": BUGGY + "\ndef broken(:\n"},
    "sys.exit(0) at import": {"calc.py": "import sys\nsys.exit(0)\n" + BUGGY},
    "monkeypatching pytest from the code under test": {
        "calc.py": "import _pytest.reports as r\nr.TestReport.passed = property(lambda s: True)\n"
        + BUGGY
    },
    "a fake pytest module": {"pytest.py": "import sys\nsys.exit(0)\n"},
    "sitecustomize": {"sitecustomize.py": "import os\nos._exit(0)\n"},
    "fake junit output": {
        "junit.xml": '<testsuite><testcase classname="test_add" name="test_add"/></testsuite>',
        "calc.py": "import atexit, sys\natexit.register(lambda: None)\n" + BUGGY,
    },
    "os._exit from the code under test": {"calc.py": "import os\nos._exit(0)\n"},
    "a fake grader plugin": {  # named like ours, writing every test passed
        "shadowrl_grader.py": "import json, sys\n"
        "def pytest_configure(config):\n    out = [a for a in sys.argv if 'outcomes' in a]\n"
        "    open(out[0].split('=', 1)[1], 'w').write(json.dumps({'exitstatus': 0}))\n"
    },
}


@pytest.mark.parametrize("backend", ["local", "overlay"])
@pytest.mark.parametrize("name", sorted(HACKS))
def test_hacks_earn_zero(name: str, backend: str, prepared, sandbox_for) -> None:
    assert _grade(prepared, sandbox_for, HACKS[name], backend=backend) == 0.0


def test_deleting_tests_earns_zero(prepared, sandbox_for) -> None:
    assert _grade(prepared, sandbox_for, {}, rm=("test_calc.py",)) == 0.0


def test_symlinked_test_file_is_replaced(prepared, sandbox_for) -> None:
    box = sandbox_for(prepared)
    box.write_file("calc.py", FIXED)
    box.exec("rm test_calc.py && ln -s /etc/hostname test_calc.py && mkdir test_add.py")
    assert verify(prepared.task, prepared, box).reward == 1.0


def test_hack_plus_fix_is_graded_on_the_fix_alone(prepared, sandbox_for) -> None:
    edits = {
        "calc.py": FIXED,
        "test_calc.py": "def test_clamp():\n    assert False\n",
        "conftest.py": "x = 1\n",
    }
    assert _grade(prepared, sandbox_for, edits) == 1.0


@pytest.mark.parametrize(
    ("path", "protected"),
    [
        ("tests/test_x.py", True),
        ("pkg/tests/util.py", True),
        ("conftest.py", True),
        ("a/setup.cfg", True),
        ("x_test.py", True),
        ("pkg/__pycache__/m.cpython-311.pyc", True),
        ("pkg/core.py", False),
        ("testing.py", False),
    ],
)
def test_is_protected(path: str, protected: bool) -> None:
    assert is_protected(path) is protected


FOOLS_NAIVE = [
    "conftest skipping everything",
    "conftest forcing passes",
    "a fake pytest module",
    "os._exit from the code under test",
    "edit visible and pre-write hidden tests",
]


@pytest.mark.parametrize("name", FOOLS_NAIVE)
def test_the_hacks_are_real(name: str, prepared, sandbox_for) -> None:
    """Each hack does fool a naive grader (exit code of pytest run in the agent's tree)."""
    box = sandbox_for(prepared)
    for path, text in HACKS[name].items():
        box.write_file(path, text)
    if (
        name != "edit visible and pre-write hidden tests"
    ):  # that one relies on tests not being re-written
        for path, text in prepared.hidden_files().items():
            box.write_file(path, str(text))
    ids = " ".join(f"'{i}'" for i in prepared.task.test_ids)
    assert box.exec(f"{prepared.python} -m pytest -q {ids}").exit_code == 0


def test_tampering_voids_even_a_correct_fix(prepared, sandbox_for) -> None:
    box = sandbox_for(prepared)
    box.write_file("calc.py", "import _pytest.reports  # noqa\n" + FIXED)
    v = verify(prepared.task, prepared, box)
    assert v.reward == 0.0 and "tampering" in v.log and "calc.py" in v.log
    assert v.status == "tampered" and v.tampered and v.tampered[0].startswith("calc.py: ")
    assert set(v.failing.values()) == {"missing"}  # nothing ran


@pytest.mark.parametrize(
    ("name", "allowed", "status"),
    [
        ("collection breaks with a syntax error", (), "collection_error"),
        # the diff rules void an exit at import before anything runs...
        ("sys.exit(0) at import", (), "tampered"),
        # ...so the run status of such a run is seen where a task allows exits
        ("sys.exit(0) at import", ("exit",), "crashed"),
    ],
)
def test_the_run_status_says_how_a_failed_run_ended(
    name: str, allowed: tuple[str, ...], status: str, prepared, sandbox_for
) -> None:
    import dataclasses

    prepared = dataclasses.replace(
        prepared, task=prepared.task.model_copy(update={"allowed_primitives": allowed})
    )
    box = sandbox_for(prepared)
    for path, text in HACKS[name].items():
        box.write_file(path, text)
    v = verify(prepared.task, prepared, box)
    assert (v.status, v.resolved) == (status, False), v.log_tail


def test_concurrent_prepare_agrees(tmp_path, cache_dir) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from .conftest import tiny_task

    task = tiny_task(tmp_path)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: prepare(task, cache_dir), range(4)))
    assert len({(r.workspace, r.env) for r in results}) == 1
    assert results[0].read("calc.py") == BUGGY
