"""`shadowrl replay <trace id> --branch K --from-turn N`: K fresh continuations, side by side.

What the real-time loop's branching stage does to a session users pushed back on, for a
person looking at one session: the served agent session is rebuilt right before turn N
(`realtime/rebuild.py`: its workspace re-copied, the recorded calls of turns 1..N-1
re-run and checked against the recorded outputs and workspace hashes; an unfaithful
rebuild is refused with its reason, exit 1), then continued K times at once by the
policy (`--model`, else the recorded one, as plain `replay` finds it), each in its own
fork, with live tools. Each continuation is judged as the loop judges it (the
workspace's own tests through the grader, `realtime/judge.py`; a workspace without
tests shows no score), and the K diffs against the session's starting workspace are
printed side by side, one column each, headed by the continuation's score, end and
turns.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shadowrl.commands.config import Config
from shadowrl.commands.errors import UsageError

if TYPE_CHECKING:
    from shadowrl.commands.replay_policy import RecordedWeights
    from shadowrl.realtime.rebuild import Rebuilt
    from shadowrl.sandbox.base import Sandbox
    from shadowrl.serve.store.queries import SessionView
    from shadowrl.types import Trajectory


@dataclass(frozen=True)
class Branch:
    """One continuation as shown: its episode, its diff, and its score (None: not judged)."""

    trajectory: Trajectory
    diff: str
    score: float | None


def replay_branches(view: SessionView, weights: RecordedWeights, args: Any, config: Config) -> int:
    from shadowrl.realtime.rebuild import Unfaithful, rebuild
    from shadowrl.serve.replay_record import served_agent_config

    k, turn = args.branch, args.from_turn - 1
    if view.session.kind != "agent":
        raise UsageError(
            f"--branch needs an agent session; {view.session.id} is a {view.session.kind} session"
        )
    if k < 1 or not 0 <= turn < len(view.steps):
        raise UsageError(
            f"--branch K needs K >= 1 and --from-turn in 1..{len(view.steps)} "
            f"(the session has {len(view.steps)} turns)"
        )
    agent = served_agent_config(view, config.agent)
    point = rebuild(view, turn, weights.tokenizer(), agent, config.sandbox)
    if isinstance(point, Unfaithful):
        where = "its workspace" if point.step < 0 else f"turn {point.step + 1}"
        print(f"session {view.session.id} cannot be rebuilt before turn {args.from_turn} "
              f"as recorded ({where}): {point.reason}")  # fmt: skip
        return 1
    try:
        branches = asyncio.run(_branches(point, weights, k, config))
    finally:
        point.close()
    show(view.session.id, args.from_turn, weights.label(_version(point, turn)), branches)
    return 0


def _version(point: Rebuilt, turn: int) -> int:
    """The policy version that generated turn `turn` as recorded (0 when unknown)."""
    from shadowrl.agent.record import generated_runs

    segs = point.record.record.trajectory.segments
    runs = generated_runs(segs)
    if turn >= len(runs):
        return 0
    seg, start, _ = runs[turn]
    return max(segs[seg].versions[start], 0)


async def _branches(
    point: Rebuilt, weights: RecordedWeights, k: int, config: Config
) -> list[Branch]:
    from shadowrl.realtime.judge import NotJudged, SessionTests

    judge = SessionTests(Path(config.tasks.cache_dir), config.sandbox, config.tasks.shaping)
    scorer = await asyncio.to_thread(judge.scorer, point)
    if isinstance(scorer, NotJudged):
        print(f"not judged: {scorer.reason}")
    async with weights.policy(_version(point, point.turn)) as factory:
        policy = factory(None, None)  # type: ignore[arg-type]  # a served session has no task
        return list(await asyncio.gather(*(
            _one(point, policy, factory.tokenizer, None if isinstance(scorer, NotJudged) else scorer)
            for _ in range(k)
        )))  # fmt: skip


async def _one(point: Rebuilt, policy: Any, tokenizer: Any, scorer: Any) -> Branch:
    from shadowrl.realtime.continuations import continuation
    from shadowrl.serve import workspaces

    seen: dict[str, Any] = {}

    def score(sandbox: Sandbox) -> float:
        snap = workspaces.Snapshot(point.copy, point.copy, None, "")
        seen["diff"] = workspaces.diff_of(workspaces.changes(sandbox, snap), snap)
        seen["score"] = None if scorer is None else scorer(sandbox)
        return float(seen["score"] or 0.0)

    traj = await continuation(point, policy, tokenizer, score)
    return Branch(traj, seen["diff"], seen["score"])


def show(session: str, turn: int, policy: str, branches: list[Branch]) -> None:
    """The K diffs in columns, each headed by its score, end and turns."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    console.rule(f"[bold]{session} · {len(branches)} branches from turn {turn} · {policy}")
    table = Table(show_lines=True, expand=True)
    for i, b in enumerate(branches, 1):
        score = "not judged" if b.score is None else f"score {b.score:g}"
        head = f"#{i} · {score} · {b.trajectory.end} · {len(b.trajectory.steps)} turns in all"
        table.add_column(head, ratio=1)  # equal columns
    table.add_row(*(Text(b.diff or "(no change)") for b in branches))
    console.print(table)
    judged = [b.score for b in branches if b.score is not None]
    if judged:
        print(f"scores: {judged}; " + ("they differ" if len(set(judged)) > 1 else "all equal"))
