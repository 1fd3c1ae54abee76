"""What one OpenAI chat request does: checks, prompt ids, generation, the reply.

Production traffic is only worth training on if it went through the *same* prompt
rendering and tool-call parsing as the RL harness, so chat requests are rendered
with `shadowrl.agent.prompt.Renderer` and replies parsed with `shadowrl.agent.parsing`,
never with a second copy of either. Every choice carries the exact `token_ids` and
per-token `policy_versions`, so a served session replays token for token.

What the schemas (`openai_api.py`) cannot check is checked here before any token is
generated, as a 400/404 naming the field: the model name, context room, the caps on
`n` and `max_tokens`, token ids outside the vocabulary. Requests are never serialised:
each choice awaits `policy.generate` (or streams) and the engine batches what is in
flight. Given the trace store, every choice is recorded before its response ends
(`recording.py`). Routes, the key check and hang-ups are `app.py`; `/v1/completions`
reuses these steps (`completions.py`); `/admin/*` swaps weights (`weights.py`).
"""

from __future__ import annotations

import asyncio
import uuid
from bisect import bisect_right
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from shadowrl.agent import Renderer, parse_tool_calls
from shadowrl.inference import TokenDelta
from shadowrl.serve.auth import ANONYMOUS, Caller
from shadowrl.serve.openai_api import (
    TOOL_TAG,
    APIError,
    ChatRequest,
    Job,
    SamplingRequest,
    Served,
    chat_choice,
    chat_logprobs,
    cut_at_stop,
    envelope,
    forced_delta,
    forced_text,
    held_back,
    sse,
    to_messages,
    token_extras,
    tokens_for,
    tool_call_json,
    usage,
)
from shadowrl.serve.recording import Recorder, Trace
from shadowrl.types import (
    FinishReason,
    Generation,
    Message,
    Policy,
    SamplingParams,
    ToolCall,
    TopLogprobs,
)

Emit = Callable[..., None]  # (choice index, delta, **choice fields) -> one SSE chunk queued
Render = Callable[[Renderer, list[Message]], list[int]]  # (renderer, messages) -> prompt ids


@dataclass(frozen=True)
class Limits:
    """What the server allows one request: context length and its caps."""

    max_context_tokens: int
    max_n: int
    max_tokens_cap: int


class OpenAIServer:
    """The request handlers and the state they share: policy, tokenizer, weight version."""

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
        self.vocab = len(tokenizer)
        self.eos = () if tokenizer.eos_token_id is None else (int(tokenizer.eos_token_id),)

    # ----------------------------------------------------------- shared steps

    def finish(
        self, job: Job, gen: Generation, text: str, sp: SamplingParams, ends: Sequence[int]
    ) -> Served:
        """What the client is shown of one generation: cut at a stop, tool calls parsed.
        `ends` are the tokens' end offsets in `text` (`detokenize`)."""
        cut, stopped = cut_at_stop(text, sp.stop)
        kept = None
        if stopped:  # only the tokens that spell the returned text are returned
            kept = tokens_for(ends, len(cut))
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
        text, ends = detokenize(self.tokenizer, gen.token_ids)  # as a stream would spell it
        return self.finish(job, gen, text, sp, ends)

    async def trace(self, session_header: str | None, caller: Caller) -> Trace | None:
        if self.recorder is None:
            return None
        return await self.recorder.trace(session_header, caller)

    # -------------------------------------------------- /v1/chat/completions

    async def chat(
        self, req: ChatRequest, session_header: str | None = None, caller: Caller = ANONYMOUS
    ) -> Any:
        trace = await self.trace(session_header, caller)
        job = self.prepare_chat(req, None if trace is None else trace.render)
        head = envelope("chatcmpl", self.model_name)
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
        if tail := detok.flush():  # a character the generation ended inside of
            text += tail
            ends[-1] = len(text)
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

    def prepare_chat(self, req: ChatRequest, render: Render | None = None) -> Job:
        """`render` (the recorder's, for token-in/token-out) makes the prompt ids when given."""
        if req.top_logprobs and not req.logprobs:
            raise APIError(400, "top_logprobs needs logprobs=true", "top_logprobs")
        self.check(req, req.n)
        tools = req.tool_schemas()
        renderer = Renderer(self.tokenizer, tools)  # the harness's own template and stop ids
        messages = to_messages(req.messages)
        prompt = renderer.prompt_ids(messages) if render is None else render(renderer, messages)
        forced = self.tokenizer.encode(
            forced_text(req.tool_choice, tools), add_special_tokens=False
        )
        asked, param = (
            (req.max_completion_tokens, "max_completion_tokens")
            if req.max_completion_tokens
            else (req.max_tokens, "max_tokens")
        )
        limit = self.budget(len(prompt), asked, param, "messages") - len(forced)
        if limit < 1:  # the forced tokens count as completion tokens
            msg = f"{param} leaves no room after the {len(forced)} tokens tool_choice forces"
            raise APIError(400, msg, param, "invalid_value")
        top = req.top_logprobs or 0
        stops, vocab = renderer.stop_token_ids, self.vocab
        sps = [req.sampling(limit, i, stops, top, vocab) for i in range(req.n)]
        return Job(prompt, sps, tools, tuple(forced))

    # ------------------------------------------------------------------ checks

    def check(self, req: SamplingRequest, choices: int) -> None:
        """The model name, the choice cap and the stop token ids."""
        if req.model != self.model_name:
            raise APIError(
                404, f"The model `{req.model}` does not exist.", "model", "model_not_found"
            )
        if choices > self.limits.max_n:
            msg = f"{choices} choices asked; this server returns at most {self.limits.max_n}"
            raise APIError(400, msg, "n", "invalid_value")
        if any(not 0 <= t < self.vocab for t in req.stop_token_ids or ()):
            raise APIError(400, f"stop_token_ids must lie in [0, {self.vocab})", "stop_token_ids")

    def budget(
        self,
        prompt_len: int,
        asked: int | None,
        param: str,
        prompt_param: str,
        default: int | None = None,
    ) -> int:
        """Check context room and the max_tokens cap; return the max new tokens.

        An omitted `max_tokens` is `default` (None: all the room), within room and cap.
        """
        cap, context = self.limits.max_tokens_cap, self.limits.max_context_tokens
        if asked is not None and asked > cap:
            msg = f"{param}={asked} is above this server's cap of {cap}"
            raise APIError(400, msg, param, "invalid_value")
        room = context - prompt_len
        if room < 1 or (asked or 0) > room:
            msg = (
                f"This model's maximum context length is {context} tokens; "
                f"the prompt has {prompt_len} and {asked or 1} more were requested."
            )
            raise APIError(400, msg, prompt_param, "context_length_exceeded")
        return asked or min(default or room, room, cap)


