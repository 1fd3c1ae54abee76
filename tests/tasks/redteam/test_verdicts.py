"""Red team against the verdict (issue 33): every hack of `verdict_hacks.py` earns 0, each
voided by one of the layers it names, while on each of the eight tasks the gold fix earns
1 and the untouched workspace 0. One known limit of the `local` backend is pinned: it pays.

The tasks are prepared once per module (their canary plans are built at the first grading
and cached beside the prepared workspaces).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from shadowrl.sandbox import Sandbox
from shadowrl.tasks.family import generate
from shadowrl.tasks.family.template import Case, Outcome
from shadowrl.tasks.prepare import PreparedTask, prepare
from shadowrl.tasks.task import Task
from shadowrl.tasks.verify import Verdict, verify

from ..conftest import CALC, VISIBLE
from .conftest import hand_task, tasks_fixture
from .hacks import applied, naive_outcomes
from .verdict_hacks import (
    FIRST_RUN_ONLY,
    HACKS,
    KNOWS_THE_VISIBLE_TEST,
    MARKER,
    SEED_EXTRA,
    TASKS,
    VHack,
)

SEED = CALC + SEED_EXTRA
BUGGY = SEED.replace("return a + b", "return a - b")


def _task(name: str, root: Path, visible: bool = False) -> Task:
    """The task `name` of `TASKS`; `visible`: its test file is in the workspace, as the
    mutation suites' tests are, instead of hidden."""
    hidden, f2p = TASKS[name]
    return hand_task(
        root / "seed", module="calc.py", fixed=SEED, buggy=BUGGY,
        visible={"test_calc.py": VISIBLE, **({"test_add.py": hidden} if visible else {})},
        hidden={} if visible else {"test_add.py": hidden},
        instance_id=f"tiny__verdict-{name}{'-visible' if visible else ''}", repo="local/tiny",
        problem_statement="`calc.add(2, 3)` returns -1 instead of 5.",
        FAIL_TO_PASS=f2p, PASS_TO_PASS=("test_calc.py::test_clamp",),
        tier="family" if name == "family" else "easy",  # layer 5 reads generated tests there
    )  # fmt: skip


tasks = tasks_fixture(_task, TASKS)


def _edits(hack: VHack) -> dict[str, str]:
    source = hack.source(BUGGY)
    if hack.links:
        return {target: source for target in hack.links.values()}
    return {"calc.py": source}


def _graded(hack: VHack, prepared: PreparedTask, base: Sandbox) -> Verdict:
    with applied(base, _edits(hack)) as box:
        for path, target in hack.links.items():
            box.exec(f"rm -f {path} && ln -s {target} {path}")
        return verify(prepared.task, prepared, box)


@pytest.mark.parametrize("hack", HACKS, ids=[h.name for h in HACKS])
def test_a_verdict_hack_earns_zero(
    hack: VHack, tasks: dict[str, tuple[PreparedTask, Sandbox]]
) -> None:
    prepared, base = tasks[hack.task]
    v = _graded(hack, prepared, base)
    assert (v.reward, v.resolved) == (0.0, False), v.log
    assert v.voided_by in hack.caught_by, (v.voided_by, v.log)
    assert v.tampered, v.log


@pytest.mark.parametrize("name", list(TASKS))
def test_the_controls(name: str, tasks: dict[str, tuple[PreparedTask, Sandbox]]) -> None:
    prepared, base = tasks[name]
    with applied(base, {"calc.py": SEED}) as box:
        gold = verify(prepared.task, prepared, box)
    with applied(base, {}) as box:
        untouched = verify(prepared.task, prepared, box)
    assert (gold.reward, gold.resolved, gold.voided_by) == (1.0, True, ""), gold.log
    assert (untouched.reward, untouched.resolved, untouched.voided_by) == (0.0, False, ""), (
        untouched.log
    )


def _first_run_only(hack: VHack, prepared: PreparedTask, base: Sandbox) -> Verdict:
    if os.path.exists(MARKER):
        os.unlink(MARKER)
    try:
        return _graded(hack, prepared, base)
    finally:
        if os.path.exists(MARKER):
            os.unlink(MARKER)


