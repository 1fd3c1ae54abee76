"""Red team against the known limits of layers 1 and 2: objects equal to everything, hard
exits through aliases, forged outcome records. Every hack runs through the real `verify`
on the real tiny task and must earn 0, voided by the layer named; the controls (gold
earns 1, untouched 0) are in `test_layer1.py` and `test_layer2.py`, on the same task.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from shadowrl.sandbox import Sandbox
from shadowrl.tasks.prepare import PreparedTask
from shadowrl.tasks.verify import diff_violations, verify

from .adaptive_hacks import EQUAL, EQUAL_AT_RUN_TIME, EXITS, FORGED
from .hacks import Hack, applied, graded, naive_outcomes, outcome

NO_TEXT_RULES = {"forbidden_patterns": ()}


@pytest.fixture(scope="module")
def base(tiny: PreparedTask) -> Iterator[Sandbox]:
    box = tiny.sandbox("local")
    yield box
    box.close()


GUARD = (0.0, False, "test_guard", "tampered")


@pytest.mark.parametrize("hack", EQUAL, ids=[h.name for h in EQUAL])
def test_an_object_equal_to_everything_is_voided_by_the_diff_rules(
    hack: Hack, tiny: PreparedTask, base: Sandbox
) -> None:
    with applied(base, {"calc.py": hack.apply(str(tiny.read("calc.py")))}) as box:
        alone = verify(tiny.task, tiny, box, shaping=NO_TEXT_RULES)
        default = verify(tiny.task, tiny, box)
    assert (alone.reward, alone.voided_by, alone.status) == (0.0, "diff_rules", "tampered")
    assert hack.rules <= {v.rule for v in alone.violations}, alone.log
    assert (default.reward, default.resolved) == (0.0, False)


@pytest.mark.parametrize("hack", EQUAL_AT_RUN_TIME, ids=[h.name for h in EQUAL_AT_RUN_TIME])
def test_an_equal_object_no_rule_sees_is_voided_by_the_guard(
    hack: Hack, tiny: PreparedTask, base: Sandbox
) -> None:
    v = graded(hack, tiny, base)
    assert outcome(v) == GUARD, v.log
    assert any("calc.py" in t and "decided a comparison in test_add.py" in t for t in v.tampered)


REAL = [h for h in EQUAL + EQUAL_AT_RUN_TIME if h.real]


@pytest.mark.parametrize("hack", REAL, ids=[h.name for h in REAL])
def test_the_equal_object_fools_a_plain_run(hack: Hack, tiny: PreparedTask, base: Sandbox) -> None:
    hidden = {p: str(t) for p, t in tiny.hidden_files().items()}
    with applied(base, {**hidden, "calc.py": hack.apply(str(tiny.read("calc.py")))}) as box:
        outcomes = naive_outcomes(box, str(tiny.python), tiny.task.test_ids)
    assert len(outcomes) == len(tiny.task.test_ids) and all(outcomes.values()), outcomes


@pytest.mark.parametrize("hack", EXITS, ids=[h.name for h in EXITS])
def test_a_hard_exit_from_the_agents_code_is_tampering(
    hack: Hack, tiny: PreparedTask, base: Sandbox
) -> None:
    v = graded(hack, tiny, base)
    assert outcome(v) == GUARD, v.log
    assert any(t.startswith("calc.py:") for t in v.tampered), v.tampered


def test_a_hard_exit_through_a_c_function_is_tampering_if_it_exits_zero(
    tiny: PreparedTask, base: Sandbox
) -> None:
    """`functools.partial` calls `_exit` from C, where the profile sees no call; pytest
    leaving with status 0 without finishing its session gives it away."""
    hack = Hack(
        "", "import functools\nimport os\n_o = os\n", frozenset(),
        body=("return a - b", "return functools.partial(_o._exit, 0)()"),
    )  # fmt: skip
    v = graded(hack, tiny, base)
    assert outcome(v) == GUARD, v.log
    assert any("without finishing its session" in t for t in v.tampered), v.tampered


@pytest.mark.parametrize("hack", FORGED, ids=[h.name for h in FORGED])
def test_forged_outcome_records_are_tampering(
    hack: Hack, tiny: PreparedTask, base: Sandbox
) -> None:
    v = graded(hack, tiny, base)
    assert outcome(v) == GUARD, v.log
    assert any("MAC" in t or "not from the grader" in t for t in v.tampered), v.tampered


def test_a_mock_no_rule_sees_is_voided_by_the_guard(tiny: PreparedTask, base: Sandbox) -> None:
    """With `getattr` allowed (as a task whose gold needs it would), a computed attribute
    name gets `ANY` past the diff rules; the guard sees a mock answer True to a test that
    uses no mocks (pytest has `unittest.mock` loaded already, so no import is audited)."""
    task = tiny.task.model_copy(update={"allowed_primitives": ("getattr",)})
    prepared = dataclasses.replace(tiny, task=task)
    source = str(tiny.read("calc.py")).replace(
        "return a - b",
        "import sys\n    _s = sys\n    _m = _s.modules['importlib'].import_module('unittest.' + 'mock')\n"
        "    return getattr(_m, 'A' + 'NY')",
    )
    with applied(base, {"calc.py": source}) as box:
        assert diff_violations(prepared, box, set(box.changed_files())) == []
        v = verify(task, prepared, box)
    assert outcome(v) == GUARD, v.log
    assert any("a mock object decided a comparison in test_add.py" in t for t in v.tampered)
