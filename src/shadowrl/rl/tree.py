"""Tree rollouts: G₁ episodes from the prepared root, G₂ continuations at a branch point.

Each root episode runs with a checkpoint rule (`branching.rule`); at a turn the rule
accepts, the episode is frozen (`EpisodeCheckpoint`: tokens, messages, budgets, an O(1)
sandbox snapshot) and runs on, while `branches − 1` more continuations are forked from
that checkpoint at once, each in its own sandbox fork: the root and its branches decode
in the same engine batches, and the branches' shared prompt is served from the engine's
prefix cache. The root episode's own continuation is one of the G₂ siblings. Rules
`first_edit` and `turn` branch once; `entropy` (as ARPO does) branches where the
policy's mean entropy over the first `entropy_window` tokens generated right after a
tool result reaches `entropy_threshold`, up to `max_branch_points` times along the root
episode (branches do not branch again): the episode is frozen at every boundary after a
tool result and the checkpoint kept only if the turn generated from it was that
uncertain (the siblings re-sample that turn), else released at once. An episode that ends before any branch point is
a subtree of one. Root episodes come from `SandboxRoots` (warm pools) when given.
Credit: `credit_tree.py`.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from shadowrl.agent import Checkpoints, EpisodeCheckpoint
from shadowrl.episode import EpisodeSpec, graded_episode
from shadowrl.rl.config import BranchingConfig
from shadowrl.rl.credit_tree import Leaves, Subtree
from shadowrl.rl.rollout import Group, _open
from shadowrl.rl.roots import SandboxRoots
from shadowrl.sandbox import Sandbox
from shadowrl.tasks import PreparedTask, Task
from shadowrl.types import Generation, Policy, Step, Trajectory

EDITS = frozenset({"edit_file", "write_file"})


def branch_rule(cfg: BranchingConfig) -> Callable[[Sequence[Step]], bool]:
    """The turn boundaries at which an episode may branch (the entropy rule then keeps
    only those whose next turn passes `entropy_kept`)."""
    if cfg.rule == "turn":
        return lambda steps: len(steps) == cfg.turn
    if cfg.rule == "entropy":  # right after a tool result came back
        return lambda steps: bool(steps and steps[-1].results)
    return lambda steps: (
        any(c.name in EDITS for c in steps[-1].tool_calls)
        and not any(c.name in EDITS for s in steps[:-1] for c in s.tool_calls)
    )


def entropy_kept(cfg: BranchingConfig) -> Callable[[Generation], bool] | None:
    """For rule 'entropy': whether the turn generated from a boundary was uncertain
    enough to branch there (a policy that reports no entropies never branches)."""
    if cfg.rule != "entropy":
        return None

    def keep(gen: Generation) -> bool:
        window = gen.entropies[: cfg.entropy_window]
        return bool(window) and sum(window) / len(window) >= cfg.entropy_threshold

    return keep


@dataclass
class TreeGroup(Group):
    """A flat `Group` of all leaves (`trajectories` is a `Leaves`, which carries the tree
    and its credit assignment to the batch builder)."""

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


async def _branches(
    policy: Policy, cp: EpisodeCheckpoint, n: int, prepared: PreparedTask, tokenizer: Any,
    spec: EpisodeSpec,
) -> list[Trajectory]:  # fmt: skip
    """`n` continuations of `cp`, each in its own fork of its snapshot, graded."""

    async def one() -> Trajectory:
        sandbox = await _open(cp.fork)
        return await _graded(policy, sandbox, prepared, tokenizer, spec, start=cp)

    return await asyncio.gather(*(one() for _ in range(n)))


async def run_subtree(
    policy: Policy, fork_root: Callable[[], Sandbox], prepared: PreparedTask, tokenizer: Any,
    spec: EpisodeSpec, cfg: BranchingConfig,
) -> Subtree:  # fmt: skip
    """One root episode in a sandbox from `fork_root` and, from each branch point it
    passes, `branches − 1` forks started as soon as the checkpoint is kept (the root runs
    on meanwhile). A Ray environment worker runs it whole: checkpoints stay local."""
    rule = branch_rule(cfg)
    forks: list[tuple[EpisodeCheckpoint, asyncio.Task[list[Trajectory]]]] = []

    def branch(cp: EpisodeCheckpoint) -> None:
        rest = _branches(policy, cp, cfg.branches - 1, prepared, tokenizer, spec)
        forks.append((cp, asyncio.ensure_future(rest)))

    cps = Checkpoints(
        when=lambda steps: len(cps.taken) < cfg.max_branch_points and rule(steps),
        keep=entropy_kept(cfg),
        on_taken=branch,
    )
    try:
        sandbox = await _open(fork_root)
        first = await _graded(policy, sandbox, prepared, tokenizer, spec, checkpoints=cps)
        rests = [await task for _, task in forks]
    finally:
        for _, task in forks:
            task.cancel()  # no-op on finished ones; a failed root stops its branches
        await asyncio.gather(*(task for _, task in forks), return_exceptions=True)
        for cp, _ in forks:
            cp.release()
    node: Trajectory | Subtree = first
    for (cp, _), rest in reversed(list(zip(forks, rests, strict=True))):
        node = Subtree((node, *rest), (len(cp.state.chain.done), len(cp.state.tokens.ids)))
    return node if isinstance(node, Subtree) else Subtree((node,))


async def rollout_tree(
    policy: Policy,
    task: Task,
    prepared: PreparedTask,
    *,
    branching: BranchingConfig,
    tokenizer: Any,
    spec: EpisodeSpec,
    version: int = 0,
    roots: SandboxRoots | None = None,
) -> TreeGroup:
    """Run `branching.roots` subtrees of `task` concurrently and grade every leaf.

    With `roots` the root episodes start in forks of the task's kept root sandbox (warm
    when pools are on); without, a root is prepared for this group alone."""
    start = time.perf_counter()

    async def subtrees(fork: Callable[[], Sandbox]) -> list[Subtree | BaseException]:
        return await asyncio.gather(
            *(run_subtree(policy, fork, prepared, tokenizer, spec, branching)
              for _ in range(branching.roots)),
            return_exceptions=True,
        )  # fmt: skip

    if roots is not None:
        results = await subtrees(await roots.forker(prepared))
    else:
        root = await _open(lambda: spec.open_sandbox(prepared))
        try:
            results = await subtrees(lambda: root.snapshot().fork())
        finally:
            await asyncio.to_thread(root.close)
    return tree_group(task.instance_id, results, version, time.perf_counter() - start)


def tree_group(
    task_id: str, results: Sequence[Subtree | BaseException], version: int, wall_s: float,
    lost: int = 0,
) -> TreeGroup:  # fmt: skip
    """The group of one task's subtree results: crashes and error endings spoil it."""
    subtrees = [r for r in results if isinstance(r, Subtree)]
    errors = [
        "".join(traceback.format_exception(r)).strip()
        for r in results
        if isinstance(r, BaseException)
    ]
    leaves = Leaves(t for s in subtrees for t in s.leaves)
    leaves.subtrees = subtrees
    errors += [f"episode ended with {t.end}" for t in leaves if t.end == "error"]
    return TreeGroup(task_id, leaves, errors, version, wall_s, lost, subtrees=subtrees)
