"""The loop's one seam for compaction: what may happen to a context after a work turn.

The loop calls `Compaction.after_turn` once per work turn and adds `info` to the
trajectory; it knows nothing else about it. `loop.build_compaction` picks the component
once from `agent.summary`: self-summarisation (`agent/summary.py`, imported only then)
or `NoCompaction`, under which the context simply grows until it is full.
`RunningEpisode` is what a component may read and do to the episode in between.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from shadowrl.agent.config import AgentConfig
from shadowrl.agent.prompt import Renderer
from shadowrl.agent.state import Tokens
from shadowrl.agent.tools import ToolContext
from shadowrl.types import EpisodeEnd, Generation, Message, Step, ToolResult

# A compaction's verdict on a turn: go on as usual (None), continue in the new segment it
# started, or end the episode.
Verdict = EpisodeEnd | Literal["new_segment"] | None


@dataclass(frozen=True)
class TurnEnd:
    """A finished work turn, before its results are appended to the context."""

    conv: list[Message]  # the messages up to and including the reply
    feedback: list[Message]  # the tool results (and errors or nudge) that follow it
    generated: Sequence[int]  # the reply's token ids
    results: Sequence[ToolResult]
    more: int  # tokens appending `feedback` would add to the context


class RunningEpisode(Protocol):
    """The episode as a compaction sees it (`loop._Episode`)."""

    config: AgentConfig
    tokenizer: Any
    renderer: Renderer
    schemas: list[dict[str, Any]]
    ctx: ToolContext
    task: str
    steps: list[Step]
    history: list[Message]
    turns: int
    summaries: list[dict[str, Any]]
    last_results: list[ToolResult]

    @property
    def tokens(self) -> Tokens: ...

    def generated(self) -> int: ...

    async def generate(self, cap: int) -> Generation: ...

    def record(self, step: Step) -> None: ...

    def start_segment(self, messages: list[Message]) -> None: ...


class Compaction(Protocol):
    async def after_turn(self, episode: RunningEpisode, turn: TurnEnd) -> Verdict:
        """Act on the context after `turn`; the loop appends the feedback when None."""
        ...

    def info(self, episode: RunningEpisode) -> dict[str, Any]:
        """Counters for `Trajectory.info`."""
        ...


class NoCompaction:
    """The context grows until it is full; the trajectory records no summary."""

    async def after_turn(self, episode: RunningEpisode, turn: TurnEnd) -> Verdict:
        return None

    def info(self, episode: RunningEpisode) -> dict[str, Any]:
        # the counters `summary.summary_info` gives an episode without summaries
        return {
            "summaries": 0,
            "summary_tokens": 0,
            "degenerate_summaries": 0,
            "degenerate_kinds": {},
            "summary_texts": [],
        }
