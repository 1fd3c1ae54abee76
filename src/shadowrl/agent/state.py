"""The token state of an episode: its contexts (segments) and where it stopped.

`Tokens` is one context as the model saw it, grown in place; `Chain` is the episode's
contexts in order (a summary closes one and opens the next); `EpisodeState` is what a
later `run_episode` needs to continue a finished episode (serve's follow-up messages).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from shadowrl.types import Generation, Message, Segment, Step, ToolResult


@dataclass
class Tokens:
    """One context's token sequence and its per-token training fields."""

    ids: list[int] = field(default_factory=list)
    mask: list[bool] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    num_generated: int = 0

    def add_context(self, ids: Sequence[int]) -> None:
        self.ids += ids
        self.mask += [False] * len(ids)
        self.logprobs += [0.0] * len(ids)
        self.versions += [-1] * len(ids)

    def add_generated(self, gen: Generation) -> None:
        self.ids += gen.token_ids
        self.mask += [True] * len(gen.token_ids)
        self.logprobs += gen.logprobs
        self.versions += gen.versions
        self.num_generated += len(gen.token_ids)

    def segment(self) -> Segment:
        return Segment(
            tuple(self.ids), tuple(self.mask), tuple(self.logprobs), tuple(self.versions)
        )


@dataclass
class Chain:
    """The episode's token state: the finished segments, then the one being filled.

    A summary closes `current` and starts a new context; a continued episode is the
    same chain with more segments, so budgets count over the whole chain.
    """

    current: Tokens
    done: list[Segment] = field(default_factory=list)

    @property
    def num_generated(self) -> int:
        return sum(s.num_generated for s in self.done) + self.current.num_generated

    def start_segment(self, prompt_ids: Sequence[int]) -> None:
        self.done.append(self.current.segment())
        self.current = Tokens()
        self.current.add_context(prompt_ids)

    def segments(self) -> tuple[Segment, ...]:
        return (*self.done, self.current.segment())


@dataclass
class EpisodeState:
    """Where an episode stopped, so that a later `run_episode` can continue it.

    Serve's multi-turn agent sessions pass one in: empty, the episode starts afresh;
    afterwards it holds the conversation, and passing it again with a user message as
    the task continues from the same tokens (nothing re-rendered), summarised segments
    included. Budgets (turns, generated tokens, time) count per call; the context
    window counts the whole current segment.
    """

    task: str = ""  # the first user message: every new segment restates it
    messages: list[Message] = field(default_factory=list)  # the current segment's
    history: list[Message] = field(default_factory=list)  # the finished segments'
    steps: list[Step] = field(default_factory=list)
    chain: Chain = field(default_factory=lambda: Chain(Tokens()))
    counters: tuple[int, int, int] = (0, 0, 0)  # tool_errors, tool_failures, nudges
    summaries: list[dict[str, Any]] = field(default_factory=list)
    last_results: list[ToolResult] = field(default_factory=list)
    last_generated: tuple[int, ...] = ()
    generated_end: int = 0  # len(chain.current.ids) right after the last generation

    @property
    def tokens(self) -> Tokens:
        """The current segment's tokens (the whole conversation when it never summarised)."""
        return self.chain.current
