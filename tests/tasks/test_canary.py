"""Canary files (`tasks/canary.py`) and the workspace checks (`tasks/workspace.py`): pure
functions over source text, no sandbox."""

from __future__ import annotations

import ast

from shadowrl.tasks.canary import canary_source
from shadowrl.tasks.workspace import agent_lines, bad_encodings, source_encoding

TESTS = """import math
import pytest
from calc import add

assert add(1, 1) == 2


def test_eq():
    assert add(2, 3) == 5
    assert [1, 2] == add([1], [2])
    assert add(0.1, 0.2) == pytest.approx(0.3)


def test_tolerance():
    assert abs(add(2, 3) - 5) < 1e-9
    assert math.isclose(add(2, 2), 4)


def test_truth():
    assert add(1, 1) is True
    assert not add(1, -1)
    assert add(1, 1) in (2, 3)


class TestUnit:
    def test_unit(self):
        self.assertEqual(add(1, 2), "ab")
        self.assertTrue(add(1, 2))
"""


def _asserts(source: str) -> list[str]:
    tree = ast.parse(source)
    return [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Assert | ast.Call)]


def test_each_assertion_in_a_function_says_something_else() -> None:
    canary, n = canary_source(TESTS)
    lines = canary.splitlines()
    assert lines[4] == "assert add(1, 1) == 2"  # module level: it would break collection
    assert "    assert add(2, 3) == 6" in lines
    assert "    assert [1, 2, 2] == add([1], [2])" in lines
    assert "    assert add(0.1, 0.2) == pytest.approx(1.3)" in lines
    assert "    assert abs(add(2, 3) - 6) < 1e-9" in lines
    assert "    assert math.isclose(add(2, 2), 5)" in lines
    assert "    assert add(1, 1) is False" in lines
    assert "    assert add(1, -1)" in lines
    assert "    assert not (add(1, 1) in (2, 3))" in lines
    assert '        self.assertEqual(add(1, 2), "abb")' not in lines  # repr quotes
    assert "        self.assertEqual(add(1, 2), 'abb')" in lines
    assert "        self.assertFalse(add(1, 2))" in lines
    assert n == 10


def test_a_canary_keeps_every_line_and_name_where_it_was() -> None:
    canary, _ = canary_source(TESTS)
    assert len(canary.splitlines()) == len(TESTS.splitlines())
    names = [
        (n.name, n.lineno)
        for n in ast.walk(ast.parse(canary))
        if isinstance(n, ast.FunctionDef | ast.ClassDef)
    ]
    original = [
        (n.name, n.lineno)
        for n in ast.walk(ast.parse(TESTS))
        if isinstance(n, ast.FunctionDef | ast.ClassDef)
    ]
    assert names == original
    changed = [a != b for a, b in zip(canary.splitlines(), TESTS.splitlines(), strict=True)]
    assert sum(changed) == 10


def test_a_larger_salt_perturbs_further() -> None:
    canary, _ = canary_source("def test():\n    assert f(2) == 5\n", salt=2)
    assert canary == "def test():\n    assert f(2) == 8\n"


def test_assertions_the_agent_can_read_stay_as_they_are() -> None:
    source = "def test():\n    assert add(2, 3) == 5\n    assert candidate([1, 2], 3) == 4\n"
    visible = "`calc.add(2, 3)` returns -1\n>>> f([1, 2], 3)\n4\n"
    canary, n = canary_source(source, visible=visible)
    assert (canary, n) == (source, 0)
    other, n = canary_source(source, visible="nothing of the kind")
    assert n == 2 and other != source


def test_a_canary_without_assertions_changes_nothing() -> None:
    source = "def test():\n    f(2)\n"
    assert canary_source(source) == (source, 0)


def test_non_ascii_compatible_encodings_are_refused() -> None:
    assert source_encoding(b"# -*- coding: utf-8 -*-\nx = 1\n") == "utf-8"
    assert source_encoding(b"x = 1\n") == "utf-8"
    sources = {
        "ok.py": (b"", b"# -*- coding: utf-8 -*-\nx = 1\n"),
        "latin.py": (b"", b"# coding: latin-1\nx = '\xe9'\n"),
        "seven.py": (b"", b"# coding: utf-7\nx = 1  # +AAo-y = 2\n"),
        "vim.py": (b"", b"# vim: set fileencoding=utf-16 :\n"),
        "gone.py": (b"x = 1\n", None),
    }
    hits = bad_encodings(sources)
    assert [h.split(":")[0] for h in hits] == ["seven.py", "vim.py"]


def test_blamed_lines_are_those_of_the_decoded_text() -> None:
    old = b"def add(a, b):\n    return a - b\n"
    new = b"# coding: latin-1\ndef add(a, b):\n    return a + b  # \xe9\n"
    assert agent_lines({"calc.py": (old, new)}) == {"calc.py": [(1, 1), (3, 3)]}
    form_feed = b"def add(a, b):\x0c\n    return a + b\n"  # \x0c is no line break to Python
    assert agent_lines({"calc.py": (old, form_feed)}) == {"calc.py": [(1, 2)]}


def test_a_predicate_of_literals_is_negated_not_its_last_input() -> None:
    """`assert candidate([1, 20], 21)` is the computation under test (HumanEval/52's checks):
    perturbing its threshold leaves it true under the fix, so it is negated instead; a check
    of a computed value (`near(f(x), 4)`) still has its expected value perturbed."""
    source = (
        "def test():\n    assert candidate([1, 20], 21)\n    assert not candidate([1, 8], 8)\n"
        "    assert near(f(2), 4)\n"
    )
    canary, n = canary_source(source)
    assert canary.splitlines()[1:] == [
        "    assert not (candidate([1, 20], 21))",
        "    assert candidate([1, 8], 8)",
        "    assert near(f(2), 5)",
    ]
    assert n == 3


def test_a_negated_assertion_over_lines_keeps_its_parentheses() -> None:
    """toolz's `assert not (merge(...,\n factory=...) == {...})`: cutting from `not` to the
    operand left the closing parenthesis behind, the canary did not parse, and the task was
    graded with no canary at all."""
    source = (
        "def test():\n    assert not (merge(a,\n                  b) == {1: 2})\n"
        "    assert not(f(x))\n"
    )
    canary, n = canary_source(source)
    assert canary.splitlines()[1:] == [
        "    assert (merge(a,",
        "                  b) == {1: 2})",
        "    assert (f(x))",
    ]
    assert n == 2
    ns: dict[str, object] = {}
    exec(compile(canary, "canary", "exec"), ns)  # parses, and the negation is the operand


def test_lines_are_counted_as_python_counts_them() -> None:
    """A form feed inside a line is no line break to `ast` (it is to `str.splitlines`): the
    edit lands on the assertion's own line."""
    source = "def test():\n    # page\x0cbreak\n    assert f(1) == 2\n    assert not g(1)\n"
    canary, _ = canary_source(source)
    assert canary == "def test():\n    # page\x0cbreak\n    assert f(1) == 3\n    assert g(1)\n"