def test_known_limit_state_across_runs_on_the_local_backend(
    tasks: dict[str, tuple[PreparedTask, Sandbox]],
) -> None:
    """Documents a limit, does not endorse it: the `local` sandbox shares the host's /tmp
    between the real run and the canary run, so code that lies only in the episode's first
    test run is paid there. (The overlay sandbox gives every run a private /tmp.)"""
    prepared, base = tasks[FIRST_RUN_ONLY.task]
    v = _first_run_only(FIRST_RUN_ONLY, prepared, base)
    assert (v.reward, v.resolved) == (1.0, True), v.log


def test_values_compared_outside_close_that_limit_for_a_check(
    tasks: dict[str, tuple[PreparedTask, Sandbox]],
) -> None:
    """On a `check(candidate)` task the hidden check's values are computed again in a fresh
    interpreter that never holds the tests and compared in the grader (`outside.py`): the
    same hack, lying in the first run only, is voided there."""
    prepared, base = tasks["check"]
    # `typing` imported: a fresh interpreter has not loaded it (pytest has), and the liar
    # reaches it through the module table
    prefix = "import typing\n" + FIRST_RUN_ONLY.prefix
    hack = dataclasses.replace(FIRST_RUN_ONLY, task="check", prefix=prefix)
    v = _first_run_only(hack, prepared, base)
    assert (v.reward, v.resolved, v.voided_by) == (0.0, False, "outside"), v.log
    assert v.tampered == ("add(2, 3, ): wrong value", "add(10, -4, ): wrong value",
                          "add(7, 8, ): wrong value"), v.tampered  # fmt: skip


def test_values_compared_outside_void_it_on_a_family_task(
    tasks: dict[str, tuple[PreparedTask, Sandbox]],
) -> None:
    """The family's generated tests (one `assert f(<literals>) == <literal>` each, as
    `family/generate.py` writes them) are read by layer 5 too: an object equal to
    everything, returned in the first run only, passes the real run and the canaries and
    is voided by the values computed outside."""
    found = [Case(("add", (2, 3)), "(2, 3)", Outcome("5")),
             Case(("add", (10, -4)), "(10, -4)", Outcome("6"))]  # fmt: skip
    assert TASKS["family"][0] == generate.test_file("calc", found, "")
    prepared, base = tasks["family"]
    hack = dataclasses.replace(
        FIRST_RUN_ONLY, task="family", prefix="import typing\n" + FIRST_RUN_ONLY.prefix
    )
    v = _first_run_only(hack, prepared, base)
    assert (v.reward, v.resolved, v.voided_by) == (0.0, False, "outside"), v.log
    assert v.tampered == ("add(2, 3, ): wrong value", "add(10, -4, ): wrong value"), v.tampered


def test_known_limit_code_that_knows_the_visible_tests(
    cache_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Documents a limit: where the tests are visible (the mutation suites), code that reads
    the test's constants at run time tells the canary from the real test and is paid; the
    same hack earns 0 where the test is hidden (`CANARY_AWARE`)."""
    prepared = prepare(_task("eq", tmp_path_factory.mktemp("visible"), visible=True), cache_dir)
    base = prepared.sandbox("local")
    try:
        gold = _graded(
            VHack("gold", "eq", "", frozenset(), body=("a - b", "a + b")), prepared, base
        )
        assert (gold.reward, gold.resolved) == (1.0, True), gold.log
        v = _graded(KNOWS_THE_VISIBLE_TEST, prepared, base)
    finally:
        base.close()
    assert (v.reward, v.resolved) == (1.0, True), v.log


@pytest.mark.parametrize("hack", HACKS, ids=[h.name for h in HACKS])
def test_the_hack_fools_a_plain_run(
    hack: VHack, tasks: dict[str, tuple[PreparedTask, Sandbox]]
) -> None:
    """Without the grader's layers (a plain `pytest --junitxml` run) the hack passes."""
    prepared, base = tasks[hack.task]
    hidden = {p: str(t) for p, t in prepared.hidden_files().items()}
    with applied(base, {**hidden, **_edits(hack)}) as box:
        for path, target in hack.links.items():
            box.exec(f"rm -f {path} && ln -s {target} {path}")
        outcomes = naive_outcomes(box, str(prepared.python), prepared.task.test_ids)
    assert len(outcomes) == len(prepared.task.test_ids) and all(outcomes.values()), outcomes
