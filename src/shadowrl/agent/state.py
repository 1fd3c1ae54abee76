"""The token state of an episode: its contexts (segments) and where it stopped.

`Tokens` is one context as the model saw it, grown in place; `Chain` is the episode's
contexts in order (a summary closes one and opens the next); `EpisodeState` is what a
later `run_episode` needs to continue a finished episode (serve's follow-up messages).
`EpisodeCheckpoint` freezes a running episode between two turns (state + sandbox
snapshot + budgets used) so that any number of branches can continue it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from shadowrl.sandbox import Sandbox, Snapshot
from shadowrl.types import Generation, Message, Segment, Step, ToolResult


@dataclass
class Tokens:
    """One context's token sequence and its per-token training fields."""

    ids: list[int] = field(default_factory=list)
    mask: list[bool] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    num_generated: int = 0
    # MoE: each position's experts, the first routing the engine reported for it (a
    # later call that recomputed a position does not replace the one its tokens saw).
    routes: list[tuple[int, ...]] = field(default_factory=list)

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
        self.routes += gen.routes[len(self.routes) :]

    def segment(self) -> Segment:
        return Segment(
            tuple(self.ids), tuple(self.mask), tuple(self.logprobs), tuple(self.versions),
            tuple(self.routes),
        )  # fmt: skip

    def copy(self) -> Tokens:
        return Tokens(
            [*self.ids], [*self.mask], [*self.logprobs], [*self.versions], self.num_generated,
            [*self.routes],
        )  # fmt: skip


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

    def copy(self) -> Chain:
        return Chain(self.current.copy(), [*self.done])


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

    def copy(self) -> EpisodeState:
        """An independent copy (the loop grows lists and tokens in place)."""
        return replace(
            self,
            messages=[*self.messages],
            history=[*self.history],
            steps=[*self.steps],
            chain=self.chain.copy(),
            summaries=[dict(s) for s in self.summaries],
            last_results=[*self.last_results],
        )


@dataclass(frozen=True)
class EpisodeCheckpoint:
    """A running episode frozen between two turns, to branch from or to replay.

    `state.tokens` ends with the generation prompt of the next turn, so a continuation
    (`run_episode(..., start=checkpoint)`) generates straight away: no message is added
    and nothing is re-rendered. Budgets continue: `turns`, `generated` and `elapsed_s`
    are what the episode had used. The snapshot stays valid until `release()`; each
    `fork()` is an independent sandbox in the state the workspace had at this turn.
    """

    state: EpisodeState
    snapshot: Snapshot
    turns: int  # policy calls so far (summaries included), against max_turns
    generated: int  # tokens generated so far, against max_episode_tokens
    elapsed_s: float  # wall time used so far, against episode_timeout_s

    def fork(self) -> Sandbox:
        return self.snapshot.fork()

    def release(self) -> None:
        self.snapshot.release()


@dataclass
class Checkpoints:
    """Which turns to freeze, and the checkpoints taken.

    `when(steps so far)` freezes the episode at a turn boundary; `keep(generation)`, if
    given, then decides on the turn generated from there (the entropy rule reads the
    policy's entropies) and a rejected checkpoint is released at once. `on_taken` is
    called with each kept checkpoint as soon as it is kept, while the episode runs on
    (tree rollouts start its branches there). The caller owns `taken` and releases each
    checkpoint's snapshot when done.
    """

    when: Callable[[Sequence[Step]], bool]
    keep: Callable[[Generation], bool] | None = None
    on_taken: Callable[[EpisodeCheckpoint], None] | None = None
    taken: list[EpisodeCheckpoint] = field(default_factory=list)

    def decide(self, checkpoint: EpisodeCheckpoint, gen: Generation) -> None:
        """Keep `checkpoint` (taken before `gen`) or release it."""
        if self.keep is not None and not self.keep(gen):
            checkpoint.release()
            return
        self.taken.append(checkpoint)
        if self.on_taken is not None:
            self.on_taken(checkpoint)
