"""AST bug injection: every operator fires, edits stay local, no-ops are dropped."""

from __future__ import annotations

import ast

import pytest

from shadowrl.tasks.mutate import (
    ALL_OPERATORS,
    apply_mutations,
    candidate_mutations,
    is_effective,
    mutants,
)

SOURCE = '''import math


def f(xs, lo):
    """Docstring 1 + 1 stays untouched."""
    if not xs:
        return None
    total = 0  # a comment that must survive
    for x in xs[1:len(xs)]:
        if x < lo and x != 0:
            continue
        total = total + pow(x, 2)
    return total
'''


def test_every_operator_fires_and_edits_one_line() -> None:
    found = {m.operator for m, _ in mutants(SOURCE)}
    assert found == {
        "flip comparison", "swap binary operator", "swap boolean operator", "drop not",
        "shift constant", "shift slice bound", "swap call arguments", "return None",
        "remove guard clause",
    }  # fmt: skip
    for m, mutated in mutants(SOURCE):
        assert "# a comment that must survive" in mutated
        assert '"""Docstring 1 + 1 stays untouched."""' in mutated
        changed = [
            a for a, b in zip(SOURCE.splitlines(), mutated.splitlines(), strict=False) if a != b
        ]
        assert len(changed) <= 1 or m.operator == "remove guard clause", m


def test_specific_mutations() -> None:
    texts = {(m.operator, m.text) for m in candidate_mutations(SOURCE)}
    assert ("flip comparison", "x <= lo") in texts
    assert ("swap call arguments", "pow(2, x)") in texts
    assert ("shift slice bound", "1:len(xs) + 1") in texts or any(
        t[1].endswith("len(xs) + 1") for t in texts
    )


def test_noop_mutations_are_dropped() -> None:
    src = "def g():\n    return None\n"
    assert list(mutants(src)) == []  # `return None` -> `return None` is a no-op
    assert not is_effective("x = 1\n", "x  =  1\n")


def test_multiple_mutations_apply_together_and_overlap_is_refused() -> None:
    ms = candidate_mutations(SOURCE, ["comparison"])
    both = apply_mutations(SOURCE, ms[:2])
    ast.parse(both)
    assert both.count("<=") + both.count("==") >= 2
    same = [m for m in candidate_mutations(SOURCE, ["constant"]) if m.line == 12]
    with pytest.raises(ValueError, match="overlapping"):
        apply_mutations(SOURCE, same[:2])


def test_unknown_operator() -> None:
    with pytest.raises(ValueError, match="unknown mutation operators"):
        candidate_mutations(SOURCE, ["nope"])
    assert set(ALL_OPERATORS) >= {"guard", "comparison"}
