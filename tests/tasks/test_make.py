"""Task generation on a small local repo, test-run kill on timeout, reading the outcome file."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from shadowrl.tasks.env import build_env, env_python
from shadowrl.tasks.make import MakeSpec, make_tasks
from shadowrl.tasks.patch import apply_patch
from shadowrl.tasks.prepare import seed_dir
from shadowrl.tasks.runner import (
    OutcomeFile,
    new_key,
    read_outcomes,
    record_line,
    run_tests_local,
)
from shadowrl.tasks.task import Seed, Task

LIB = """def mean(xs):
    if not xs:
        raise ValueError("empty")
    return sum(xs) / len(xs)


def span(xs):
    return max(xs) - min(xs)
"""

TESTS = """import pytest

from stats import mean, span


def test_mean():
    assert mean([1, 2, 3]) == 2


def test_mean_empty():
    with pytest.raises(ValueError):
        mean([])


@pytest.mark.parametrize("xs,want", [([1, 5], 4), ([2, 2], 0)], ids=["wide one", "flat"])
def test_span(xs, want):
    assert span(xs) == want
"""


TEXT = "def shout(s):\n    return s.upper() + '!'\n"
TEXT_TESTS = "from text import shout\n\n\ndef test_shout():\n    assert shout('a') == 'A!'\n"


def test_make_emits_only_validated_tasks(tmp_path: Path, cache_dir: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    files = {"stats.py": LIB, "test_stats.py": TESTS, "text.py": TEXT, "test_text.py": TEXT_TESTS}
    for name, text in files.items():
        (repo / name).write_text(text)
    seed = Seed(path=str(repo))
    spec = MakeSpec(seed=seed, repo="local/stats", n=5, timeout_s=30, tier="medium")
    python = env_python(build_env(spec.env, cache_dir))
    tasks = make_tasks(spec, seed_dir(seed, cache_dir), python, workers=2)
    assert len(tasks) == 3  # at most one task per function: mean, span, shout
    for task in tasks:
        (module,) = {p.split("::")[0].removeprefix("test_") for p in task.test_ids}
        assert task.FAIL_TO_PASS and set(task.FAIL_TO_PASS).isdisjoint(task.PASS_TO_PASS)
        assert f"a/{module}" in task.bug_patch  # each task runs only its own module's tests
        buggy = apply_patch({module: files[module]}, task.bug_patch)[module]
        assert (
            buggy is not None and apply_patch({module: buggy}, task.patch)[module] == files[module]
        )
        assert "These tests fail" in task.problem_statement
    assert any("test_stats.py::test_span[wide one]" in t.test_ids for t in tasks)


def test_timeout_kills_the_whole_process_group(tmp_path: Path, cache_dir: Path) -> None:
    pidfile = tmp_path / "child.pid"
    (tmp_path / "test_loop.py").write_text(
        "import subprocess, sys\n\ndef test_forever():\n"
        f"    p = subprocess.Popen([sys.executable, '-c', 'while True: pass'])\n"
        f"    open({str(pidfile)!r}, 'w').write(str(p.pid))\n"
        "    while True:\n        pass\n"
    )
    task = Task.model_validate(
        {"instance_id": "loop", "repo": "r", "problem_statement": "", "patch": "",
         "FAIL_TO_PASS": ["test_loop.py::test_forever"], "seed": {"path": str(tmp_path)}, "timeout_s": 3}
    )  # fmt: skip
    python = env_python(build_env(task.env, cache_dir))
    run = run_tests_local(task, tmp_path, python, task.FAIL_TO_PASS, tmp_path)
    assert run.status == "timeout"
    assert run.results(task.FAIL_TO_PASS) == {"test_loop.py::test_forever": "missing"}
    child = int(pidfile.read_text())
    for _ in range(50):  # the kill is asynchronous; wait for the zombie to be reaped
        if not _alive(child):
            break
        time.sleep(0.1)
    assert not _alive(child)


def test_a_failing_subtest_fails_its_test(tmp_path: Path, cache_dir: Path) -> None:
    """pytest 9 reports each unittest subTest on its own and the test itself as passed."""
    (tmp_path / "test_sub.py").write_text(
        "import unittest\n\nclass T(unittest.TestCase):\n    def test_cases(self):\n"
        "        for x in (1, 2):\n            with self.subTest(x=x):\n"
        "                self.assertEqual(x, 1)\n"
    )
    ids = ("test_sub.py::T::test_cases",)
    task = Task(
        instance_id="sub", repo="r", problem_statement="", patch="", FAIL_TO_PASS=ids,
        seed=Seed(path=str(tmp_path)), timeout_s=60,
    )  # fmt: skip
    python = env_python(build_env(task.env, cache_dir))
    run = run_tests_local(task, tmp_path, python, ids, tmp_path)
    assert (run.status, run.results(ids)) == ("ran", {ids[0]: "failed"}), run.log


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_outcome_file_is_read_per_node_id_at_its_worst_phase() -> None:
    ids = [
        "tests/test_a.py::TestK::test_x[a b]",
        "tests/test_a.py::test_y",
        "tests/test_a.py::test_z",
        "tests/test_a.py::test_teardown_fails",
        "tests/test_a.py::test_setup_fails",
        "tests/test_a.py::TestSub::test_cases",
    ]
    events = [
        (ids[0], "setup", "passed"), (ids[0], "call", "passed"), (ids[0], "teardown", "passed"),
        (ids[1], "setup", "passed"), (ids[1], "call", "failed"),
        (ids[2], "setup", "skipped"),
        (ids[3], "call", "passed"), (ids[3], "teardown", "failed"),
        (ids[4], "setup", "failed"), (ids[4], "teardown", "passed"),
        (ids[5], "call", "failed"), (ids[5], "call", "passed"),  # a failed subtest, then the test
    ]  # fmt: skip
    key = new_key()
    # the plugin marks each passed call phase that entered test code (`body`)
    records = [
        {"nodeid": n, "when": w, "outcome": o, **({"body": True} if w == "call" else {})}
        for n, w, o in events
    ]
    lines = [record_line(key, i, r) for i, r in enumerate(records)]
    finished = "".join([*lines, record_line(key, len(lines), {"exitstatus": 1})])
    found = read_outcomes(finished, key, timed_out=False)
    assert found.status == "ran"
    assert {i: found.outcomes.get(i, "missing") for i in ids} == dict(
        zip(ids, ["passed", "failed", "skipped", "error", "error", "failed"], strict=True)
    )
    torn = "".join(lines[:3]) + lines[3][:20]  # the process died mid-write
    assert read_outcomes(torn, key, timed_out=False) == OutcomeFile(
        {ids[0]: "passed"}, "crashed", ()
    )
    assert read_outcomes(torn, key, timed_out=True).status == "timeout"
    collect = record_line(key, 0, {"collect_error": "tests/test_b.py"}) + record_line(
        key, 1, {"exitstatus": 2}
    )
    assert read_outcomes(collect, key, timed_out=False) == OutcomeFile({}, "collection_error", ())
    assert read_outcomes("", key, timed_out=False) == OutcomeFile({}, "crashed", ())


def test_records_without_the_runs_mac_or_out_of_sequence_are_tampering() -> None:
    key, other = new_key(), new_key()
    passed = {"nodeid": "t.py::a", "when": "call", "outcome": "passed", "body": True}
    failed = {**passed, "outcome": "failed"}
    forged = record_line(other, 1, passed) + json.dumps(passed) + "\n"
    text = record_line(key, 0, failed) + forged + record_line(key, 1, {"exitstatus": 1})
    found = read_outcomes(text, key, timed_out=False)
    assert found.outcomes == {"t.py::a": "failed"} and found.status == "tampered"
    assert found.tampered == (
        "2 outcome line(s) without the grader's MAC: written by the tests' code",
    )
    cut = record_line(key, 0, passed) + record_line(key, 2, {"exitstatus": 0})
    assert read_outcomes(cut, key, timed_out=False).tampered == (
        "outcome record 2 follows 0: lines were removed",
    )
    hard_exit = read_outcomes(record_line(key, 0, passed), key, timed_out=False, exit_code=0)
    assert hard_exit.status == "tampered" and "hard exit" in hard_exit.tampered[0]
    assert read_outcomes(record_line(key, 0, passed), key, False, exit_code=-9).status == "crashed"
    assert os.sep == "/"
