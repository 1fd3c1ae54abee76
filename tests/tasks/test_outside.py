"""Values compared outside the test interpreter (`tasks/outside.py`): the plan read from a
hidden `check(candidate)` or a family's generated tests (`tasks/outsideplan.py`), the
driver run for real in a fresh interpreter, strict decoding."""

from __future__ import annotations

import datetime
import json
import random
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from shadowrl.tasks.family import generate
from shadowrl.tasks.family.templates_dates import ADD_MONTHS
from shadowrl.tasks.family.templates_money import CONVERT, SPLIT
from shadowrl.tasks.outside import DRIVER, decode, mismatches
from shadowrl.tasks.outsideplan import Check, OutsidePlan, outside_plan

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
    add = ("calc", "add")
    assert plan is not None and plan.checks == (
        Check(*add, "(2, 3, )", "eq", 5),
        Check(*add, "([1], 3, )", "eq", [4]),
        Check(*add, "(1, 0, )", "truthy"),
        Check(*add, "(0, 0, )", "falsy"),
        Check(*add, "(5, 5, )", "is", False),
        Check(*add, "(0.1, 0.2, )", "lt", 0.3, 1e-9),
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


def _calls(plan: OutsidePlan) -> list[list[str]]:
    return [[c.module, c.function, c.args] for c in plan.checks]


def _answers(
    tmp_path: Path, module: str, calls: list[list[str]], name: str = "calc", source: str = ""
) -> str:
    """The driver's output on `calls`, with `module` (if given) written as calc.py, or
    `source` (if given) as `name`.py."""
    if module:
        (tmp_path / "calc.py").write_text(module)
    if source:
        (tmp_path / f"{name}.py").write_text(source)
    (tmp_path / "calls.json").write_text(json.dumps(calls))
    argv = [sys.executable, "-P", "-c", DRIVER, "calls.json", "N0NCE"]
    return subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=True).stdout


def test_an_honest_function_holds_and_a_lying_value_does_not(tmp_path: Path) -> None:
    plan = outside_plan({"test_hidden.py": HIDDEN})
    assert plan is not None
    calls = _calls(plan)
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


@pytest.mark.parametrize("template", [ADD_MONTHS, CONVERT, SPLIT], ids=lambda t: t.id)
def test_a_family_file_is_read_whole_and_its_gold_holds(template: Any, tmp_path: Path) -> None:
    """Every generated test of a family file (dates, Decimals, `pytest.raises`) is a check,
    and the correct module's answers, computed by the driver, hold on all of them."""
    rng = random.Random(3)
    source = template.render(rng).source
    found = generate.cases(template, source, rng)
    plan = outside_plan(
        {f"test_{template.module}_cases.py": generate.test_file(template.module, found, "")},
        generated=True,
    )
    assert plan is not None and len(plan.checks) == len(found)
    assert {c.expect for c in plan.checks} <= {"eq", "raises"}
    calls = _calls(plan)
    (tmp_path / f"{template.module}.py").write_text(source)
    assert mismatches(plan, _answers(tmp_path, "", calls, template.module), "N0NCE") == []
    liar = "class Any(int):\n    def __eq__(self, other):\n        return True\n\n" + "".join(
        f"def {f}(*a):\n    return Any(0)\n" for f in {c.function for c in plan.checks}
    )
    wrong = mismatches(plan, _answers(tmp_path, "", calls, template.module, liar), "N0NCE")
    assert len(wrong) == len(found), wrong  # a subclass is no value, and raises nothing


def test_values_of_the_stdlib_types_decode_strictly() -> None:
    assert decode(["date", [2024, 2, 29]]) == datetime.date(2024, 2, 29)
    assert decode(["decimal", "-12.50"]) == Decimal("-12.5")
    assert decode(["timedelta", [1, 5, 0]]) == datetime.timedelta(days=1, seconds=5)
    assert type(decode(["datetime", [2024, 1, 2, 3, 4, 5, 6]])) is datetime.datetime
    for bad in (["date", [2023, 2, 29]], ["date", [2024, 1]], ["date", [2024, 1, True]],
                ["decimal", "1_000"], ["decimal", "sNaN"], ["decimal", 1]):  # fmt: skip
        with pytest.raises((ValueError, OverflowError)):
            decode(bad)


def test_raises_holds_only_for_an_instance_of_that_builtin(tmp_path: Path) -> None:
    text = "import pytest\n\nfrom calc import div\n\n\ndef test_div_1():\n" + (
        "    with pytest.raises(ZeroDivisionError):\n        div(1, 0)\n"
    )
    assert outside_plan({"test_calc_cases.py": text}) is None  # not a family task
    plan = outside_plan({"test_calc_cases.py": text}, generated=True)
    assert plan is not None and plan.checks == (
        Check("calc", "div", "(1, 0, )", "raises", "ZeroDivisionError"),
    )
    honest = "def div(a, b):\n    return a // b\n"
    sub = "class E(ZeroDivisionError):\n    pass\n\ndef div(a, b):\n    raise E\n"
    named = "class ZeroDivisionError(Exception):\n    pass\n\ndef div(a, b):\n    raise ZeroDivisionError\n"
    returns = "def div(a, b):\n    return 0\n"
    got = {
        m: mismatches(plan, _answers(tmp_path, m, _calls(plan)), "N0NCE")
        for m in (honest, sub, named, returns)
    }
    assert got[honest] == got[sub] == []
    assert got[named] == got[returns] == ["div(1, 0, ): did not raise ZeroDivisionError"]


@pytest.mark.parametrize(
    "text",
    [
        "from calc import add\n\n\ndef test_a():\n    assert add(1, 2) == 3\n    assert add(2, 2) == 4\n",
        "from calc import add\n\n\ndef helper():\n    pass\n\n\ndef test_a():\n    assert add(1, 2) == 3\n",
        "from calc import *\nfrom calc import add\n\n\ndef test_a():\n    assert add(1, 2) == 3\n",
        "from calc import add\nadd = abs\n\n\ndef test_a():\n    assert add(1, 2) == 3\n",
        "from calc import add\n\n\ndef test_a():\n    assert add(x) == 3\n",
        "from calc import add\n\n\n@pytest.mark.skip\ndef test_a():\n    assert add(1, 2) == 3\n",
        "from calc import add\n\n\ndef test_a():\n    assert add(datetime.date(2024, 1, 1)) == 3\n",
    ],
    ids=["two-asserts", "helper", "star", "rebound", "name", "decorated", "unbound-datetime"],
)
def test_only_a_file_of_generated_tests_is_read(text: str) -> None:
    assert outside_plan({"test_calc_cases.py": text}, generated=True) is None
