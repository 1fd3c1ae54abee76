"""The agent loop: one episode of model ↔ tools, identical for serve, train and eval.

    prompt ids ──► policy.generate ──► generated ids (appended verbatim, loss_mask=True)
        ▲                                   │ decode + parse <tool_call>s
        │                                   ▼
    template delta of the tool results ◄── run calls (read-only ones concurrently)
        (appended, loss_mask=False)

The loop needs only the `Policy` protocol, a tokenizer (for its chat template) and
a `Sandbox`. It never re-tokenises what the model produced, so each `Segment` it
returns holds exactly the ids the model saw and generated; the trainer uses them
as they are. Every malformed call gets a precise error back and is counted; a
reply without any call gets a short nudge; `submit` or a budget ends the episode.

After each work turn the episode's `Compaction` (`agent/compaction.py`, built once
from the config) may end the context and start a new segment: with `agent.summary`
on, self-summarisation (`agent/summary.py`) makes an episode a chain of segments
sharing one reward; off, the context grows until it is full.

`checkpoints=` freezes the episode between turns (`EpisodeCheckpoint`: tokens, messages,
counters, budgets used, a sandbox snapshot) and `start=` continues one, mid-episode:
tree rollouts branch this way and `shadowrl replay` restarts a recorded turn.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from shadowrl.agent.compaction import Compaction, NoCompaction, TurnEnd
from shadowrl.agent.config import AgentConfig
from shadowrl.agent.parsing import ParsedReply, parse_tool_calls
from shadowrl.agent.prompt import Renderer
from shadowrl.agent.state import Chain, Checkpoints, EpisodeCheckpoint, EpisodeState, Tokens
from shadowrl.agent.tools import ToolContext, ToolSet
from shadowrl.sandbox import Sandbox
from shadowrl.search import SemanticIndex
from shadowrl.types import (
    EpisodeEnd,
    Generation,
    Message,
    Policy,
    SamplingParams,
    Step,
    ToolCall,
    ToolResult,
    Trajectory,
)

NUDGE = "No tool call found. Call a tool as <tool_call>{...}</tool_call>, or submit when done."
CUT_OFF = "Your reply was cut off at the token limit. Be brief and call one tool at a time."


def feedback_messages(
    reply: ParsedReply, results: Sequence[ToolResult], cut_off: bool
) -> list[Message]:
    """The messages the model sees after a reply: results in call order, then errors or a
    nudge (also how `serve` rebuilds a recorded session's messages for replay)."""
    out = [Message("tool", r.output, tool_call_id=r.call_id, name=r.name) for r in results]
    if reply.errors:
        out.append(Message("tool", "Error: " + "\n".join(reply.errors)))
    elif not reply.calls:
        out.append(Message("user", CUT_OFF if cut_off else NUDGE))
    return out


def build_compaction(config: AgentConfig) -> Compaction:
    """The episode's compaction, from `agent.summary` (its module is imported only when on)."""
    if not config.summary.enabled:
        return NoCompaction()
    from shadowrl.agent.summary import Summariser

    return Summariser(config)


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
    ):
        self.policy, self.tokenizer, self.config, self.tools = policy, tokenizer, config, tools
        self.task, self.on_step = task, on_step
        self.schemas = tools.schemas()
        self.renderer = Renderer(tokenizer, self.schemas)
        self.started = time.monotonic()
        deadline = self.started + config.episode_timeout_s
        self.ctx = ToolContext(sandbox, config, index=index, deadline=deadline)
        self.messages = [Message("system", config.system_prompt), Message("user", task)]
        self.history: list[Message] = []  # messages of the finished segments
        self.steps: list[Step] = []
        self.chain = Chain(Tokens())
        self.chain.current.add_context(self.renderer.prompt_ids(self.messages))
        self.tool_errors = self.tool_failures = self.nudges = self.turns = 0
        self.last_results: list[ToolResult] = []  # carried into the next segment
        self.summaries: list[dict[str, Any]] = []  # the compaction's notes
        self.compaction = build_compaction(config)
        self.last_gen: tuple[int, ...] = ()
        self.gen_end = 0
        self.base_generated = self.start_turns = 0
        self.checkpoints: Checkpoints | None = None  # turns to freeze at (tree rollouts)

    def _load(self, state: EpisodeState) -> None:
        self.task, self.messages, self.steps = state.task, state.messages, state.steps
        self.history, self.summaries = state.history, state.summaries
        self.tool_errors, self.tool_failures, self.nudges = state.counters
        self.chain, self.last_results = state.chain, state.last_results
        self.last_gen, self.gen_end = state.last_generated, state.generated_end

    def restore(self, cp: EpisodeCheckpoint) -> None:
        """Continue `cp` exactly where it stopped: its tokens end with a generation prompt;
        its budgets (turns, tokens, time) count on."""
        self._load(cp.state.copy())
        self.turns = self.start_turns = cp.turns
        self.base_generated = self.chain.num_generated - cp.generated
        self.started = time.monotonic() - cp.elapsed_s
        self.ctx.deadline = self.started + self.config.episode_timeout_s

    def checkpoint(self) -> EpisodeCheckpoint:
        state = EpisodeState()
        self.save(state)
        return EpisodeCheckpoint(
            state.copy(), self.ctx.sandbox.snapshot(), self.turns, self.generated(),
            time.monotonic() - self.started,
        )  # fmt: skip

    def resume(self, state: EpisodeState) -> None:
        """Continue `state`'s conversation with the task as the user's next message: the
        tokens after the last generation (results and a generation prompt) are re-rendered
        with it appended; a generation cut off before its turn was recorded (timeout,
        abort) is dropped. Budgets start afresh."""
        user = self.task
        self._load(state.copy())  # the loop grows what it holds in place: never the caller's
        self.task = self.task or user
        self.messages.append(Message("user", user))
        self._continue_tokens()
        self.base_generated = self.chain.num_generated

    def _continue_tokens(self) -> None:
        """The current segment's tokens up to the last generation, then the new messages."""
        t, end = self.tokens, self.gen_end
        current = Tokens(t.ids[:end], t.mask[:end], t.logprobs[:end], t.versions[:end])
        current.num_generated, current.routes = sum(current.mask), t.routes[:end]
        self.chain.current = current
        replies = [i for i, m in enumerate(self.messages) if m.role == "assistant"]
        if not replies:  # the segment ended before the model said anything in it
            self.chain.current = Tokens()
            self.tokens.add_context(self.renderer.prompt_ids(self.messages))
            return
        conv, new = self.messages[: replies[-1] + 1], self.messages[replies[-1] + 1 :]
        self.tokens.add_context(self.renderer.continuation_ids(conv, new, self.last_gen))

    def save(self, state: EpisodeState) -> None:
        state.task, state.messages = self.task, self.messages
        state.history, state.steps = self.history, self.steps
        state.chain, state.summaries, state.last_results = (
            self.chain, self.summaries, self.last_results,
        )  # fmt: skip
        state.counters = (self.tool_errors, self.tool_failures, self.nudges)
        state.last_generated, state.generated_end = self.last_gen, self.gen_end

    def generated(self) -> int:
        """Tokens generated in this call (a continued episode's budget starts afresh)."""
        return self.chain.num_generated - self.base_generated

    @property
    def tokens(self) -> Tokens:
        return self.chain.current

    def _room(self, cap: int) -> int:
        left = self.config.max_episode_tokens - self.generated()
        return min(left, self.config.max_context_tokens - len(self.tokens.ids), cap)

    async def run(self) -> EpisodeEnd:
        cfg = self.config
        while self.turns < cfg.max_turns:
            if self._room(cfg.max_new_tokens) <= 0:
                left = cfg.max_episode_tokens - self.generated()
                return "max_tokens" if left <= 0 else "context_full"
            gen = await self._generate_from_boundary(cfg.max_new_tokens)
            if gen.finish_reason == "abort":
                return "error"
            text = self.tokenizer.decode(gen.token_ids, skip_special_tokens=True)
            reply = parse_tool_calls(text, self.schemas, id_prefix=f"call_{len(self.steps)}")
            results = await self._run_calls(reply.calls)
            assistant = Message("assistant", reply.content, reply.calls)
            feedback = self._feedback(reply, results, cut_off=gen.finish_reason == "length")
            calls, errors = tuple(results), tuple(reply.errors)
            self.record(Step(text, reply.calls, calls, errors, len(gen.token_ids), gen.entropies))
            conv = [*self.messages, assistant]
            self.messages = [*conv, *feedback]
            self.last_gen, self.gen_end = tuple(gen.token_ids), len(self.tokens.ids)
            if self.ctx.submitted:
                return "submitted"
            more = self.renderer.continuation_ids(conv, feedback, gen.token_ids)
            turn = TurnEnd(conv, feedback, gen.token_ids, results, len(more))
            if (verdict := await self.compaction.after_turn(self, turn)) is not None:
                if verdict == "new_segment":
                    continue
                return verdict
            if len(self.tokens.ids) + len(more) >= cfg.max_context_tokens:
                return "context_full"
            self.tokens.add_context(more)
        return "max_turns"

    async def _generate_from_boundary(self, cap: int) -> Generation:
        """A work turn's generation; at a boundary `checkpoints.when` accepts, the state
        before it is frozen first and kept or released once the turn is generated."""
        cps = self.checkpoints
        if cps is None or self.turns <= self.start_turns or not cps.when(self.steps):
            return await self.generate(cap)
        checkpoint = self.checkpoint()
        try:
            gen = await self.generate(cap)
        except BaseException:  # cancelled or timed out mid-turn: nobody will branch from it
            checkpoint.release()
            raise
        cps.decide(checkpoint, gen)
        return gen

    async def generate(self, cap: int) -> Generation:
        gen = await self.policy.generate(tuple(self.tokens.ids), self._sampling(self._room(cap)))
        self.tokens.add_generated(gen)
        self.turns += 1
        return gen

    def start_segment(self, messages: list[Message]) -> None:
        """Close the current context and open a new one on `messages` (a compaction's)."""
        self.messages = messages
        self.chain.start_segment(self.renderer.prompt_ids(messages))
        self.last_gen, self.gen_end = (), 0

    def _sampling(self, max_new_tokens: int) -> SamplingParams:
        return SamplingParams(
            max_new_tokens=max_new_tokens,
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
        self.nudges += not reply.errors and not reply.calls
        return feedback_messages(reply, results, cut_off)

    def record(self, step: Step) -> None:
        self.steps.append(step)
        self.tool_errors += len(step.parse_errors)
        self.tool_failures += sum(r.is_error for r in step.results)
        if self.on_step is not None:
            self.on_step(step)

    def trajectory(self, end: EpisodeEnd, task_id: str, wall_s: float) -> Trajectory:
        segments = self.chain.segments()
        info = {
            "nudges": self.nudges,
            "tool_failures": self.tool_failures,
            "prompt_tokens": sum(len(g.token_ids) - g.num_generated for g in segments),
            **self.compaction.info(self),
        }
        return Trajectory(
            task_id=task_id,
            messages=(*self.history, *self.messages),
            steps=tuple(self.steps),
            segments=segments,
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
    start: EpisodeCheckpoint | None = None,
    checkpoints: Checkpoints | None = None,
) -> Trajectory:
    """Run one episode of `policy` on `task` inside `sandbox` and return what happened.

    `index` is the prepared snapshot's semantic index (built lazily if None);
    `on_step` is called after every turn (the CLI prints the transcript with it).
    `state` (see `EpisodeState`) continues an earlier episode, `task` being the user's
    next message, and is left holding where this one ended. `start` continues a
    checkpoint mid-episode (`sandbox` should be `start.fork()`, `task` is ignored);
    `checkpoints` collects one at each turn boundary its `when` accepts.
    """
    tools = tools or ToolSet.from_names(config.tools)
    episode = _Episode(policy, sandbox, task, tokenizer, config, tools, index, on_step)
    if state is not None and state.messages:
        episode.resume(state)  # serve's follow-up message
    if start is not None:
        episode.restore(start)  # a checkpoint continued: a tree branch, a replay
    episode.checkpoints = checkpoints
    began = time.monotonic()
    try:
        async with asyncio.timeout(config.episode_timeout_s - (began - episode.started)):
            end = await episode.run()
    except TimeoutError:
        end = "timeout"
    if state is not None:
        episode.save(state)
    return episode.trajectory(end, task_id, time.monotonic() - began)
