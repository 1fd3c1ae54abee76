"""The control arm's feedback: the same rewards, shuffled among the sessions of a cohort
and among the members of a branch group.

A candidate trained on real feedback may improve for reasons that have nothing to do
with what users said: any update on the policy's own samples moves it (sharpening,
drift). The control trains on the same sessions, the same number of steps, with each
cohort's labels permuted, so the reward no longer tracks the session it is attached
to. Its cohort means, and so the rows and tokens trained, stay those of the real arm;
what differs between the arms is only whether feedback and behaviour correspond. The
panel's paired difference candidate − control is then the effect of learning *from
feedback*.

Branch groups (`realtime.branching`) are the same kind of evidence at a finer grain, so
their control is the same: each group's judged rewards shuffled among its members
(`permuted_groups`), the recorded continuation among them. A group keeps its members,
their tokens, its mean and the multiset of its advantages; only which continuation
carries which label changes. The arm with branching is thus compared with a control
that spends the same generated tokens and optimizer steps on the same rows (the rows
trained can differ only where a member whose reward equals its group's mean, advantage
0, is skipped: a different member in each arm).
"""

from __future__ import annotations

import dataclasses
import random
from collections import defaultdict
from collections.abc import Sequence

from shadowrl.realtime import ProductionSession, Reward, cohort_key
from shadowrl.realtime.config import Cohort
from shadowrl.rl import Leaves, Subtree
from shadowrl.types import Trajectory


def permuted_rewards(
    sessions: Sequence[ProductionSession], rewards: Sequence[Reward], cohort: Cohort, seed: int
) -> list[Reward]:
    """`rewards` with the labeled ones of each cohort shuffled among themselves.

    Unlabeled sessions (value None) keep their place: they stay out of training in
    both arms. Deterministic in `seed`.
    """
    if len(sessions) != len(rewards):
        raise ValueError("one reward per session")
    rng = random.Random(seed)
    places: dict[str, list[int]] = defaultdict(list)
    for i, (s, r) in enumerate(zip(sessions, rewards, strict=True)):
        if r.value is not None:
            places[cohort_key(s, cohort)].append(i)
    out = list(rewards)
    for key in sorted(places):
        idx = places[key]
        shuffled = [rewards[i] for i in idx]
        rng.shuffle(shuffled)
        for i, r in zip(idx, shuffled, strict=True):
            out[i] = r
    return out


def permuted_groups(
    groups: Sequence[Sequence[Trajectory]], seed: int
) -> list[Sequence[Trajectory]]:
    """Each group with its members' rewards shuffled among themselves; a tree group
    (`credit_tree.Leaves`, a branch group) keeps its tree, relabelled. Deterministic in
    `seed`."""
    rng = random.Random(f"{seed}:groups")
    out: list[Sequence[Trajectory]] = []
    for group in groups:
        rewards = [t.reward for t in group]
        rng.shuffle(rewards)
        new = {id(t): dataclasses.replace(t, reward=r) for t, r in zip(group, rewards, strict=True)}
        if not isinstance(group, Leaves):
            out.append([new[id(t)] for t in group])
            continue
        relabelled = Leaves(new[id(t)] for t in group)
        relabelled.subtrees = [_relabelled(s, new) for s in group.subtrees]
        out.append(relabelled)
    return out


def _relabelled(node: Subtree, new: dict[int, Trajectory]) -> Subtree:
    branches = tuple(
        _relabelled(b, new) if isinstance(b, Subtree) else new[id(b)] for b in node.branches
    )
    return dataclasses.replace(node, branches=branches)
