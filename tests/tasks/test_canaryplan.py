"""The canary plan of the tiny task (`tasks/canaryplan.py`), built with real test runs."""

from __future__ import annotations

from shadowrl.tasks.canaryplan import canary_plan
from shadowrl.tasks.prepare import PreparedTask


def test_a_canary_is_an_id_whose_canary_fails_under_gold_and_under_the_bug(
    tiny: PreparedTask,
) -> None:
    plan = canary_plan(tiny)
    assert set(plan.files) == {"test_add.py"}  # hidden tests only: test_calc.py is visible
    assert "    assert add(2, 3) == 6\n" in plan.files["test_add.py"]
    # `add(a, b) == a + b` has no literal to perturb: its negation passes under the bug
    # (which fails the real assertion), so that id is no canary.
    assert "    assert not (add(a, b) == a + b)\n" in plan.files["test_add.py"]
    assert plan.ids == ("test_add.py::test_add",)
    assert canary_plan(tiny) == plan  # read back from the cache
