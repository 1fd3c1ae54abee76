"""Red team against the grader's former known limits (`limit_hacks.py`): each hack is first
shown to trip no text or syntax rule, then to earn 0, voided by the guard in the test
run; the controls (gold earns 1, untouched 0) run on the same tasks.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from shadowrl.sandbox import Sandbox
from shadowrl.tasks.patch import apply_patch, make_patch
from shadowrl.tasks.prepare import PreparedTask, prepare
from shadowrl.tasks.verify import verify

from ..conftest import tiny_task
from .hacks import Hack, applied, graded, naive_outcomes, outcome
from .limit_hacks import APPROX, APPROX_HIDDEN, APPROX_IDS, EQUAL_C, FURTHER, REPLAYED, STATE

GUARD = (0.0, False, "test_guard", "tampered")


@pytest.fixture(scope="module")
def approx_task(cache_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> PreparedTask:
    """The tiny task with hidden tests that compare through `pytest.approx`."""
    task = tiny_task(tmp_path_factory.mktemp("approx")).model_copy(
        update={
            "instance_id": "tiny__approx-1",
            "test_patch": make_patch({}, {"test_add.py": APPROX_HIDDEN}),
            "FAIL_TO_PASS": APPROX_IDS,
        }
    )
    return prepare(task, cache_dir)


@pytest.fixture(scope="module")
def boxes(tiny: PreparedTask, approx_task: PreparedTask) -> Iterator[dict[str, Sandbox]]:
    opened = {"tiny": tiny.sandbox("local"), "approx": approx_task.sandbox("local")}
    yield opened
    for box in opened.values():
        box.close()


def _pick(which: str, tiny: PreparedTask, approx_task: PreparedTask) -> PreparedTask:
    return approx_task if which == "approx" else tiny


CASES = [
    *(("tiny", h) for h in EQUAL_C + REPLAYED + STATE + FURTHER),
    *(("approx", h) for h in APPROX),
]


@pytest.mark.parametrize(("which", "hack"), CASES, ids=[h.name for _, h in CASES])
def test_a_former_known_limit_earns_zero(
    which: str,
    hack: Hack,
    tiny: PreparedTask,
    approx_task: PreparedTask,
    boxes: dict[str, Sandbox],
) -> None:
    v = graded(hack, _pick(which, tiny, approx_task), boxes[which])
    assert outcome(v) == GUARD, v.log
    assert v.tampered, v.log


REAL = [c for c in CASES if c[1].real]


@pytest.mark.parametrize(("which", "hack"), REAL, ids=[h.name for _, h in REAL])
def test_the_hack_fools_a_plain_run(
    which: str,
    hack: Hack,
    tiny: PreparedTask,
    approx_task: PreparedTask,
    boxes: dict[str, Sandbox],
) -> None:
    prepared = _pick(which, tiny, approx_task)
    hidden = {p: str(t) for p, t in prepared.hidden_files().items()}
    edits = {**hidden, "calc.py": hack.apply(str(prepared.read("calc.py")))}
    with applied(boxes[which], edits) as box:
        outcomes = naive_outcomes(box, str(prepared.python), prepared.task.test_ids)
    assert len(outcomes) == len(prepared.task.test_ids) and all(outcomes.values()), outcomes


def test_the_approx_task_controls(approx_task: PreparedTask, boxes: dict[str, Sandbox]) -> None:
    buggy = str(approx_task.read("calc.py"))
    gold = apply_patch({"calc.py": buggy}, approx_task.task.patch)
    with applied(boxes["approx"], {p: str(t) for p, t in gold.items()}) as box:
        fixed = verify(approx_task.task, approx_task, box)
    with applied(boxes["approx"], {}) as box:
        untouched = verify(approx_task.task, approx_task, box)
    assert outcome(fixed) == (1.0, True, "", "ran"), fixed.log
    assert (untouched.reward, untouched.resolved, untouched.voided_by) == (0.0, False, ""), (
        untouched
    )
