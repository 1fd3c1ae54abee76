"""Every token is trained once when a session's own continuation joins its branch group:
its whole-session row is cut at the branch turn, hand-computed token by token.

Two sessions of one cohort: `rejected` (reward 0; tokens 3, 4 before the branch turn,
7, 8 after it) and `kept` (reward 1; tokens 13, 14). `rejected` is branched before
its second reply (a 6-token prefix): two fresh continuations (tokens 9, 10 judged 1;
11, 12 judged 0) and its own continuation re-judged 0. Cohort mean 1/2, group mean 1/3.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence

import pytest

from shadowrl.realtime.branch_stage import cut_at_turn, own_rows
from shadowrl.realtime.config import RowsConfig
from shadowrl.realtime.continuations import BranchGroup, mask_prefix
from shadowrl.realtime.rewards import Conduct, Reward
from shadowrl.realtime.rows import cohort_groups
from shadowrl.realtime.sessions import ProductionSession
from shadowrl.rl.batch import rows_from_groups
from shadowrl.types import Segment, Trajectory

PREFIX = 6


def traj(ids: Sequence[int], generated: set[int], reward: float | None = None) -> Trajectory:
    mask = tuple(t in generated for t in ids)
    seg = Segment(tuple(ids), mask, tuple(-0.5 if m else 0.0 for m in mask),
                  tuple(0 if m else -1 for m in mask))  # fmt: skip
    return Trajectory("demo", (), (), (seg,), "submitted", reward=reward)


def session(sid: str, t: Trajectory) -> ProductionSession:
    return ProductionSession(sid, "demo", "ckpt", None, (), Conduct(), ((1.0, 1.0),), t)


REJECTED = session("rejected", traj([1, 2, 3, 4, 5, 6, 7, 8], {3, 4, 7, 8}))
KEPT = session("kept", traj([1, 2, 13, 14], {13, 14}))
REWARDS = [Reward(0.0), Reward(1.0)]


def group(recorded: bool = True) -> BranchGroup:
    fresh = (
        mask_prefix(traj([1, 2, 3, 4, 5, 6, 9, 10], {3, 4, 9, 10}, 1.0), PREFIX),
        mask_prefix(traj([1, 2, 3, 4, 5, 6, 11, 12], {3, 4, 11, 12}, 0.0), PREFIX),
    )
    own = dataclasses.replace(mask_prefix(REJECTED.trajectory, PREFIX), reward=0.0)
    members = (*fresh, own) if recorded else fresh
    return BranchGroup("rejected", 2, PREFIX, members, run=2, recorded=recorded)


def advantages_by_token(
    sessions: Sequence[ProductionSession], g: BranchGroup
) -> dict[int, list[float]]:
    """Each trained token id -> the advantages it is trained with, over the whole batch."""
    cohorts, _ = cohort_groups(sessions, REWARDS, trainer_version=0, cfg=RowsConfig())
    rows, _ = rows_from_groups([*cohorts, g.leaves()])
    out: dict[int, list[float]] = defaultdict(list)
    for r in rows:
        for t, m in zip(r.segment.token_ids, r.segment.loss_mask, strict=True):
            if m:
                out[t].append(r.advantage)
    return dict(out)


def test_the_session_row_is_cut_at_the_branch_turn_so_each_token_has_one_advantage() -> None:
    g = group()
    cut = own_rows([REJECTED, KEPT], [g])
    assert cut[1] is KEPT, "a session no group holds is trained whole"
    (seg,) = cut[0].trajectory.segments
    assert seg.loss_mask == (False, False, True, True, False, False, False, False)
    assert seg.token_ids == REJECTED.trajectory.segments[0].token_ids, "context unchanged"
    got = advantages_by_token(cut, g)
    third = 1 / 3
    want = {
        3: [-0.5], 4: [-0.5],  # before the turn: reward 0 - cohort mean 1/2
        13: [0.5], 14: [0.5],  # the other session: 1 - 1/2
        7: [-third], 8: [-third],  # its own continuation, once: judged 0 - group mean 1/3
        9: [2 * third], 10: [2 * third], 11: [-third], 12: [-third],  # the fresh ones
    }  # fmt: skip
    assert got.keys() == want.keys()
    for token, advs in want.items():
        assert got[token] == pytest.approx(advs, abs=1e-12), token
    # uncut (the behaviour before), tokens 7 and 8 were trained twice, with two advantages
    twice = advantages_by_token([REJECTED, KEPT], g)
    assert sorted(twice[7]) == pytest.approx([-0.5, -third], abs=1e-12)


def test_a_session_whose_own_continuation_stayed_out_is_trained_whole() -> None:
    g = group(recorded=False)
    assert own_rows([REJECTED, KEPT], [g]) == [REJECTED, KEPT]
    got = advantages_by_token([REJECTED, KEPT], g)
    assert got[7] == pytest.approx([-0.5], abs=1e-12), "trained once, in its session's row"


def test_a_member_that_is_not_the_sessions_tokens_is_refused() -> None:
    stranger = traj([1, 2, 3, 4, 5, 6, 99, 98], {99, 98}, 0.0)
    with pytest.raises(ValueError, match="not its own tokens"):
        cut_at_turn(REJECTED, stranger)
