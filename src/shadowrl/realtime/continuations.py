"""Counterfactual continuations: K fresh samples from a faithful branch point, judged.

From a rebuilt point (`rebuild.py`) the current policy continues the session K times,
each in its own fork of the rebuilt sandbox, all at once (one `asyncio.gather`, so an
engine batches their turns together). Each continuation starts from the checkpoint's
tokens, which are the recorded prefix cut from the trace (token for token the prompt
the served model saw at the branch turn); that prefix is context only: `mask_prefix`
clears its loss mask, so only the fresh tokens are trained. A judge's scorer scores
each continuation in its own sandbox (`judge.py`, `judges.py`); the session's own
recorded continuation, re-run and re-judged by the same scorer (`recorded.py`), joins
them. The judged ones form one group whose advantages are sibling-centred by the tree
credit (`rl/credit_tree.py`: one `Subtree` split where the prefix ends), so
`rl/batch.rows_from_groups` trains them beside whole-session rows. A continuation the
judge gives no label (a silent simulated user) is not a member; a group needs two.

The judge is never the policy's opinion of itself, and never the recorded session's
user feedback: the recorded continuation is a member only with the judge's reward.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shadowrl.agent import run_episode
from shadowrl.realtime.judge import Attempt, Scorer
from shadowrl.realtime.rebuild import Rebuilt
from shadowrl.realtime.recorded import recorded
from shadowrl.rl import Leaves, Subtree
from shadowrl.types import Policy, Segment, Trajectory


def mask_prefix(traj: Trajectory, prefix: int) -> Trajectory:
    """`traj` with its first `prefix` tokens (the recorded context) out of the loss."""
    first, *rest = traj.segments
    n = len(first.token_ids)
    if n < prefix:
        raise ValueError(f"a continuation of {n} tokens cannot hold a {prefix}-token prefix")
    seg = Segment(
        first.token_ids,
        (False,) * prefix + first.loss_mask[prefix:],
        (0.0,) * prefix + first.logprobs[prefix:],
        (-1,) * prefix + first.versions[prefix:],
    )
    return dataclasses.replace(traj, segments=(seg, *rest))


@dataclass(frozen=True)
class BranchGroup:
    """The judged continuations of one branch point (`trajectories`: the labeled fresh
    ones, then the recorded one when it joined); `prefix`: tokens of recorded context."""

    session_id: str
    turn: int
    prefix: int
    trajectories: tuple[Trajectory, ...]
    run: int = 0  # fresh continuations run, labeled or not
    recorded: bool = False  # the last member is the session's own continuation, re-judged
    recorded_why: str = ""  # why it did not join (empty: it did)
    generated: int = 0  # tokens the fresh continuations generated, labeled or not

    @property
    def fresh(self) -> tuple[Trajectory, ...]:
        """The members the current policy generated (the recorded one left out)."""
        return self.trajectories[:-1] if self.recorded else self.trajectories

    @property
    def rewards(self) -> list[float]:
        return [float(t.reward or 0.0) for t in self.trajectories]

    @property
    def contrast(self) -> bool:
        """Whether its continuations were judged differently (else it teaches nothing)."""
        return len(set(self.rewards)) > 1

    def leaves(self) -> Leaves:
        """The group as `rows_from_groups` trains it: one subtree split after the prefix."""
        group = Leaves(self.trajectories)
        group.subtrees = [Subtree(self.trajectories, split=(0, self.prefix))]
        return group


async def continuation(
    point: Rebuilt, policy: Policy, tokenizer: Any, score: Scorer, index: int = 0
) -> Trajectory:
    """Continuation `index` of `point` in a fork of its sandbox, scored there (`score`
    sees the fork before it is closed), the recorded prefix masked; reward None: no label."""
    sandbox = await asyncio.to_thread(point.checkpoint.fork)
    try:
        traj = await run_episode(
            policy, sandbox, "", tokenizer=tokenizer, config=point.agent,
            task_id=point.session_id, start=point.checkpoint,
        )  # fmt: skip
        reward = await asyncio.to_thread(score, Attempt(sandbox, traj, index))
    finally:
        await asyncio.to_thread(sandbox.close)
    prefix = len(point.checkpoint.state.tokens.ids)
    return dataclasses.replace(mask_prefix(traj, prefix), reward=reward)


async def continue_point(
    point: Rebuilt, policy: Policy, tokenizer: Any, k: int, score: Scorer
) -> BranchGroup:
    """K continuations of `point` with `policy` and the recorded one, each scored by
    `score` (a judge's scorer for this point, `judge.py`)."""
    if point.checkpoint.state.chain.done:
        raise ValueError("a branch point inside a self-summarised chain is not rebuilt")
    done: Sequence[Trajectory] = await asyncio.gather(
        *(continuation(point, policy, tokenizer, score, i) for i in range(k))
    )
    own = await asyncio.to_thread(recorded, point, score)
    fresh = tuple(t for t in done if t.reward is not None)
    prefix, generated = len(point.checkpoint.state.tokens.ids), sum(t.num_generated for t in done)
    if isinstance(own, str):
        return BranchGroup(point.session_id, point.turn, prefix, fresh, k,
                           recorded_why=own, generated=generated)  # fmt: skip
    own = mask_prefix(own, prefix)
    return BranchGroup(point.session_id, point.turn, prefix, (*fresh, own), k,
                       recorded=True, generated=generated)  # fmt: skip
