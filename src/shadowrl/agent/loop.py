"""The agent loop: one episode of model ↔ tools, identical for serve, train and eval.

    prompt ids ──► policy.generate ──► generated ids (appended verbatim, loss_mask=True)
        ▲                                   │ decode + parse <tool_call>s
        │                                   ▼
    template delta of the tool results ◄── run calls (read-only ones concurrently)
        (appended, loss_mask=False)

The loop needs only the `Policy` protocol, a tokenizer (for its chat template) and
a `Sandbox`. It never re-tokenises what the model produced, so the `Segment` it
returns holds exactly the ids the model saw and generated; the trainer uses them
as they are. Every malformed call gets a precise error back and is counted; a
reply without any call gets a short nudge; `submit` or a budget ends the episode.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from shadowrl.agent.config import AgentConfig
from shadowrl.agent.parsing import ParsedReply, parse_tool_calls
from shadowrl.agent.prompt import Renderer
from shadowrl.agent.tools import ToolContext, ToolSet
from shadowrl.sandbox.base import Sandbox
from shadowrl.search import SemanticIndex
from shadowrl.types import (
    EpisodeEnd,
    Generation,
    Message,
    Policy,
    SamplingParams,
    Segment,
    Step,
    ToolCall,
    ToolResult,
    Trajectory,
)

NUDGE = "No tool call found. Call a tool as <tool_call>{...}</tool_call>, or submit when done."
CUT_OFF = "Your reply was cut off at the token limit. Be brief and call one tool at a time."


@dataclass
class _Tokens:
    """The growing token sequence of the episode and its per-token training fields."""

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
class EpisodeState:
    """Where an episode stopped, so that a later `run_episode` can continue it.

    Serve's multi-turn agent sessions pass one in: empty, the episode starts afresh;
    afterwards it holds the conversation, and passing it again with a user message as
    the task continues from the same tokens (nothing re-rendered). Budgets (turns,
    generated tokens, time) count per call; the context window counts the whole.
    """

    messages: list[Message] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    tokens: _Tokens = field(default_factory=_Tokens)
    counters: tuple[int, int, int] = (0, 0, 0)  # tool_errors, tool_failures, nudges
    last_generated: tuple[int, ...] = ()
    generated_end: int = 0  # len(tokens.ids) right after the last generation


class _Episode:
    """Mutable state of one run; `run_episode` freezes it into a `Trajectory`."""

    def __init__(
        self,
        policy: Policy,
        sandbox: Sandbox,
        task: str,
        tokenizer: Any,
        config: AgentConfig,
        tools: ToolSet,
        index: SemanticIndex | None,
        on_step: Callable[[Step], None] | None,
        state: EpisodeState | None = None,
    ):
        self.policy, self.tokenizer, self.config, self.tools = policy, tokenizer, config, tools
        self.on_step = on_step
        self.schemas = tools.schemas()
        self.renderer = Renderer(tokenizer, self.schemas)
        deadline = time.monotonic() + config.episode_timeout_s
        self.ctx = ToolContext(sandbox, config, index=index, deadline=deadline)
        self.messages = [Message("system", config.system_prompt), Message("user", task)]
        self.steps: list[Step] = []
        self.tokens = _Tokens()
        self.tokens.add_context(self.renderer.prompt_ids(self.messages))
        self.tool_errors = self.tool_failures = self.nudges = 0
        self.last_gen: tuple[int, ...] = ()
        self.gen_end = 0
        if state is not None and state.messages:
            self._resume(state, task)
        self.base_generated = self.tokens.num_generated

    def _resume(self, state: EpisodeState, user: str) -> None:
        """Continue `state`'s conversation with a user message: the tokens after the last
        generation (results and a generation prompt) are re-rendered with it appended;
        a generation cut off before its turn was recorded (timeout, abort) is dropped."""
        self.messages, self.steps = [*state.messages, Message("user", user)], [*state.steps]
        self.tool_errors, self.tool_failures, self.nudges = state.counters
        self.last_gen, self.gen_end = state.last_generated, state.generated_end
        t, end = state.tokens, state.generated_end
        self.tokens = _Tokens(t.ids[:end], t.mask[:end], t.logprobs[:end], t.versions[:end])
        self.tokens.num_generated = sum(self.tokens.mask)
        replies = [i for i, m in enumerate(self.messages) if m.role == "assistant"]
        if not replies:  # it ended before the model said anything
            self.tokens = _Tokens()
            self.tokens.add_context(self.renderer.prompt_ids(self.messages))
            return
        conv, new = self.messages[: replies[-1] + 1], self.messages[replies[-1] + 1 :]
        self.tokens.add_context(self.renderer.continuation_ids(conv, new, self.last_gen))

    def save(self, state: EpisodeState) -> None:
        state.messages, state.steps, state.tokens = self.messages, self.steps, self.tokens
        state.counters = (self.tool_errors, self.tool_failures, self.nudges)
        state.last_generated, state.generated_end = self.last_gen, self.gen_end

    async def run(self) -> EpisodeEnd:
        cfg = self.config
        for turn in range(len(self.steps), len(self.steps) + cfg.max_turns):
            left = cfg.max_episode_tokens - (self.tokens.num_generated - self.base_generated)
            room = cfg.max_context_tokens - len(self.tokens.ids)
            if min(left, room) <= 0:
                return "max_tokens" if left <= 0 else "context_full"
            gen = await self.policy.generate(
                tuple(self.tokens.ids), self._sampling(min(left, room))
            )
            self.tokens.add_generated(gen)
            if gen.finish_reason == "abort":
                return "error"
            text = self.tokenizer.decode(gen.token_ids, skip_special_tokens=True)
            reply = parse_tool_calls(text, self.schemas, id_prefix=f"call_{turn}")
            results = await self._run_calls(reply.calls)
            assistant = Message("assistant", reply.content, reply.calls)
            feedback = self._feedback(reply, results, cut_off=gen.finish_reason == "length")
            self._record(
                Step(text, reply.calls, tuple(results), tuple(reply.errors), len(gen.token_ids))
            )
            conv = [*self.messages, assistant]
            self.messages = [*conv, *feedback]
            self.last_gen, self.gen_end = tuple(gen.token_ids), len(self.tokens.ids)
            if self.ctx.submitted:
                return "submitted"
            more = self.renderer.continuation_ids(conv, feedback, gen.token_ids)
            if len(self.tokens.ids) + len(more) >= cfg.max_context_tokens:
                return "context_full"
            self.tokens.add_context(more)
        return "max_turns"

    def _sampling(self, max_new_tokens: int) -> SamplingParams:
        return SamplingParams(
            max_new_tokens=min(max_new_tokens, self.config.max_new_tokens),
            temperature=self.config.temperature,
            top_p=self.config.top_p,
            stop_token_ids=self.renderer.stop_token_ids,
        )

    async def _run_calls(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        """Results in call order; read-only runs go concurrently, a mutating call is a barrier."""
        results: list[ToolResult] = []
        batch: list[ToolCall] = []
        for call in [*calls, None]:
            if call is not None and self.tools.is_read_only(call.name):
                batch.append(call)
                continue
            results += await asyncio.gather(
                *(asyncio.to_thread(self.tools.execute, self.ctx, c) for c in batch)
            )
            batch = []
            if call is not None:
                results.append(await asyncio.to_thread(self.tools.execute, self.ctx, call))
        return results

    def _feedback(
        self, reply: ParsedReply, results: list[ToolResult], cut_off: bool
    ) -> list[Message]:
        """The messages the model sees next: results in call order, then errors or a nudge."""
        out = [Message("tool", r.output, tool_call_id=r.call_id, name=r.name) for r in results]
        if reply.errors:
            out.append(Message("tool", "Error: " + "\n".join(reply.errors)))
        elif not reply.calls:
            self.nudges += 1
            out.append(Message("user", CUT_OFF if cut_off else NUDGE))
        return out

    def _record(self, step: Step) -> None:
        self.steps.append(step)
        self.tool_errors += len(step.parse_errors)
        self.tool_failures += sum(r.is_error for r in step.results)
        if self.on_step is not None:
            self.on_step(step)

    def trajectory(self, end: EpisodeEnd, task_id: str, wall_s: float) -> Trajectory:
        info = {
            "nudges": self.nudges,
            "tool_failures": self.tool_failures,
            "prompt_tokens": len(self.tokens.ids) - self.tokens.num_generated,
        }
        return Trajectory(
            task_id=task_id,
            messages=tuple(self.messages),
            steps=tuple(self.steps),
            segments=(self.tokens.segment(),),
            end=end,
            tool_errors=self.tool_errors,
            wall_s=wall_s,
            info=info,
        )


async def run_episode(
    policy: Policy,
    sandbox: Sandbox,
    task: str,
    *,
    tokenizer: Any,
    config: AgentConfig,
    tools: ToolSet | None = None,
    task_id: str = "",
    index: SemanticIndex | None = None,
    on_step: Callable[[Step], None] | None = None,
    state: EpisodeState | None = None,
) -> Trajectory:
    """Run one episode of `policy` on `task` inside `sandbox` and return what happened.

    `index` is the prepared snapshot's semantic index (built lazily if None);
    `on_step` is called after every turn (the CLI prints the transcript with it).
    `state` (see `EpisodeState`) continues an earlier episode, `task` being the user's
    next message, and is left holding where this one ended.
    """
    episode = _Episode(
        policy, sandbox, task, tokenizer, config,
        tools or ToolSet.from_names(config.tools), index, on_step, state,
    )  # fmt: skip
    start = time.monotonic()
    try:
        async with asyncio.timeout(config.episode_timeout_s):
            end = await episode.run()
    except TimeoutError:
        end = "timeout"
    if state is not None:
        episode.save(state)
    return episode.trajectory(end, task_id, time.monotonic() - start)
