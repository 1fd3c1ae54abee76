"""How a policy works, not only whether it succeeds: behaviour metrics from trajectories.

Cursor tracks how RL changes the agent's habits (more searching and reading before
editing, fewer blind edits, tokens spent per solved task). These metrics are computed
from the recorded tool calls alone, so they are the same for an eval run, a training
group or a served session. Only successful calls count as reads and edits: a failed
`edit_file` changed nothing.
"""

from __future__ import annotations

import difflib
import posixpath
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, Field

from shadowrl.agent import ParsedReply
from shadowrl.types import ToolCall, ToolResult, Trajectory

READ_TOOLS = frozenset({"read_file"})
EDIT_TOOLS = frozenset({"edit_file", "write_file"})


@dataclass(frozen=True)
class EpisodeBehaviour:
    """What one episode did, as counted from its successful and failed tool calls."""

    tool_counts: dict[str, int]
    tool_calls: int
    turns: int
    edit_before_read: bool
    files_edited: frozenset[str]
    diff_lines: int
    tool_errors: int
    tokens: int
    wall_s: float
    clarifying: bool = False  # asked a question instead of acting (`asks_instead_of_acting`)


def _path(call: ToolCall) -> str | None:
    path = call.arguments.get("path")
    return posixpath.normpath(path) if isinstance(path, str) and path else None


def _changed_lines(before: str, after: str) -> int:
    """Lines added plus lines removed, as a unified diff would count them."""
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    return sum(1 for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---")))


def _edit_size(call: ToolCall) -> int:
    args = call.arguments
    if call.name == "write_file":
        return _changed_lines("", str(args.get("content", "")))
    return _changed_lines(str(args.get("old", "")), str(args.get("new", "")))


def _calls(traj: Trajectory) -> list[tuple[ToolCall, ToolResult | None]]:
    out: list[tuple[ToolCall, ToolResult | None]] = []
    for step in traj.steps:
        by_id = {r.call_id: r for r in step.results}
        out += [(call, by_id.get(call.id)) for call in step.tool_calls]
    return out


def asks_instead_of_acting(replies: Sequence[ParsedReply]) -> bool:
    """Whether an episode asked the user a question instead of working: some reply is
    prose with a '?' (no tool call, no malformed one) and no reply calls an edit tool.

    A question dodges a negative reward (a hack Cursor saw in production), so served
    sessions (`realtime/sessions.py`) and pinned-eval episodes are counted by this rule.
    """
    edited = any(c.name in EDIT_TOOLS for p in replies for c in p.calls)
    return not edited and any(not p.calls and not p.errors and "?" in p.content for p in replies)


def episode_behaviour(traj: Trajectory) -> EpisodeBehaviour:
    """Count one episode's tool use, edits and whether it edited a file it never read."""
    counts: Counter[str] = Counter()
    read: set[str] = set()
    edited: set[str] = set()
    blind = False
    diff_lines = 0
    for call, result in _calls(traj):
        counts[call.name] += 1
        path = _path(call)
        if result is None or result.is_error or path is None:
            continue
        if call.name in READ_TOOLS:
            read.add(path)
        elif call.name in EDIT_TOOLS:
            # Creating a new file with write_file needs no prior read; editing one does.
            blind |= call.name == "edit_file" and path not in read and path not in edited
            edited.add(path)
            diff_lines += _edit_size(call)
    return EpisodeBehaviour(
        tool_counts=dict(counts),
        tool_calls=sum(counts.values()),
        turns=traj.num_turns,
        edit_before_read=blind,
        files_edited=frozenset(edited),
        diff_lines=diff_lines,
        tool_errors=traj.tool_errors,
        tokens=traj.num_generated,
        wall_s=traj.wall_s,
        clarifying=asks_instead_of_acting(
            [ParsedReply(s.text.strip(), s.tool_calls, list(s.parse_errors)) for s in traj.steps]
        ),
    )


class Behaviour(BaseModel):
    """Behaviour metrics aggregated over the episodes of a run."""

    episodes: int = Field(description="Episodes aggregated.")
    tool_mix: dict[str, float] = Field(description="Share of all tool calls per tool name.")
    tool_calls_per_turn: float = Field(description="Tool calls per assistant turn.")
    edit_before_read_rate: float = Field(
        description="Share of episodes that edited an existing file before reading it."
    )
    files_edited: float = Field(description="Distinct files edited per episode.")
    diff_lines: float = Field(description="Changed lines (added + removed) per episode.")
    tokens_per_resolved: float | None = Field(
        description="Generated tokens of all episodes / resolved episodes (None if none resolved)."
    )
    turns: float = Field(description="Assistant turns per episode.")
    tool_errors: float = Field(description="Failed or malformed tool calls per episode.")
    wall_s: float = Field(description="Wall-clock seconds per episode.")


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def summarize_behaviour(trajs: Sequence[Trajectory], resolved: Sequence[bool]) -> Behaviour:
    """Aggregate `episode_behaviour` over episodes; `resolved[i]` grades `trajs[i]`."""
    if len(trajs) != len(resolved):
        raise ValueError("trajs and resolved differ in length")
    eps = [episode_behaviour(t) for t in trajs]
    counts: Counter[str] = Counter()
    for e in eps:
        counts.update(e.tool_counts)
    total_calls = sum(counts.values())
    total_turns = sum(e.turns for e in eps)
    n_resolved = sum(resolved)
    return Behaviour(
        episodes=len(eps),
        tool_mix={k: v / total_calls for k, v in sorted(counts.items())},
        tool_calls_per_turn=total_calls / total_turns if total_turns else 0.0,
        edit_before_read_rate=_mean([float(e.edit_before_read) for e in eps]),
        files_edited=_mean([len(e.files_edited) for e in eps]),
        diff_lines=_mean([e.diff_lines for e in eps]),
        tokens_per_resolved=sum(e.tokens for e in eps) / n_resolved if n_resolved else None,
        turns=_mean([e.turns for e in eps]),
        tool_errors=_mean([e.tool_errors for e in eps]),
        wall_s=_mean([e.wall_s for e in eps]),
    )
