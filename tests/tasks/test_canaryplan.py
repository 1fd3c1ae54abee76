"""The canary plan of the tiny task (`tasks/canaryplan.py`), built with real test runs."""

from __future__ import annotations

from shadowrl.tasks.canaryplan import canary_plan
from shadowrl.tasks.prepare import PreparedTask


def test_the_tiny_task_has_canary_files_but_no_canary(tiny: PreparedTask) -> None:
    """Its one literal assertion, `add(2, 3) == 5`, is in the issue's text, so it stays as
    it is; `add(a, b) == a + b` has no literal and is negated, and a negation passes under
    the bug (which fails the real assertion): no id is a canary, and the task is graded
    without (by the layers before)."""
    plan = canary_plan(tiny)
    assert set(plan.files) == {"test_add.py"}  # hidden tests only: test_calc.py is visible
    assert "    assert add(2, 3) == 5\n" in plan.files["test_add.py"]
    assert "    assert not (add(a, b) == a + b)\n" in plan.files["test_add.py"]
    assert plan.ids == ()
    assert canary_plan(tiny) == plan  # read back from the cache
