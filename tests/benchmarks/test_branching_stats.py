"""benchmarks/branching.py's pure parts: the ratio's bootstrap interval and branch counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import branching

    return branching


def test_ratio_interval_of_constant_groups_is_the_ratio(bench: Any) -> None:
    # every draw of identical groups gives 2/100 over 1/100
    assert bench.ratio_interval([(100, 1)] * 5, [(100, 2)] * 5) == [2.0, 2.0]


def test_ratio_interval_widens_with_spread_and_covers_the_point(bench: Any) -> None:
    flat, tree = [(100, 0), (100, 2), (100, 1), (100, 3)], [(50, 1), (50, 0), (50, 2)]
    low, high = bench.ratio_interval(flat, tree)
    point = (3 / 150) / (6 / 400)
    assert low < point < high and high - low > 0.5


def test_no_interval_when_flat_resolved_nothing(bench: Any) -> None:
    assert bench.ratio_interval([(100, 0)] * 3, [(100, 1)] * 3) is None


def test_branch_points_count_nested_splits(bench: Any) -> None:
    from shadowrl.rl.credit_tree import Subtree
    from shadowrl.types import Trajectory

    leaf = Trajectory.__new__(Trajectory)  # only the tree's shape is counted
    inner = Subtree((leaf, leaf), (0, 5))
    outer = Subtree((inner, leaf), (0, 2))

    class Group:
        subtrees = (outer, Subtree((leaf,)))

    assert bench.branch_points(Group()) == 2
    assert bench.branch_points(Subtree((leaf,))) == 0
