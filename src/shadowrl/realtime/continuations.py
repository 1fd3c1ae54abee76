"""Counterfactual continuations: K fresh samples from a faithful branch point, judged.

From a rebuilt point (`rebuild.py`) the current policy continues the session K times,
each in its own fork of the rebuilt sandbox, all at once (one `asyncio.gather`, so an
engine batches their turns together). Each continuation starts from the checkpoint's
tokens, which are the recorded prefix cut from the trace (token for token the prompt
the served model saw at the branch turn); that prefix is context only: `mask_prefix`
clears its loss mask, so only the fresh tokens are trained. A `Judge` scores each
continuation in its own sandbox; the K of them form one group whose advantages are
sibling-centred by the tree credit (`rl/credit_tree.py`: one `Subtree` split where the
prefix ends), so `rl/batch.rows_from_groups` trains them beside whole-session rows.

The judge is never the policy's opinion of itself, and never the recorded session's
user feedback: the recorded continuation is not in the group (re-judging it with the
same judge is planned, issue 35 §3).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from shadowrl.agent.loop import run_episode
from shadowrl.realtime.rebuild import Rebuilt
from shadowrl.rl.credit_tree import Leaves, Subtree
from shadowrl.sandbox.base import Sandbox
from shadowrl.types import Policy, Segment, Trajectory

TEST_GLOBS = ("test_*.py", "*_test.py")
NO_PYTEST = "No module named pytest"
# pytest's usage error and no tests collected; the shell's not executable and not found
NO_VERDICT = frozenset({4, 5, 126, 127})


class Judge(Protocol):
    """Scores a continuation in the sandbox it ran in; None: this point cannot be judged."""

    def judge(self, point: Rebuilt, sandbox: Sandbox) -> float | None: ...


@dataclass(frozen=True)
class WorkspaceTests:
    """The tests of the session's own workspace: every `test_*.py` / `*_test.py` of the
    starting copy, written back pristine into the continuation's sandbox (so an edited or
    deleted test never counts), then run with pytest; 1.0 when they pass, else 0.0. A
    workspace without tests, or a sandbox that cannot run them (no pytest, nothing
    collected), cannot be judged (None). Planned: run them through the one
    grader (`tasks/`), from the session's base commit."""

    command: str = "python -m pytest -q -p no:cacheprovider"
    timeout_s: float = 120.0

    def tests(self, copy: Path) -> list[Path]:
        return sorted({p for g in TEST_GLOBS for p in copy.rglob(g) if p.is_file()})

    def judge(self, point: Rebuilt, sandbox: Sandbox) -> float | None:
        tests = self.tests(point.copy)
        if not tests:
            return None
        for path in tests:
            sandbox.write_file(str(path.relative_to(point.copy)), path.read_bytes())
        names = " ".join(str(p.relative_to(point.copy)) for p in tests)
        result = sandbox.exec(f"{self.command} {names}", timeout=self.timeout_s)
        if result.exit_code in NO_VERDICT or NO_PYTEST in result.stdout + result.stderr:
            return None  # nothing ran them (no pytest, no tests collected): not a failure
        return 1.0 if result.exit_code == 0 and not result.timed_out else 0.0


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
    """K judged continuations of one branch point; `prefix`: tokens of recorded context."""

    session_id: str
    turn: int
    prefix: int
    trajectories: tuple[Trajectory, ...]

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


async def _one(point: Rebuilt, policy: Policy, tokenizer: Any, judge: Judge) -> Trajectory | None:
    sandbox = await asyncio.to_thread(point.checkpoint.fork)
    try:
        traj = await run_episode(
            policy, sandbox, "", tokenizer=tokenizer, config=point.agent,
            task_id=point.session_id, start=point.checkpoint,
        )  # fmt: skip
        reward = await asyncio.to_thread(judge.judge, point, sandbox)
    finally:
        await asyncio.to_thread(sandbox.close)
    if reward is None:
        return None
    prefix = len(point.checkpoint.state.tokens.ids)
    return dataclasses.replace(mask_prefix(traj, prefix), reward=reward)


async def continue_point(
    point: Rebuilt, policy: Policy, tokenizer: Any, k: int, judge: Judge
) -> BranchGroup | None:
    """K continuations of `point` with `policy`, judged; None when the judge cannot
    score this point (e.g. a workspace without tests)."""
    if point.checkpoint.state.chain.done:
        raise ValueError("a branch point inside a self-summarised chain is not rebuilt")
    done: Sequence[Trajectory | None] = await asyncio.gather(
        *(_one(point, policy, tokenizer, judge) for _ in range(k))
    )
    if any(t is None for t in done):
        return None
    trajs = tuple(t for t in done if t is not None)
    prefix = len(point.checkpoint.state.tokens.ids)
    return BranchGroup(point.session_id, point.turn, prefix, trajs)
