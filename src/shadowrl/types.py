"""Core records shared by the harness, the engine, the trainer and the evaluator.

Everything that crosses a component boundary is one of these frozen records, never
a dict, so a typo is a type error rather than a silent `None` three services later.
The token-level layout (`Segment`) is what the trainer consumes: it holds exactly
the ids the model saw and produced, so training never re-tokenises text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for, already parsed from its Hermes `<tool_call>` tag."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Message:
    """One chat message in OpenAI shape; `tool_calls` only on assistant turns."""

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def to_openai(self) -> dict[str, Any]:
        """The dict a chat template or an OpenAI-compatible server expects."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out


@dataclass(frozen=True)
class SamplingParams:
    """How to decode one completion. `temperature == 0` means greedy."""

    max_new_tokens: int = 512
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    stop: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] = ()
    seed: int | None = None
    top_logprobs: int = 0  # record the k most likely alternatives of every token; 0 = off


FinishReason = Literal["stop", "length", "abort"]
TopLogprobs = tuple[tuple[int, float], ...]  # one position's (token id, logprob), best first


@dataclass(frozen=True)
class Generation:
    """What a policy returns: the new tokens, their logprobs and who produced each.

    `logprobs[i]` is the log-probability of `token_ids[i]` under the distribution it
    was sampled from (after temperature/top-p/top-k); `versions[i]` is the policy
    version of the weights that produced it (it can change mid-sequence when weights
    are swapped in flight). `top_logprobs[i]` (only if `SamplingParams.top_logprobs`
    asked for it) holds the most likely tokens of that same distribution at position i.
    `entropies[i]` is that distribution's entropy in nats (the plain softmax's for greedy
    decoding), computed in float32 on the logits that drew the token; empty from a policy
    that does not report it (scripted, remote). Tree rollouts branch on it.
    `routes[p]` (mixture-of-experts models only, else empty) holds the experts that routed
    position p of prompt + token_ids, MoE layer by layer, top-k per layer, flattened: one
    entry per position the engine ran through the model (the prompt, prefix-cache hits
    included, and every generated token but the last), so the trainer can replay them.
    """

    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    versions: tuple[int, ...]
    finish_reason: FinishReason = "stop"
    top_logprobs: tuple[TopLogprobs, ...] = ()
    entropies: tuple[float, ...] = ()
    routes: tuple[tuple[int, ...], ...] = ()


@runtime_checkable
class Policy(Protocol):
    """The only thing the agent loop needs from a model: token ids in, tokens out."""

    async def generate(self, prompt_ids: Sequence[int], sampling: SamplingParams) -> Generation:
        """Continue `prompt_ids`; must be safe to call concurrently."""
        ...


@runtime_checkable
class WeightSink(Protocol):
    """A policy whose weights can be replaced between decode steps (the inference engine).

    Blocks until the swap is done; requests in flight keep decoding and each token keeps
    the version that produced it.
    """

    def update_weights(
        self, state: Mapping[str, Any], version: int, *, delta: bool = False
    ) -> Any: ...


@dataclass(frozen=True)
class ToolResult:
    """The outcome of one tool call, as shown to the model (always bounded in size)."""

    call_id: str
    name: str
    output: str
    is_error: bool = False


@dataclass(frozen=True)
class Step:
    """One assistant turn: what it said, which calls it made, what came back.

    `entropies` is the policy's per-token entropy of the turn's generation
    (`Generation.entropies`; empty when the policy reports none). Float measurements
    that differ in rounding between a full prefill and incremental decoding, they are
    left out of equality: two steps are equal when the same thing happened.
    """

    text: str
    tool_calls: tuple[ToolCall, ...]
    results: tuple[ToolResult, ...]
    parse_errors: tuple[str, ...] = ()
    num_generated: int = 0
    entropies: tuple[float, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class Segment:
    """One contiguous token sequence the model saw, the unit of training.

    `loss_mask[i]` is True only for tokens the model generated; prompt, tool output
    and template tokens are False. `logprobs` and `versions` are meaningful where the
    mask is True (0.0 and -1 elsewhere). A self-summarised trajectory is a chain of
    several segments that all share the chain's reward. `routes` (mixture of experts
    only) holds the rollout's experts for the first len(routes) positions, as in
    `Generation.routes`, for the trainer to replay.
    """

    token_ids: tuple[int, ...]
    loss_mask: tuple[bool, ...]
    logprobs: tuple[float, ...]
    versions: tuple[int, ...]
    routes: tuple[tuple[int, ...], ...] = ()

    def __post_init__(self) -> None:
        n = len(self.token_ids)
        if not (len(self.loss_mask) == len(self.logprobs) == len(self.versions) == n):
            raise ValueError("Segment fields must all have the same length")
        if len(self.routes) > n:
            raise ValueError("Segment routes cover more positions than it has tokens")

    @property
    def num_generated(self) -> int:
        return sum(self.loss_mask)

    def min_version(self) -> int | None:
        """Oldest policy version among generated tokens (None if nothing generated)."""
        vs = [v for v, m in zip(self.versions, self.loss_mask, strict=True) if m]
        return min(vs) if vs else None


EpisodeEnd = Literal["submitted", "max_turns", "max_tokens", "context_full", "timeout", "error"]


@dataclass(frozen=True)
class Trajectory:
    """A whole episode: the messages, the turns and the token segments.

    `reward` is filled in by the verifier after the episode (a new record is made
    with `dataclasses.replace`, the harness never guesses a reward).
    """

    task_id: str
    messages: tuple[Message, ...]
    steps: tuple[Step, ...]
    segments: tuple[Segment, ...]
    end: EpisodeEnd
    tool_errors: int = 0
    wall_s: float = 0.0
    reward: float | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def num_generated(self) -> int:
        return sum(s.num_generated for s in self.segments)

    @property
    def num_turns(self) -> int:
        return len(self.steps)
