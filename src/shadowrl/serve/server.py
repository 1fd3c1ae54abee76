"""An OpenAI-compatible HTTP front for a shadowrl policy.

Production traffic is only worth training on if it went through the *same* prompt
rendering and tool-call parsing as the RL harness, so chat requests are rendered
with `shadowrl.agent.prompt.render_prompt` and replies parsed with
`shadowrl.agent.parsing`, never with a second copy of either. Every choice also
carries the exact `token_ids` and per-token `policy_versions` (extra fields), which
makes a served session replayable token for token and lets `RemotePolicy` drive a
server as a `Policy`. A reply cut at a stop string returns in ids, logprobs and
`usage` only the tokens wholly inside the returned text, none of the stop string.

Requests are never serialised: each one awaits `policy.generate` and the engine
batches whatever is in flight; a client that hangs up, streaming or not, cancels its
generation. Client mistakes get OpenAI-shaped 4xx errors (`prepare.py` checks them).
Given the trace store's writer, every choice is recorded before its response ends and
continuations are served token-in/token-out (`recording.py`); feedback is `feedback.py`.
The routes around it are `app.py`.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from bisect import bisect_right
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import aclosing
from typing import Any

from shadowrl.agent.parsing import parse_tool_calls
from shadowrl.inference.requests import TokenDelta
from shadowrl.serve.auth import ANONYMOUS, Caller
from shadowrl.serve.generation import as_delta, concat, read_safetensors, stream_generate
from shadowrl.serve.openai_api import (
    APIError,
    ChatRequest,
    CompletionRequest,
    LoadWeightsRequest,
    Served,
    chat_choice,
    chat_logprobs,
    completion_choice,
    sse,
    token_extras,
    tool_call_json,
    usage,
)
from shadowrl.serve.prepare import TOOL_TAG, Job, Limits, Preparer, forced_delta
from shadowrl.serve.recording import Recorder, Trace
from shadowrl.serve.store import CheckpointUpdate, registry
from shadowrl.serve.text import (
    IncrementalDetokenizer,
    cut_at_stop,
    held_back,
    token_ends,
    tokens_for,
)
from shadowrl.types import (
    Generation,
    Policy,
    SamplingParams,
    ToolCall,
    TopLogprobs,
    WeightSink,
)

Emit = Callable[..., None]  # (choice index, delta, **choice fields) -> one SSE chunk queued


class OpenAIServer:
    """The route handlers and the state they share: policy, tokenizer, weight version."""

    def __init__(
        self,
        policy: Policy,
        tokenizer: Any,
        model_name: str,
        limits: Limits,
        version: int = 0,
        recorder: Recorder | None = None,
    ) -> None:
        self.policy, self.tokenizer, self.model_name = policy, tokenizer, model_name
        self.limits, self.version = limits, version
        self.recorder = recorder
        self.prep = Preparer(tokenizer, model_name, limits)
        self.swap_lock = asyncio.Lock()

    # ----------------------------------------------------------- shared steps

    def finish(
        self, job: Job, gen: Generation, text: str, sp: SamplingParams, ends: list[int] | None
    ) -> Served:
        """What the client is shown of one generation: cut at a stop, tool calls parsed."""
        cut, stopped = cut_at_stop(text, sp.stop)
        kept = None
        if stopped:  # only the tokens that spell the returned text are returned
            kept = tokens_for(
                token_ends(self.tokenizer, gen.token_ids) if ends is None else ends, len(cut)
            )
        reason = "stop" if stopped else gen.finish_reason
        forced = len(job.forced)
        if job.tools is None:
            return Served(gen, cut, reason, (), kept, forced)
        content, calls = parse_reply(cut, job.tools)
        return Served(gen, content, "tool_calls" if calls else reason, calls, kept, forced)

    async def run(self, job: Job, sp: SamplingParams) -> Served:
        gen = await self.policy.generate([*job.prompt, *job.forced], sp)
        head = forced_delta(job, sp, self.version)
        if head is not None:
            gen = concat([head, as_delta(gen)])
        text = self.tokenizer.decode(list(gen.token_ids), skip_special_tokens=True)
        return self.finish(job, gen, text, sp, None)

    def head(self, kind: str) -> dict[str, Any]:
        return {
            "id": f"{kind}-{uuid.uuid4().hex}",
            "created": int(time.time()),
            "model": self.model_name,
        }

    # -------------------------------------------------- /v1/chat/completions

    async def trace(self, session_header: str | None, caller: Caller) -> Trace | None:
        if self.recorder is None:
            return None
        return await self.recorder.trace(session_header, caller)

    async def chat(
        self, req: ChatRequest, session_header: str | None = None, caller: Caller = ANONYMOUS
    ) -> Any:
        trace = await self.trace(session_header, caller)
        job = self.prep.chat(req, None if trace is None else trace.render)
        head = self.head("chatcmpl")
        if req.stream:
            return sse(self.chat_stream(req, head, job, trace))
        served = await asyncio.gather(*(self.run(job, sp) for sp in job.samplings))
        if trace is not None:  # the response leaves only once its record is committed
            await trace.record_chat(job, served, head["id"])
        choices = [chat_choice(i, s, self.tokenizer, req.logprobs) for i, s in enumerate(served)]
        return {
            **head,
            "object": "chat.completion",
            "choices": choices,
            "usage": usage(len(job.prompt), served),
        }

    async def chat_stream(
        self, req: ChatRequest, head: dict[str, Any], job: Job, trace: Trace | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        """Run the n choices concurrently and interleave their chunks as they come."""
        chunk = {**head, "object": "chat.completion.chunk"}
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

        def emit(i: int, delta: dict[str, Any], **extra: Any) -> None:
            choice = {"index": i, "delta": delta, "logprobs": None, "finish_reason": None, **extra}
            queue.put_nowait({**chunk, "choices": [choice]})

        everything = asyncio.gather(
            *(
                self.stream_choice(job, sp, req.logprobs, i, emit, trace)
                for i, sp in enumerate(job.samplings)
            )
        )
        everything.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (item := await queue.get()) is not None:
                yield item
            served = await everything
        finally:
            everything.cancel()  # a client that hangs up frees its engine slots
        if trace is not None:  # [DONE] goes out only once the record is committed
            await trace.record_chat(job, served, head["id"])
        if (req.stream_options or {}).get("include_usage"):
            yield {**chunk, "choices": [], "usage": usage(len(job.prompt), served)}

    async def stream_choice(
        self,
        job: Job,
        sp: SamplingParams,
        logprobs: bool,
        i: int,
        emit: Emit,
        trace: Trace | None = None,
    ) -> Served:
        """Stream one choice, holding back text (and its tokens' logprobs) that may still
        become a stop or tool tag."""
        emit(i, {"role": "assistant", "content": ""})
        detok, text, sent = IncrementalDetokenizer(self.tokenizer), "", 0
        parts, ends, lp_sent = list[TokenDelta](), list[int](), 0
        ids, lps_all, tops = list[int](), list[float](), list[TopLogprobs]()
        markers = sp.stop if job.tools is None else (*sp.stop, TOOL_TAG)

        def lps(upto: int) -> dict[str, Any]:
            """The logprobs of tokens not yet sent, up to token `upto`, as a choice field."""
            nonlocal lp_sent
            if not logprobs or upto <= lp_sent:
                return {}
            k, lp_sent = slice(lp_sent, upto), upto
            part = TokenDelta(tuple(ids[k]), tuple(lps_all[k]), (), None, tuple(tops[k]))
            return {"logprobs": chat_logprobs(part, self.tokenizer)}

        head = forced_delta(job, sp, self.version)
        stream = stream_generate(self.policy, [*job.prompt, *job.forced], sp, head)
        async with aclosing(stream) as deltas:
            async for part in deltas:
                if trace is not None and part.token_ids:
                    trace.first_token(i)
                parts.append(part)
                ids += part.token_ids
                lps_all += part.logprobs
                tops += part.top_logprobs
                for tid in part.token_ids:
                    text += detok.push([tid])
                    ends.append(len(text))
                visible, hit = cut_at_stop(text, markers)
                upto = len(visible) if hit else len(text) - held_back(text, markers)
                extra = lps(bisect_right(ends, upto))
                if upto > sent or extra:
                    emit(i, {"content": text[sent:upto]}, **extra)
                    sent = max(sent, upto)
                if cut_at_stop(text, sp.stop)[1]:
                    break  # the engine stops on stop strings too; nothing after one is shown
        served = self.finish(job, concat(parts), text, sp, ends)
        if not served.calls and len(served.text) > sent:
            emit(i, {"content": served.text[sent:]})
        if served.calls:
            emit(i, {"tool_calls": [tool_call_json(c, k) for k, c in enumerate(served.calls)]})
        rest = lps(len(served.shown.token_ids))
        emit(
            i, {}, finish_reason=served.finish, **rest, **token_extras(served.shown, served.forced)
        )
        return served

    # -------------------------------------------------------- /v1/completions

    async def complete(
        self, req: CompletionRequest, session_header: str | None = None, caller: Caller = ANONYMOUS
    ) -> dict[str, Any]:
        trace = await self.trace(session_header, caller)
        jobs = self.prep.completion(req)
        served = await asyncio.gather(*(self.run(j, sp) for j in jobs for sp in j.samplings))
        head = self.head("cmpl")
        if trace is not None:
            await trace.record_completions(jobs, served, head["id"])
        choices = [completion_choice(k, s, self.tokenizer, req) for k, s in enumerate(served)]
        used = usage(sum(len(j.prompt) for j in jobs), served)  # each prompt once, whatever n
        return {**head, "object": "text_completion", "choices": choices, "usage": used}

    # ------------------------------------------------------------------ admin

    async def load_weights(self, req: LoadWeightsRequest) -> dict[str, Any]:
        """Swap weights in flight: running requests continue, later tokens get the new version.
        (Only admin reaches it: the route depends on `Auth.admin`.)"""
        self.check_swappable()
        async with self.swap_lock:
            version = self.version + 1 if req.version is None else req.version
            tensors = await self.swap(req.path, version, req.delta)
        return {"version": version, "tensors": tensors, "delta": req.delta}

    def check_swappable(self) -> None:
        if not isinstance(self.policy, WeightSink):
            raise APIError(400, "this policy cannot swap weights in flight", "path", "unsupported")

    async def swap(self, path: str, version: int, delta: bool = False) -> int:
        """Load `path` into the live policy as `version` (the caller holds `swap_lock`)."""
        assert isinstance(self.policy, WeightSink)
        state = await asyncio.to_thread(read_safetensors, path)
        try:  # the engine applies it between two decode steps; wait off the event loop
            await asyncio.to_thread(self.policy.update_weights, state, version, delta=delta)
        except (KeyError, ValueError, RuntimeError) as e:  # wrong names or shapes
            raise APIError(400, f"weights do not fit this model: {e}", "path") from e
        self.version = version
        if self.recorder is not None:
            self.recorder.checkpoint = path
        return len(state)

    async def rollback(self) -> dict[str, Any]:
        """Restore the checkpoint deployed before the live one (the registry's), in flight.
        (Only admin reaches it: the route depends on `Auth.admin`.)"""
        self.check_swappable()
        if self.recorder is None:
            raise APIError(
                400, "rollback needs the trace store (serve.traces)", None, "unsupported"
            )
        writer = self.recorder.writer
        async with self.swap_lock:
            target = await asyncio.to_thread(registry.rollback_target, writer.engine)
            if target is None:
                raise APIError(409, "no earlier deployed checkpoint to roll back to", None)
            current, previous = target
            await self.swap(previous.path, previous.version)
            why = "rolled back by hand (POST /admin/rollback)"
            await writer.write(CheckpointUpdate(current.path, "rolled_back", reason=why))
        return {"rolled_back": current.path, "deployed": previous.path, "version": self.version}


# ----------------------------------------------- glue to harness, engine, disk


def parse_reply(text: str, tools: Sequence[dict[str, Any]]) -> tuple[str, tuple[ToolCall, ...]]:
    """The harness's own Hermes parser; if a call is malformed the client sees the raw text."""
    reply = parse_tool_calls(text, tools, id_prefix=f"call_{uuid.uuid4().hex[:8]}")
    return (text.strip() if reply.errors else reply.content), reply.calls
