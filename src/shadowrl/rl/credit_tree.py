"""Credit assignment for tree rollouts: advantages for shared prefixes and branches.

A tree group is G₁ subtrees of one task. Each subtree is one episode from the prepared
root up to a branch point, then G₂ continuations forked from its checkpoint (one
branch, when the episode ended before any branch point). With the entropy rule the root
episode may branch again further on: its own continuation is then itself a subtree,
nested. Every token is trained once, with the advantage of the node that owns it:

* a node's value `V` is the mean reward of its leaves;
* a child's tokens (after its parent's split, up to its own) get
  `V_child − mean(V of its siblings and itself)`; a leaf's value is its reward, so with
  one branch point a branch's own tokens get `r_b − mean(siblings' r)`;
* each subtree's shared prefix gets `V_i − mean_j V_j`, centred against the root group;

no std division, no length normalisation, as in the flat objective (`loss.py`). A
microbatch row carries one advantage, so a segment is split at each branch point: the
prefix row masks the branch's tokens out, each branch row masks the prefix out (it
still sees it as context). Segments finished before a split (an earlier self-summary)
belong to the node before it whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch

from shadowrl.rl.loss import group_advantages
from shadowrl.rl.row import Row
from shadowrl.types import Segment, Trajectory

Position = tuple[int, int]  # (segment index, token position) in a trajectory's segments


@dataclass(frozen=True)
class Subtree:
    """Episodes sharing one prefix; `split` = (segment index, token position) where
    they part, None for a single episode that never reached a branch point.

    A branch is a trajectory, or a `Subtree` that parts again later (its prefix starts
    at this split); the root episode's line is always the first branch.
    """

    branches: tuple[Trajectory | Subtree, ...]
    split: Position | None = None

    @property
    def leaves(self) -> tuple[Trajectory, ...]:
        return tuple(t for b in self.branches for t in _leaves(b))

    @property
    def rewards(self) -> list[float]:
        """The leaves' rewards."""
        leaves = self.leaves
        if any(t.reward is None for t in leaves):
            raise ValueError(f"task {leaves[0].task_id!r}: unscored trajectory in a tree")
        return [float(t.reward or 0.0) for t in leaves]

    @property
    def value(self) -> float:
        rewards = self.rewards
        return sum(rewards) / len(rewards)

    @property
    def generated(self) -> int:
        """Tokens actually generated: each shared prefix counts once."""
        return _generated(self, None)


def _leaves(node: Trajectory | Subtree) -> tuple[Trajectory, ...]:
    return node.leaves if isinstance(node, Subtree) else (node,)


def _value(node: Trajectory | Subtree) -> float:
    if isinstance(node, Subtree):
        return node.value
    if node.reward is None:
        raise ValueError(f"task {node.task_id!r}: unscored trajectory in a tree")
    return float(node.reward)


class Leaves(list[Trajectory]):
    """A tree group's trajectories, flat, with the tree they form: `row.OwnCredit`, so
    the batch builder trains it with `tree_rows` (the orchestrator hands the trainer
    `group.trajectories`, the tree riding along)."""

    subtrees: Sequence[Subtree] = ()

    def rows(self, first_chain: int) -> tuple[list[Row], int]:
        return tree_rows(self.subtrees, first_chain), len(self.subtrees)


def _centred(values: Sequence[float]) -> list[float]:
    return group_advantages(torch.tensor(values, dtype=torch.float64)).tolist()


def advantages(subtrees: Sequence[Subtree]) -> tuple[list[float], list[list[float]]]:
    """(prefix advantage per subtree, advantage of each of its branches)."""
    prefix = _centred([s.value for s in subtrees])
    own = [_centred([_value(b) for b in s.branches]) for s in subtrees]
    return prefix, own


def _masked(seg: Segment, keep: range) -> Segment:
    mask = tuple(m and i in keep for i, m in enumerate(seg.loss_mask))
    return replace(seg, loss_mask=mask)


def _span(traj: Trajectory, start: Position | None, end: Position | None) -> list[Segment]:
    """`traj`'s segments cut to the tokens in [start, end) (None: its first / last)."""
    segs = traj.segments
    (s0, p0), (s1, p1) = start or (0, 0), end or (len(segs) - 1, len(segs[-1].token_ids))
    out = []
    for i in range(s0, s1 + 1):
        lo, hi = p0 if i == s0 else 0, p1 if i == s1 else len(segs[i].token_ids)
        whole = (lo, hi) == (0, len(segs[i].token_ids))
        out.append(segs[i] if whole else _masked(segs[i], range(lo, hi)))
    return out


def _generated(node: Trajectory | Subtree, start: Position | None) -> int:
    spans = _own_spans(node, start, 0.0)
    return sum(seg.num_generated for segs, _ in spans for seg in segs)


def _own_spans(
    node: Trajectory | Subtree, start: Position | None, adv: float
) -> list[tuple[list[Segment], float]]:
    """(segments cut to the tokens `node` owns after `start`, their advantage), for
    `node` and, depth first, every node under it."""
    if not isinstance(node, Subtree):
        return [(_span(node, start, None), adv)]
    first = _leaves(node)[0]
    if node.split is None:
        return [(_span(first, start, None), adv)]
    seg_i, pos = node.split
    shared = first.segments[seg_i].token_ids[:pos]
    if any(t.segments[seg_i].token_ids[:pos] != shared for t in node.leaves):
        raise ValueError("branches of a subtree must share their tokens up to the split")
    out = [(_span(first, start, node.split), adv)]
    for branch, a in zip(node.branches, _centred([_value(b) for b in node.branches]), strict=True):
        out += _own_spans(branch, node.split, a)
    return out


def tree_rows(subtrees: Sequence[Subtree], first_chain: int = 0) -> list[Row]:
    """Rows of one tree group; each subtree is one chain (the staleness filter drops a
    subtree whole, as it drops a flat chain whole)."""
    rows: list[Row] = []
    for chain, (sub, a_prefix) in enumerate(
        zip(subtrees, _centred([s.value for s in subtrees]), strict=True), start=first_chain
    ):
        for segs, adv in _own_spans(sub, None, a_prefix):
            rows += [Row(seg, adv, chain) for seg in segs]
    return [r for r in rows if r.segment.num_generated > 0]
