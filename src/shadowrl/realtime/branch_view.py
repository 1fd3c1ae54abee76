"""K continuations of one recorded session, for a person to compare (`replay --branch`, `/ui`).

The branching stage's steps on one session, at a turn the person picks: the session is
rebuilt before that turn and checked (`rebuild.py`; an unfaithful rebuild comes back
as `Unfaithful`, with its reason), K continuations run at once with live tools
(`continuations.continuation`), each judged as the stage judges it (`judge.py`; a point
the judge cannot score gives its reason and no scores) and diffed against the
session's starting workspace. Nothing is trained or written to the store.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from shadowrl.agent.config import AgentConfig
from shadowrl.realtime.continuations import continuation
from shadowrl.realtime.judge import Attempt, Judge, NotJudged, Scorer
from shadowrl.realtime.rebuild import Rebuilt, Unfaithful, rebuild, served_agent_config
from shadowrl.replay.record import generated_runs
from shadowrl.sandbox import SandboxConfig
from shadowrl.serve import APIError, workspaces
from shadowrl.serve.store.queries import SessionView
from shadowrl.types import Policy


@dataclass(frozen=True)
class Branch:
    """One continuation as shown: how it ended, its turns in all, its diff against the
    session's starting workspace, its score (None: not judged)."""

    end: str
    turns: int
    diff: str
    score: float | None

    def json(self) -> dict[str, Any]:
        return {"end": self.end, "turns": self.turns, "diff": self.diff, "score": self.score}


@dataclass(frozen=True)
class Branches:
    """K continuations from before `turn` (0-based); `not_judged`: why none has a score."""

    session_id: str
    turn: int
    branches: list[Branch]
    not_judged: str | None = None


def recorded_version(point: Rebuilt) -> int:
    """The policy version that generated the branch turn as recorded (0 when unknown)."""
    segs = point.record.record.trajectory.segments
    runs = generated_runs(segs)
    if point.turn >= len(runs):
        return 0
    seg, start, _ = runs[point.turn]
    return max(segs[seg].versions[start], 0)


def rebuilt(
    view: SessionView, turn: int, tokenizer: Any, agent: AgentConfig, sandbox: SandboxConfig
) -> Rebuilt | Unfaithful:
    """Session `view` rebuilt before step `turn` (0-based) under its served agent config."""
    if view.session.kind != "agent" or not 0 <= turn < len(view.steps):
        raise ValueError(
            f"branching needs an agent session and a turn in 1..{len(view.steps)} "
            f"({view.session.id}: {view.session.kind} session, {len(view.steps)} turns)"
        )
    return rebuild(view, turn, tokenizer, served_agent_config(view, agent), sandbox)


async def branches(
    point: Rebuilt, policy: Policy, tokenizer: Any, k: int, judge: Judge
) -> Branches:
    """K continuations of `point` by `policy`, judged and diffed (the caller closes it)."""
    scorer = await asyncio.to_thread(judge.scorer, point)
    score = None if isinstance(scorer, NotJudged) else scorer
    done = await asyncio.gather(*(_one(point, policy, tokenizer, score, i) for i in range(k)))
    why = scorer.reason if isinstance(scorer, NotJudged) else None
    return Branches(point.session_id, point.turn, list(done), why)


async def _one(
    point: Rebuilt, policy: Policy, tokenizer: Any, scorer: Scorer | None, index: int
) -> Branch:
    seen: dict[str, Any] = {}

    def score(attempt: Attempt) -> float | None:
        snap = workspaces.Snapshot(point.copy, point.copy, None, "")
        seen["diff"] = workspaces.diff_of(workspaces.changes(attempt.sandbox, snap), snap)
        seen["score"] = None if scorer is None else scorer(attempt)
        return seen["score"]

    traj = await continuation(point, policy, tokenizer, score, index)
    return Branch(traj.end, len(traj.steps), seen["diff"], seen["score"])


@dataclass(frozen=True)
class SessionBrancher:
    """The review page's branching (`serve/app.py`'s `BranchPolicy`): a session's K
    continuations on the served policy, as JSON; a turn out of range is a 400, an
    unfaithful rebuild a 409 with its reason."""

    tokenizer: Any
    agent: AgentConfig
    sandbox: SandboxConfig
    judge: Judge

    async def __call__(
        self, view: SessionView, k: int, turn: int, policy: Policy
    ) -> dict[str, Any]:
        try:
            point = await asyncio.to_thread(
                rebuilt, view, turn, self.tokenizer, self.agent, self.sandbox
            )
        except ValueError as e:
            raise APIError(400, str(e), "from_turn", "invalid_value") from e
        if isinstance(point, Unfaithful):
            why = (
                f"the session cannot be rebuilt before turn {turn + 1} as recorded: {point.reason}"
            )
            raise APIError(409, why, "from_turn", "unfaithful")
        try:
            shown = await branches(point, policy, self.tokenizer, k, self.judge)
        finally:
            await asyncio.to_thread(point.close)
        return {
            "session_id": shown.session_id, "from_turn": turn + 1,
            "not_judged": shown.not_judged, "branches": [b.json() for b in shown.branches],
        }  # fmt: skip
