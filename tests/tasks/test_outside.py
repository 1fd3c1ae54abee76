"""Values compared outside the test interpreter (`tasks/outside.py`): the plan read from a
hidden `check(candidate)`, the driver run for real in a fresh interpreter, strict decoding."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shadowrl.tasks.outside import DRIVER, Check, decode, mismatches, outside_plan

HIDDEN = """from calc import *  # noqa: F403
from calc import add


def check(candidate):
    assert candidate(2, 3) == 5
    assert [4] == candidate([1], 3)
    assert candidate(1, 0)
    assert not candidate(0, 0)
    assert candidate(5, 5) is False
    assert abs(candidate(0.1, 0.2) - 0.3) < 1e-9
    assert candidate(x, 1) == 2
    assert candidate(1, b=2) == 3
    assert isinstance(candidate(1, 1), int)


def test_check():
    check(add)
"""


def test_the_plan_holds_the_calls_of_literals_and_their_expected_values() -> None:
    plan = outside_plan({"test_hidden.py": HIDDEN, "notes.txt": "x"})
    assert plan is not None and (plan.module, plan.function) == ("calc", "add")
    assert plan.checks == (
        Check("(2, 3, )", "eq", 5),
        Check("([1], 3, )", "eq", [4]),
        Check("(1, 0, )", "truthy"),
        Check("(0, 0, )", "falsy"),
        Check("(5, 5, )", "is", False),
        Check("(0.1, 0.2, )", "lt", 0.3, 1e-9),
    )  # a name, a keyword and any other shape are the test run's
    assert outside_plan({"test_x.py": "def test_x():\n    assert 1 == 1\n"}) is None


def test_decoding_is_strict() -> None:
    tagged = ["tuple", [["int", "1"], ["float", (0.5).hex()], "s", None, True]]
    assert decode(tagged) == (1, 0.5, "s", None, True)
    assert decode(["dict", [["a", ["set", [["int", "2"]]]]]]) == {"a": {2}}
    for bad in (1, 1.5, ["int", "1e3"], ["object", []], ["set", [["list", []]]], ["dict", [1]]):
        with pytest.raises(ValueError):
            decode(bad)
    deep: object = None
    for _ in range(100):
        deep = ["list", [deep]]
    with pytest.raises(ValueError):
        decode(deep)


def _answers(tmp_path: Path, module: str, calls: list[str]) -> str:
    (tmp_path / "calc.py").write_text(module)
    (tmp_path / "calls.json").write_text(json.dumps(calls))
    argv = [sys.executable, "-P", "-c", DRIVER, "calc", "add", "calls.json", "N0NCE"]
    return subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=True).stdout


def test_an_honest_function_holds_and_a_lying_value_does_not(tmp_path: Path) -> None:
    plan = outside_plan({"test_hidden.py": HIDDEN})
    assert plan is not None
    calls = [c.args for c in plan.checks]
    honest = (
        "def add(a, b):\n    if a == b == 5:\n        return False\n"
        "    return [a[0] + b] if isinstance(a, list) else a + b\n"
    )
    assert mismatches(plan, "noise\n" + _answers(tmp_path, honest, calls), "N0NCE") == []
    liar = (
        "class Any(int):\n    def __eq__(self, other):\n        return True\n\n"
        "def add(a, b):\n    print('N0NCE[]')\n    return Any(0)\n"
    )
    wrong = mismatches(plan, _answers(tmp_path, liar, calls), "N0NCE")
    assert wrong and all("no value (TypeError)" in w for w in wrong), wrong
    assert mismatches(plan, "N0NCE[]\n", "N0NCE") == ["the answers do not match the calls"]
    assert mismatches(plan, "", "N0NCE") == ["no answers came back"]
