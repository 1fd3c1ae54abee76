"""Tree-rollout credit by hand: sibling-centred branch advantages, subtree-valued prefix
advantages against the root group, rows split at the branch point, each token trained
exactly once."""

from __future__ import annotations

import pytest

from shadowrl.rl.credit_tree import Subtree, advantages, tree_rows
from shadowrl.types import Segment, Trajectory

P, G = False, True  # prompt / tool tokens, generated tokens


def seg(ids: list[int], mask: list[bool]) -> Segment:
    return Segment(tuple(ids), tuple(mask), (-0.5,) * len(ids), tuple(0 if m else -1 for m in mask))


def traj(reward: float, *segments: Segment) -> Trajectory:
    return Trajectory("t", (), (), segments, "submitted", reward=reward)


# prefix: prompt 1 2, generated 3 4, tool 5 | branch: generated x, tool, generated y
PREFIX_IDS, PREFIX_MASK = [1, 2, 3, 4, 5], [P, P, G, G, P]


def branch(reward: float, a: int, b: int) -> Trajectory:
    return traj(reward, seg([*PREFIX_IDS, a, 9, b], [*PREFIX_MASK, G, P, G]))


def test_hand_computed_advantages() -> None:
    # subtree 0: branches 1, 0, 1 -> V0 = 2/3; subtree 1: one episode, reward 0 -> V1 = 0
    tree = [
        Subtree((branch(1, 10, 11), branch(0, 20, 21), branch(1, 30, 31)), split=(0, 5)),
        Subtree((traj(0, seg([1, 2, 7, 8], [P, P, G, G])),)),
    ]
    prefix, own = advantages(tree)
    assert prefix == pytest.approx([1 / 3, -1 / 3], abs=1e-12)  # V_i − mean V = ±1/3
    assert own[0] == pytest.approx([1 / 3, -2 / 3, 1 / 3], abs=1e-12)
    assert own[1] == [0.0]  # a lone episode has no siblings
    rows = tree_rows(tree, first_chain=4)
    got = [(r.segment.token_ids, r.segment.loss_mask, round(r.advantage, 6), r.chain) for r in rows]
    full = lambda a, b: (1, 2, 3, 4, 5, a, 9, b)  # noqa: E731
    assert got == [
        (full(10, 11), (P, P, G, G, P, P, P, P), round(1 / 3, 6), 4),  # the prefix, once
        (full(10, 11), (P, P, P, P, P, G, P, G), round(1 / 3, 6), 4),
        (full(20, 21), (P, P, P, P, P, G, P, G), round(-2 / 3, 6), 4),
        (full(30, 31), (P, P, P, P, P, G, P, G), round(1 / 3, 6), 4),
        ((1, 2, 7, 8), (P, P, G, G), round(-1 / 3, 6), 5),
    ]
    # every generated token of the tree is trained exactly once
    assert sum(r.segment.num_generated for r in rows) == 2 + 3 * 2 + 2


def test_a_summarised_prefix_is_trained_whole_and_a_flat_tree_is_silent() -> None:
    summary = seg([1, 2, 3], [P, G, G])
    second = lambda a: seg([1, 4, 5, a], [P, G, P, G])  # noqa: E731
    sub = Subtree((traj(1, summary, second(6)), traj(0, summary, second(7))), split=(1, 3))
    rows = tree_rows([sub, Subtree((traj(0.5, seg([1, 8], [P, G])),))])
    # V = [0.5, 0.5]: the prefix advantage is exactly 0; branches get ±0.5
    assert [(r.segment.token_ids, r.advantage) for r in rows] == [
        ((1, 2, 3), 0.0), ((1, 4, 5, 6), 0.0), ((1, 4, 5, 6), 0.5), ((1, 4, 5, 7), -0.5),
        ((1, 8), 0.0),
    ]  # fmt: skip
    assert rows[1].segment.loss_mask == (P, G, P, P) and rows[2].segment.loss_mask == (P, P, P, G)


def test_branches_must_share_the_prefix() -> None:
    bad = Subtree(
        (branch(1, 10, 11), traj(0, seg([1, 2, 3, 99, 5, 6, 9, 7], [*PREFIX_MASK, G, P, G]))),
        (0, 5),
    )
    with pytest.raises(ValueError, match="share their tokens"):
        tree_rows([bad])


def test_a_root_that_branches_twice_credits_each_node_against_its_siblings() -> None:
    # root R parts from F1 after the prefix (position 5), then from F2 at position 8
    r = traj(1, seg([1, 2, 3, 4, 5, 10, 11, 6, 12, 13], [*PREFIX_MASK, G, G, P, G, G]))
    f2 = traj(0, seg([1, 2, 3, 4, 5, 10, 11, 6, 22, 23], [*PREFIX_MASK, G, G, P, G, G]))
    f1 = traj(0, seg([1, 2, 3, 4, 5, 30, 31, 7, 32], [*PREFIX_MASK, G, G, P, G]))
    deep = Subtree((Subtree((r, f2), split=(0, 8)), f1), split=(0, 5))
    lone = Subtree((traj(1, seg([1, 2, 7, 8], [P, P, G, G])),))
    assert deep.leaves == (r, f2, f1) and deep.value == pytest.approx(1 / 3, abs=1e-12)
    prefix, own = advantages([deep, lone])
    assert prefix == pytest.approx([-1 / 3, 1 / 3], abs=1e-12)  # V = 1/3 and 1 against 2/3
    assert own[0] == pytest.approx([0.25, -0.25], abs=1e-12)  # V(R's line) = 1/2, V(F1) = 0
    got = [
        (r.segment.token_ids, r.segment.loss_mask, round(r.advantage, 6))
        for r in tree_rows([deep, lone])
    ]
    m = lambda *on: tuple(i in on for i in range(10))  # noqa: E731
    assert (
        got
        == [
            (r.segments[0].token_ids, m(2, 3), round(-1 / 3, 6)),  # the shared prefix
            (r.segments[0].token_ids, m(5, 6), 0.25),  # R's line until it parts from F2
            (r.segments[0].token_ids, m(8, 9), 0.5),  # R after the second split: 1 − 1/2
            (f2.segments[0].token_ids, m(8, 9), -0.5),
            (f1.segments[0].token_ids, m(5, 6, 8)[:9], -0.25),  # F1 after the first: 0 − 1/4
            ((1, 2, 7, 8), (P, P, G, G), round(1 / 3, 6)),
        ]
    )
    assert deep.generated == 2 + 2 + 2 + 2 + 3  # every token of the tree, once
