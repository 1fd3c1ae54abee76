"""Credit assignment for tree rollouts: advantages for shared prefixes and branches.

A tree group is G₁ subtrees of one task. Each subtree is one episode from the prepared
root up to a branch point, then G₂ continuations forked from its checkpoint (one
branch, when the episode ended before any branch point). Its tokens are trained once:

* a branch's own tokens (after the split) get `r_b − mean(siblings' r)`;
* the shared prefix gets `V_i − mean_j V_j`, with `V_i` the mean reward of subtree i's
  leaves, centred against the root group;

no std division, no length normalisation, as in the flat objective (`loss.py`). A
microbatch row carries one advantage, so a branch's segment is split at the branch
point: the prefix row masks the branch's tokens out, each branch row masks the prefix
out (it still sees it as context). Segments finished before the split (an earlier
self-summary) belong to the prefix whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch

from shadowrl.rl.batch import Row
from shadowrl.rl.loss import group_advantages
from shadowrl.types import Segment, Trajectory


@dataclass(frozen=True)
class Subtree:
    """Episodes sharing one prefix; `split` = (segment index, token position) where
    they part, None for a single episode that never reached a branch point."""

    branches: tuple[Trajectory, ...]
    split: tuple[int, int] | None = None

    @property
    def rewards(self) -> list[float]:
        if any(t.reward is None for t in self.branches):
            raise ValueError(f"task {self.branches[0].task_id!r}: unscored trajectory in a tree")
        return [float(t.reward or 0.0) for t in self.branches]


class Leaves(list[Trajectory]):
    """A tree group's trajectories, flat, with the tree they form (`rows_from_groups`
    trains a `Leaves` with `tree_rows`)."""

    subtrees: Sequence[Subtree] = ()


def advantages(subtrees: Sequence[Subtree]) -> tuple[list[float], list[list[float]]]:
    """(prefix advantage per subtree, own-token advantage per branch)."""
    values = torch.tensor([sum(s.rewards) / len(s.rewards) for s in subtrees], dtype=torch.float64)
    prefix = group_advantages(values).tolist()
    own = [
        group_advantages(torch.tensor(s.rewards, dtype=torch.float64)).tolist() for s in subtrees
    ]
    return prefix, own


def _masked(seg: Segment, keep: range) -> Segment:
    mask = tuple(m and i in keep for i, m in enumerate(seg.loss_mask))
    return replace(seg, loss_mask=mask)


def tree_rows(subtrees: Sequence[Subtree], first_chain: int = 0) -> list[Row]:
    """Rows of one tree group; each subtree is one chain (the staleness filter drops a
    subtree whole, as it drops a flat chain whole)."""
    prefix_adv, own_adv = advantages(subtrees)
    rows: list[Row] = []
    for chain, (sub, a_prefix, a_own) in enumerate(zip(subtrees, prefix_adv, own_adv, strict=True)):
        chain += first_chain
        if sub.split is None:
            (traj,) = sub.branches
            rows += [Row(s, a_prefix, chain) for s in traj.segments]
            continue
        seg_i, pos = sub.split
        first = sub.branches[0].segments
        if any(
            t.segments[seg_i].token_ids[:pos] != first[seg_i].token_ids[:pos] for t in sub.branches
        ):
            raise ValueError("branches of a subtree must share their tokens up to the split")
        rows += [Row(s, a_prefix, chain) for s in first[:seg_i]]
        shared = first[seg_i]
        rows.append(Row(_masked(shared, range(pos)), a_prefix, chain))
        for traj, adv in zip(sub.branches, a_own, strict=True):
            segs = traj.segments
            rows.append(
                Row(_masked(segs[seg_i], range(pos, len(segs[seg_i].token_ids))), adv, chain)
            )
            rows += [Row(s, adv, chain) for s in segs[seg_i + 1 :]]
    return [r for r in rows if r.segment.num_generated > 0]