def parse_reply(text: str, tools: Sequence[dict[str, Any]]) -> tuple[str, tuple[ToolCall, ...]]:
    """The harness's own Hermes parser finds the calls; the content is the text before the
    first call, as is (vLLM's rule), or all of it when no call parses. Nothing is stripped:
    a stream has already sent that text and cannot take it back."""
    reply = parse_tool_calls(text, tools, id_prefix=f"call_{uuid.uuid4().hex[:8]}")
    if reply.errors or not reply.calls:
        return text, ()
    return text[: text.find(TOOL_TAG)], reply.calls


# ------------------------------------------------- tokens from the policy, as text
# A policy that streams (`Engine.generate_stream`) hands out token deltas as they are
# decoded; one that does not is wrapped into a single delta, so the server has one path.


@runtime_checkable
class StreamingPolicy(Protocol):
    """A policy that hands out tokens as they are decoded (`Engine.generate_stream`)."""

    def generate_stream(
        self, prompt_ids: Sequence[int], sampling: SamplingParams
    ) -> AsyncIterator[TokenDelta]:
        """New tokens as they come; the last delta carries the finish_reason."""
        ...


async def stream_generate(
    policy: Policy, prompt: Sequence[int], sp: SamplingParams, head: TokenDelta | None = None
) -> AsyncGenerator[TokenDelta, None]:
    """`head` (forced tokens) if any, then token deltas as they are decoded if the policy
    streams, or one delta otherwise."""
    if head is not None:
        yield head
    if isinstance(policy, StreamingPolicy):
        async for delta in policy.generate_stream(prompt, sp):
            yield delta
    else:
        yield as_delta(await policy.generate(prompt, sp))


def as_delta(gen: Generation) -> TokenDelta:
    return TokenDelta(
        gen.token_ids, gen.logprobs, gen.versions, gen.finish_reason, gen.top_logprobs
    )


def concat(parts: Sequence[TokenDelta]) -> Generation:
    ids = tuple(t for p in parts for t in p.token_ids)
    lps = tuple(x for p in parts for x in p.logprobs)
    versions = tuple(v for p in parts for v in p.versions)
    tops = tuple(top for p in parts for top in p.top_logprobs)
    if len(tops) != len(ids):  # a policy that records no alternatives: then none at all
        tops = ()
    finish: FinishReason = next(
        (p.finish_reason for p in reversed(parts) if p.finish_reason), "abort"
    )
    return Generation(ids, lps, versions, finish, tops)


def detokenize(tokenizer: Any, ids: Sequence[int]) -> tuple[str, list[int]]:
    """The text of `ids` and each token's end offset in it, spelled exactly as a stream
    of them is (pushed one at a time, so O(len)): one spelling, streamed or not."""
    detok, text, ends = IncrementalDetokenizer(tokenizer), "", []
    for tid in ids:
        text += detok.push([tid])
        ends.append(len(text))
    if tail := detok.flush():
        text += tail
        ends[-1] = len(text)
    return text, ends


class IncrementalDetokenizer:
    """Text deltas from a growing token list without re-decoding all of it (vLLM's trick).

    A window that starts one emission back keeps leading-space merges right; a trailing
    U+FFFD means a multi-byte character is still incomplete, so nothing is emitted yet.
    `flush` hands out what is held back once no token follows: the text then ends as
    the tokenizer decodes it whole (U+FFFD for a character cut off by `max_tokens`).
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self.prefix = self.read = 0

    def push(self, new_ids: Sequence[int]) -> str:
        self.ids.extend(new_ids)
        before = self.tokenizer.decode(self.ids[self.prefix : self.read], skip_special_tokens=True)
        now = self.tokenizer.decode(self.ids[self.prefix :], skip_special_tokens=True)
        if len(now) <= len(before) or now.endswith("\ufffd"):
            return ""
        self.prefix, self.read = self.read, len(self.ids)
        return now[len(before) :]

    def flush(self) -> str:
        """What `push` is still holding back (an incomplete character)."""
        if self.read == len(self.ids):
            return ""
        before = self.tokenizer.decode(self.ids[self.prefix : self.read], skip_special_tokens=True)
        now = self.tokenizer.decode(self.ids[self.prefix :], skip_special_tokens=True)
        self.prefix, self.read = self.read, len(self.ids)
        return now[len(before) :]
