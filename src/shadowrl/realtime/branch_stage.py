"""The branching stage of the real-time loop: the one `Brancher` the train stage calls.

    sessions with negative feedback ─► branch points (branch.py) ─► faithful rebuilds
        (rebuild.py; unfaithful ones skipped, counted) ─► K continuations each by the
        serving checkpoint, judged (continuations.py) ─► tree-credit groups, trained
        beside the whole-session rows in the same batch

Built once from `realtime.branching` (`build`); off, `Deps.brancher` is None and the
train stage never sees any of it. The continuations of all points run at once on one
engine opened on the serving checkpoint, so their turns share its batches; their
tokens are stamped with the checkpoint's registry version, as the mixed-in rollouts'
are (`mix.stamped`). The judge is the session workspace's own tests (`WorkspaceTests`).
"""

from __future__ import annotations

import asyncio
import itertools
from datetime import datetime
from typing import Any, cast

from shadowrl.realtime.branch import BranchCounts, store_points
from shadowrl.realtime.config import BranchConfig
from shadowrl.realtime.context import BranchStats, Ctx
from shadowrl.realtime.continuations import BranchGroup, Judge, WorkspaceTests, continue_point
from shadowrl.realtime.mix import stamped
from shadowrl.realtime.rebuild import Rebuilt
from shadowrl.rl.credit_tree import Leaves


class StoreBrancher:
    """Branch points from the trace store, continued by the serving checkpoint."""

    def __init__(self, cfg: BranchConfig, judge: Judge) -> None:
        self.cfg, self.judge = cfg, judge

    def _points(
        self, ctx: Ctx, since: datetime, until: datetime, counts: BranchCounts
    ) -> list[Rebuilt]:
        d = ctx.deps
        points = store_points(
            ctx.store.engine, d.tokenizer, d.spec.agent, d.spec.sandbox, since,
            self.cfg.keep_below, d.private_keys, counts, until,
        )  # fmt: skip
        return list(itertools.islice(points, self.cfg.max_points))

    async def groups(
        self, ctx: Ctx, since: datetime, until: datetime, checkpoint: str, version: int
    ) -> tuple[list[Leaves], BranchStats]:
        counts = BranchCounts()
        points = await asyncio.to_thread(self._points, ctx, since, until, counts)
        try:
            done = await self._continue(ctx, points, checkpoint) if points else []
        finally:
            for p in points:
                await asyncio.to_thread(p.close)
        groups = [g for g in done if g is not None]
        stats = BranchStats(
            negative=counts.negative, points=counts.points, faithful=counts.faithful,
            unfaithful=counts.unfaithful, unjudged=len(done) - len(groups),
            continuations=sum(len(g.trajectories) for g in groups), groups=len(groups),
            with_contrast=sum(g.contrast for g in groups), no_point_why=dict(counts.no_point),
            unfaithful_why=dict(counts.unfaithful_why),
        )  # fmt: skip
        return [_stamped(g, version) for g in groups], stats

    async def _continue(
        self, ctx: Ctx, points: list[Rebuilt], checkpoint: str
    ) -> list[BranchGroup | None]:
        async with ctx.deps.open_policy(checkpoint) as factory:
            # a served session has no task: the factory's shared engine serves it
            policy = factory(cast(Any, None), cast(Any, None))
            return await asyncio.gather(*(
                continue_point(p, policy, factory.tokenizer, self.cfg.k, self.judge)
                for p in points
            ))  # fmt: skip


def _stamped(group: BranchGroup, version: int) -> Leaves:
    trajs = tuple(stamped(t, version) for t in group.trajectories)
    return BranchGroup(group.session_id, group.turn, group.prefix, trajs).leaves()


def build(cfg: BranchConfig) -> StoreBrancher | None:
    """The brancher `realtime.branching` asks for; None when it is off."""
    return StoreBrancher(cfg, WorkspaceTests()) if cfg.enabled else None
