"""The permuted control of branch groups: each group's judged rewards shuffled among its
members, the group's tree and tokens kept, hand-computed on one group of three (two
fresh continuations, tokens 9, 10 and 11, 12; the recorded one, 7, 8) judged 1, 0, 0."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from shadowrl.experiments.control import permuted_groups
from shadowrl.realtime.continuations import BranchGroup, mask_prefix
from shadowrl.rl.batch import rows_from_groups
from shadowrl.rl.credit_tree import Leaves
from shadowrl.types import Segment, Trajectory

PREFIX = 4


def traj(ids: Sequence[int], reward: float) -> Trajectory:
    mask = tuple(i >= 2 for i in range(len(ids)))  # tokens 3, 4: the recorded prefix's reply
    seg = Segment(tuple(ids), mask, (-0.5,) * len(ids), (0,) * len(ids))
    return mask_prefix(Trajectory("demo", (), (), (seg,), "submitted", reward=reward), PREFIX)


def group() -> Leaves:
    members = (traj([1, 2, 3, 4, 9, 10], 1.0), traj([1, 2, 3, 4, 11, 12], 0.0),
               traj([1, 2, 3, 4, 7, 8], 0.0))  # fmt: skip
    return BranchGroup("s", 1, PREFIX, members, run=2, recorded=True).leaves()


def by_token(groups: Sequence[Sequence[Trajectory]]) -> dict[int, float]:
    """The advantage each trained token gets (each is trained once here)."""
    rows, _ = rows_from_groups(groups)
    out: dict[int, float] = {}
    for r in rows:
        for t, m in zip(r.segment.token_ids, r.segment.loss_mask, strict=True):
            if m:
                assert t not in out, "a token trained twice"
                out[t] = r.advantage
    return out


def test_a_branch_groups_rewards_are_shuffled_among_its_members_only() -> None:
    real = group()
    third = 1 / 3
    assert by_token([real]) == pytest.approx(
        {9: 2 * third, 10: 2 * third, 11: -third, 12: -third, 7: -third, 8: -third}, abs=1e-12
    )
    seen = set()
    for seed in range(12):
        (control,) = permuted_groups([real], seed)
        assert isinstance(control, Leaves), "still a tree group: it brings its own credit"
        assert [t.segments for t in control] == [t.segments for t in real], "the same rows"
        (sub,) = control.subtrees
        assert sub.split == real.subtrees[0].split and list(sub.branches) == list(control)
        assert sorted(t.reward or 0.0 for t in control) == [0.0, 0.0, 1.0], "the same labels"
        adv = by_token([control])
        assert sorted(adv.values()) == pytest.approx(sorted(by_token([real]).values()))
        winner = next(i for i, t in enumerate(control) if t.reward == 1.0)
        # hand-computed: the member judged 1 gets +2/3 on its own tokens, the others -1/3
        own = {0: (9, 10), 1: (11, 12), 2: (7, 8)}[winner]
        assert all(adv[t] == pytest.approx(2 * third, abs=1e-12) for t in own)
        seen.add(winner)
        assert permuted_groups([real], seed)[0] == control, "deterministic in the seed"
    assert seen == {0, 1, 2}, "the label no longer follows the continuation it was given to"
    assert [t.reward for t in real] == [1.0, 0.0, 0.0], "the real arm's group untouched"


def test_a_plain_group_is_permuted_too() -> None:
    plain = [traj([1, 2, 3, 4, 5, 6], 1.0), traj([1, 2, 3, 4, 6, 5], 0.0)]
    got = [[t.reward for t in permuted_groups([plain], s)[0]] for s in range(8)]
    assert {tuple(g) for g in got} == {(1.0, 0.0), (0.0, 1.0)}
