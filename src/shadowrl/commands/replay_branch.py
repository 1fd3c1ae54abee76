"""`shadowrl replay <trace id> --branch K --from-turn N`: K fresh continuations, side by side.

What the real-time loop's branching stage does to a session users pushed back on, for a
person looking at one session (`realtime/branch_view.py`): the served agent session is
rebuilt right before turn N (its workspace re-copied, the recorded calls of turns
1..N-1 re-run and checked against the recorded outputs and workspace hashes; an
unfaithful rebuild is refused with its reason, exit 1), then continued K times at once
by the policy (`--model`, else the recorded one, as plain `replay` finds it), each in
its own fork, with live tools. Each continuation is judged as the loop judges it (the
workspace's own tests through the grader, `realtime/judge.py`; a workspace without
tests shows no score), and the K diffs against the session's starting workspace are
printed side by side, one column each, headed by the score, the end and the turns.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shadowrl.commands.config import Config
from shadowrl.commands.errors import UsageError

if TYPE_CHECKING:
    from shadowrl.commands.replay_policy import RecordedWeights
    from shadowrl.realtime import Branches, Rebuilt
    from shadowrl.serve.store.queries import SessionView


def replay_branches(view: SessionView, weights: RecordedWeights, args: Any, config: Config) -> int:
    from shadowrl.realtime import Unfaithful, rebuilt

    if args.branch < 1:
        raise UsageError("--branch K needs K >= 1")
    try:
        point = rebuilt(view, args.from_turn - 1, weights.tokenizer(), config.agent, config.sandbox)
    except ValueError as e:
        raise UsageError(f"--from-turn: {e}") from e
    if isinstance(point, Unfaithful):
        where = "its workspace" if point.step < 0 else f"turn {point.step + 1}"
        print(f"session {view.session.id} cannot be rebuilt before turn {args.from_turn} "
              f"as recorded ({where}): {point.reason}")  # fmt: skip
        return 1
    try:
        shown = asyncio.run(_branches(point, weights, args.branch, config))
    finally:
        point.close()
    show(shown, args.from_turn, weights.label(_version(point)))
    return 0


def _version(point: Rebuilt) -> int:
    from shadowrl.realtime import recorded_version

    return recorded_version(point)


async def _branches(point: Rebuilt, weights: RecordedWeights, k: int, config: Config) -> Branches:
    from shadowrl.realtime import SessionTests, branches

    judge = SessionTests(Path(config.tasks.cache_dir), config.sandbox, config.tasks.shaping)
    async with weights.policy(_version(point)) as factory:
        policy = factory(None, None)  # type: ignore[arg-type]  # a served session has no task
        return await branches(point, policy, factory.tokenizer, k, judge)


def show(shown: Branches, turn: int, policy: str) -> None:
    """The K diffs in equal columns, each headed by its score, end and turns."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console, found = Console(), shown.branches
    console.rule(f"[bold]{shown.session_id} · {len(found)} branches from turn {turn} · {policy}")
    if shown.not_judged:
        print(f"not judged: {shown.not_judged}")
    table = Table(show_lines=True, expand=True)
    for i, b in enumerate(found, 1):
        score = "not judged" if b.score is None else f"score {b.score:g}"
        table.add_column(f"#{i} · {score} · {b.end} · {b.turns} turns in all", ratio=1)
    table.add_row(*(Text(b.diff or "(no change)") for b in found))
    console.print(table)
    judged = [b.score for b in found if b.score is not None]
    if judged:
        print(f"scores: {judged}; " + ("they differ" if len(set(judged)) > 1 else "all equal"))
