"""The branching stage of the real-time loop: the one `Brancher` the train stage calls.

    sessions with negative feedback ─► branch points (branch.py) ─► faithful rebuilds
        (rebuild.py; unfaithful ones skipped, counted) ─► K continuations each by the
        serving checkpoint, judged (continuations.py), with the session's own
        continuation re-judged by the same judge (recorded.py) ─► tree-credit groups,
        trained beside the whole-session rows (cut at the branch turn) in one batch

Built once from `realtime.branching` (`build_brancher`); off, `Deps.brancher` is None and the
train stage never sees any of it. The continuations of all points run at once on one
engine opened on the serving checkpoint, so their turns share its batches; their
tokens are stamped with the checkpoint's registry version, as the mixed-in rollouts'
are (`mix.stamped`); the recorded continuation keeps its recorded versions. The judge
is the one `realtime.branching.judge` names (`judges.build_judge`): the session
workspace's own tests run by the one grader (`judge.SessionTests`), or, in an
experiment, its simulated user's planted preference or reaction, injected by the
command (`judges.UserModel`). A faithful point it cannot judge (no tests, tests that do
not run, a task the users did not bring) is no branch point: nothing is continued
there, and it is counted (`unjudged`, with its reason); so is a point fewer than two
of whose continuations got a label. `max_points` caps the judged points per cycle.

Every token is trained once, with one advantage. The recorded continuation is a member
of its group, with the judge's reward, so its session's whole-session row is cut at
the branch turn (`own_rows`): the tokens before the turn keep the session's advantage
(its reward minus its cohort's mean; the reward still counts in that mean), those from
the turn on get the group's (the judged reward minus the members' mean), as a tree's
shared prefix and its branches do (`rl/credit_tree.py`). A session whose continuation
did not join (`recorded_why`) keeps its whole row: that continuation is trained there
only.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from shadowrl.realtime.branch import BranchCounts, store_points
from shadowrl.realtime.config import BranchConfig
from shadowrl.realtime.context import Branched, BranchStats, Ctx
from shadowrl.realtime.continuations import BranchGroup, continue_point
from shadowrl.realtime.judge import Judge, NotJudged, Scorer, SessionTests
from shadowrl.realtime.judges import UserModel, build_judge
from shadowrl.realtime.mix import stamped
from shadowrl.realtime.rebuild import Rebuilt
from shadowrl.realtime.sessions import ProductionSession
from shadowrl.rl import Leaves
from shadowrl.sandbox import SandboxConfig
from shadowrl.tasks.config import ShapingConfig
from shadowrl.types import Segment, Trajectory

FEW = "fewer than two of its continuations got a label"


class StoreBrancher:
    """Branch points from the trace store, continued by the serving checkpoint."""

    def __init__(self, cfg: BranchConfig, judge: Judge) -> None:
        self.cfg, self.judge = cfg, judge

    def _points(
        self, ctx: Ctx, since: datetime, until: datetime, counts: BranchCounts,
        unjudged: Counter[str],
    ) -> list[tuple[Rebuilt, Scorer]]:  # fmt: skip
        d = ctx.deps
        points = store_points(
            ctx.store.engine, d.tokenizer, d.spec.agent, d.spec.sandbox, since,
            self.cfg.keep_below, d.private_keys, counts, until,
        )  # fmt: skip
        return list(itertools.islice(self._judged(points, unjudged), self.cfg.max_points))

    def _judged(
        self, points: Iterable[Rebuilt], unjudged: Counter[str]
    ) -> Iterator[tuple[Rebuilt, Scorer]]:
        for point in points:
            try:
                score = self.judge.scorer(point)
            except BaseException:
                point.close()
                raise
            if isinstance(score, NotJudged):
                unjudged[score.reason] += 1
                point.close()
                continue
            yield point, score

    async def groups(
        self, ctx: Ctx, since: datetime, until: datetime, checkpoint: str, version: int,
        sessions: Sequence[ProductionSession],
    ) -> Branched:  # fmt: skip
        counts, unjudged = BranchCounts(), Counter[str]()
        points = await asyncio.to_thread(self._points, ctx, since, until, counts, unjudged)
        try:
            run = await self._continue(ctx, points, checkpoint) if points else []
        finally:
            for p, _ in points:
                await asyncio.to_thread(p.close)
        groups = [g for g in run if len(g.trajectories) >= 2]
        unjudged[FEW] += len(run) - len(groups)
        stats = BranchStats(
            negative=counts.negative, points=counts.points, faithful=counts.faithful,
            unfaithful=counts.unfaithful, unjudged=sum(unjudged.values()),
            continuations=sum(g.run for g in run), groups=len(groups),
            with_contrast=sum(g.contrast for g in groups), no_point_why=dict(counts.no_point),
            unfaithful_why=dict(counts.unfaithful_why), unjudged_why=dict(+unjudged),
            unlabeled=sum(g.run - len(g.fresh) for g in run),
            recorded=sum(g.recorded for g in groups),
            recorded_why=dict(Counter(g.recorded_why for g in groups if not g.recorded)),
            generated=sum(g.generated for g in run),
        )  # fmt: skip
        rows = own_rows(sessions, groups)
        return Branched(rows, [_stamped(g, version) for g in groups], stats)

    async def _continue(
        self, ctx: Ctx, points: list[tuple[Rebuilt, Scorer]], checkpoint: str
    ) -> list[BranchGroup]:
        async with ctx.deps.open_policy(checkpoint) as factory:
            # a served session has no task: the factory's shared engine serves it
            policy = factory(cast(Any, None), cast(Any, None))
            return await asyncio.gather(*(
                continue_point(p, policy, factory.tokenizer, self.cfg.k, score)
                for p, score in points
            ))  # fmt: skip


def cut_at_turn(session: ProductionSession, member: Trajectory) -> ProductionSession:
    """`session`'s row without the tokens `member`, its own continuation as its branch
    group trains it (the prefix masked), trains: a segment of the session with the
    member's token ids keeps in its loss only what the member masks, the tokens before
    the branch turn. Raises when no segment is the member's (not the session's tokens)."""
    owned = {seg.token_ids: seg.loss_mask for seg in member.segments}
    segments: list[Segment] = []
    hit = False
    for seg in session.trajectory.segments:
        theirs = owned.get(seg.token_ids)
        if theirs is not None:
            hit = True
            mask = tuple(m and not o for m, o in zip(seg.loss_mask, theirs, strict=True))
            seg = dataclasses.replace(seg, loss_mask=mask)
        segments.append(seg)
    if not hit:
        raise ValueError(f"session {session.id}: its recorded continuation is not its own tokens")
    traj = dataclasses.replace(session.trajectory, segments=tuple(segments))
    return dataclasses.replace(session, trajectory=traj)


def own_rows(
    sessions: Sequence[ProductionSession], groups: Iterable[BranchGroup]
) -> list[ProductionSession]:
    """`sessions` with each one whose own continuation joined a group cut at its branch
    turn (`cut_at_turn`); the others whole (their continuation is trained only there)."""
    joined = {g.session_id: g.trajectories[-1] for g in groups if g.recorded}
    return [cut_at_turn(s, joined[s.id]) if s.id in joined else s for s in sessions]


def _stamped(group: BranchGroup, version: int) -> Leaves:
    """The fresh members labelled as the serving checkpoint's (the recorded one as recorded)."""
    fresh = tuple(stamped(t, version) for t in group.fresh)
    own = group.trajectories[len(fresh) :]
    return dataclasses.replace(group, trajectories=(*fresh, *own)).leaves()


def build_brancher(
    cfg: BranchConfig, cache_dir: Path, sandbox: SandboxConfig, shaping: ShapingConfig,
    user: UserModel | None = None,
) -> StoreBrancher | None:  # fmt: skip
    """The brancher `realtime.branching` asks for, judging by `realtime.branching.judge`:
    the session's tests under the task cache `cache_dir` with the run's sandbox and
    grading settings, or the experiment's simulated `user`; None when off."""
    if not cfg.enabled:
        return None
    tests = SessionTests(cache_dir, sandbox, shaping, cfg.judge_timeout_s)
    return StoreBrancher(cfg, build_judge(cfg.judge, tests, user))
