"""Tree rollouts: G₁ episodes from the prepared root, G₂ continuations at a branch point.

Each root episode runs with a checkpoint rule (`branching.rule`); at the first turn the
rule accepts, the episode is frozen (`EpisodeCheckpoint`: tokens, messages, budgets,
an O(1) sandbox snapshot) and runs on; once it has finished, `branches − 1` more
continuations are forked from that checkpoint, concurrently, each in its own sandbox
fork. The root episode's own continuation is one of the G₂ siblings. An episode that
ends before any branch point is a subtree of one. Credit: `credit_tree.py`.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from shadowrl.agent.state import Checkpoints, EpisodeCheckpoint
from shadowrl.episode import EpisodeSpec, graded_episode
from shadowrl.rl.config import BranchingConfig
from shadowrl.rl.credit_tree import Leaves, Subtree
from shadowrl.rl.rollout import Group, _open
from shadowrl.sandbox.base import Sandbox
from shadowrl.tasks import PreparedTask, Task
from shadowrl.types import Policy, Step, Trajectory

EDITS = frozenset({"edit_file", "write_file"})


def branch_rule(cfg: BranchingConfig) -> Callable[[Sequence[Step]], bool]:
    """The turn boundaries at which an episode may branch (the first one is used)."""
    if cfg.rule == "turn":
        return lambda steps: len(steps) == cfg.turn
    return lambda steps: (
        any(c.name in EDITS for c in steps[-1].tool_calls)
        and not any(c.name in EDITS for s in steps[:-1] for c in s.tool_calls)
    )


@dataclass
class TreeGroup(Group):
    """A flat `Group` of all leaves (`trajectories` is a `Leaves`: the batcher finds the
    tree there, since the orchestrator hands the trainer `group.trajectories`)."""

    subtrees: list[Subtree] = field(default_factory=list)


async def _graded(
    policy: Policy, sandbox: Sandbox, prepared: PreparedTask, tokenizer: Any, spec: EpisodeSpec,
    **kw: Any,
) -> Trajectory:  # fmt: skip
    try:
        traj, _ = await graded_episode(
            policy, sandbox, prepared, tokenizer=tokenizer, spec=spec, **kw
        )
        return traj
    finally:
        await asyncio.to_thread(sandbox.close)


async def _subtree(
    policy: Policy, root: Sandbox, prepared: PreparedTask, tokenizer: Any, spec: EpisodeSpec,
    cfg: BranchingConfig,
) -> Subtree:  # fmt: skip
    rule = branch_rule(cfg)
    cps = Checkpoints(when=lambda steps: not cps.taken and rule(steps))
    sandbox = await _open(lambda: root.snapshot().fork())
    first = await _graded(policy, sandbox, prepared, tokenizer, spec, checkpoints=cps)
    if not cps.taken:
        return Subtree((first,))
    cp: EpisodeCheckpoint = cps.taken[0]
    try:
        forks = [await _open(cp.fork) for _ in range(cfg.branches - 1)]
        rest = await asyncio.gather(
            *(_graded(policy, sb, prepared, tokenizer, spec, start=cp) for sb in forks)
        )
    finally:
        cp.release()
    split = (len(cp.state.chain.done), len(cp.state.tokens.ids))
    return Subtree((first, *rest), split)


async def rollout_tree(
    policy: Policy,
    task: Task,
    prepared: PreparedTask,
    *,
    branching: BranchingConfig,
    tokenizer: Any,
    spec: EpisodeSpec,
    version: int = 0,
) -> TreeGroup:
    """Run `branching.roots` subtrees of `task` concurrently and grade every leaf."""
    start = time.perf_counter()
    root = await _open(lambda: spec.open_sandbox(prepared))
    try:
        results = await asyncio.gather(
            *(
                _subtree(policy, root, prepared, tokenizer, spec, branching)
                for _ in range(branching.roots)
            ),
            return_exceptions=True,
        )
    finally:
        await asyncio.to_thread(root.close)
    subtrees = [r for r in results if isinstance(r, Subtree)]
    errors = [
        "".join(traceback.format_exception(r)).strip()
        for r in results
        if isinstance(r, BaseException)
    ]
    leaves = Leaves(t for s in subtrees for t in s.branches)
    leaves.subtrees = subtrees
    errors += [f"episode ended with {t.end}" for t in leaves if t.end == "error"]
    elapsed = time.perf_counter() - start
    return TreeGroup(task.instance_id, leaves, errors, version, elapsed, subtrees=subtrees)
