"""An OpenAI-compatible HTTP front for a shadowrl policy.

Production traffic is only worth training on if it went through the *same* prompt
rendering and tool-call parsing as the RL harness, so chat requests are rendered
with `shadowrl.agent.prompt.render_prompt` and replies parsed with
`shadowrl.agent.parsing`, never with a second copy of either. Every choice also
carries the exact `token_ids` and per-token `policy_versions` (extra fields), which
makes a served session replayable token for token and lets `RemotePolicy` drive a
server as a `Policy`.

Requests are never serialised: each one awaits `policy.generate` and the engine
batches whatever is in flight. Client mistakes get OpenAI-shaped 4xx errors.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import aclosing
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from fastapi import FastAPI, Header, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from shadowrl.agent.parsing import parse_tool_calls
from shadowrl.agent.prompt import Renderer
from shadowrl.inference.requests import TokenDelta
from shadowrl.serve.openai_api import (
    APIError,
    ChatRequest,
    CompletionRequest,
    IncrementalDetokenizer,
    LoadWeightsRequest,
    SamplingRequest,
    Served,
    chat_choice,
    chat_logprobs,
    completion_choice,
    cut_at_stop,
    held_back,
    sse,
    to_messages,
    token_extras,
    tool_call_json,
    usage,
    validation_error,
)
from shadowrl.types import (
    FinishReason,
    Generation,
    Policy,
    SamplingParams,
    ToolCall,
    WeightSink,
)

TOOL_TAG = "<tool_call>"
Tools = Sequence[dict[str, Any]] | None  # OpenAI tool schemas; None: reply is plain text
Emit = Callable[..., None]  # (choice index, delta, **choice fields) -> one SSE chunk queued


@runtime_checkable
class StreamingPolicy(Protocol):
    """A policy that hands out tokens as they are decoded (`Engine.generate_stream`)."""

    def generate_stream(
        self, prompt_ids: Sequence[int], sampling: SamplingParams
    ) -> AsyncIterator[TokenDelta]:
        """New tokens as they come; the last delta carries the finish_reason."""
        ...


class OpenAIServer:
    """The route handlers and the state they share: policy, tokenizer, weight version."""

    def __init__(
        self,
        policy: Policy,
        tokenizer: Any,
        model_name: str,
        max_context_tokens: int,
        admin_token: str | None = None,
        version: int = 0,
    ) -> None:
        self.policy, self.tokenizer, self.model_name = policy, tokenizer, model_name
        self.max_context_tokens, self.admin_token, self.version = (
            max_context_tokens,
            admin_token,
            version,
        )
        self.eos = () if tokenizer.eos_token_id is None else (int(tokenizer.eos_token_id),)
        self.swap_lock = asyncio.Lock()

    # ----------------------------------------------------------- shared steps

    def budget(self, req: SamplingRequest, prompt_len: int, asked: int | None, param: str) -> int:
        """Check the model name and context room; return the max new tokens."""
        if req.model != self.model_name:
            raise APIError(
                404, f"The model `{req.model}` does not exist.", "model", "model_not_found"
            )
        room = self.max_context_tokens - prompt_len
        if room < 1 or (asked or 0) > room:
            msg = (
                f"This model's maximum context length is {self.max_context_tokens} tokens; "
                f"the prompt has {prompt_len} and {asked or 1} more were requested."
            )
            raise APIError(400, msg, param, "context_length_exceeded")
        return asked or room

    def sampling(
        self, req: SamplingRequest, max_tokens: int, i: int, stop_ids: tuple[int, ...]
    ) -> SamplingParams:
        seed = None if req.seed is None else req.seed + i  # the n choices must differ
        stop_ids = (*stop_ids, *(t for t in req.stop_token_ids or () if t not in stop_ids))
        top_k = max(req.top_k, 0)
        return SamplingParams(
            max_tokens, req.temperature, req.top_p, top_k, req.stops(), stop_ids, seed
        )

    def finish(self, gen: Generation, text: str, stops: Sequence[str], tools: Tools) -> Served:
        text, stopped = cut_at_stop(text, stops)
        reason = "stop" if stopped else gen.finish_reason
        if tools is None:
            return Served(gen, text, reason)
        content, calls = parse_reply(text, tools)
        return Served(gen, content, "tool_calls" if calls else reason, calls)

    async def run(self, prompt: Sequence[int], sp: SamplingParams, tools: Tools = None) -> Served:
        gen = await self.policy.generate(prompt, sp)
        text = self.tokenizer.decode(list(gen.token_ids), skip_special_tokens=True)
        return self.finish(gen, text, sp.stop, tools)

    def head(self, kind: str) -> dict[str, Any]:
        return {
            "id": f"{kind}-{uuid.uuid4().hex}",
            "created": int(time.time()),
            "model": self.model_name,
        }

    # -------------------------------------------------- /v1/chat/completions

    async def chat(self, req: ChatRequest) -> Any:
        if req.top_logprobs:
            raise APIError(400, "top_logprobs > 0 is not supported", "top_logprobs", "unsupported")
        tools = None if req.tool_choice == "none" or not req.tools else req.tools
        renderer = Renderer(self.tokenizer, tools)  # the harness's own template and stop ids
        prompt = renderer.prompt_ids(to_messages(req.messages))
        limit = self.budget(
            req, len(prompt), req.max_completion_tokens or req.max_tokens, "messages"
        )
        sps = [self.sampling(req, limit, i, renderer.stop_token_ids) for i in range(req.n)]
        head = self.head("chatcmpl")
        if req.stream:
            return sse(self.chat_stream(req, head, prompt, sps, tools))
        served = await asyncio.gather(*(self.run(prompt, sp, tools) for sp in sps))
        choices = [chat_choice(i, s, self.tokenizer, req.logprobs) for i, s in enumerate(served)]
        return {
            **head,
            "object": "chat.completion",
            "choices": choices,
            "usage": usage(len(prompt), served),
        }

    async def chat_stream(
        self,
        req: ChatRequest,
        head: dict[str, Any],
        prompt: Sequence[int],
        sps: Sequence[SamplingParams],
        tools: Tools,
    ) -> AsyncIterator[dict[str, Any]]:
        """Run the n choices concurrently and interleave their chunks as they come."""
        chunk = {**head, "object": "chat.completion.chunk"}
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

        def emit(i: int, delta: dict[str, Any], **extra: Any) -> None:
            choice = {"index": i, "delta": delta, "logprobs": None, "finish_reason": None, **extra}
            queue.put_nowait({**chunk, "choices": [choice]})

        everything = asyncio.gather(
            *(
                self.stream_choice(prompt, sp, tools, req.logprobs, i, emit)
                for i, sp in enumerate(sps)
            )
        )
        everything.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (item := await queue.get()) is not None:
                yield item
            served = await everything
        finally:
            everything.cancel()  # a client that hangs up frees its engine slots
        if (req.stream_options or {}).get("include_usage"):
            yield {**chunk, "choices": [], "usage": usage(len(prompt), served)}

    async def stream_choice(
        self,
        prompt: Sequence[int],
        sp: SamplingParams,
        tools: Tools,
        logprobs: bool,
        i: int,
        emit: Emit,
    ) -> Served:
        """Stream one choice, holding back text that may still become a stop or tool tag."""
        emit(i, {"role": "assistant", "content": ""})
        detok, text, sent, parts = IncrementalDetokenizer(self.tokenizer), "", 0, list[TokenDelta]()
        markers = sp.stop if tools is None else (*sp.stop, TOOL_TAG)
        async with aclosing(stream_generate(self.policy, prompt, sp)) as stream:
            async for part in stream:
                parts.append(part)
                text += detok.push(part.token_ids)
                visible, hit = cut_at_stop(text, markers)
                upto = len(visible) if hit else len(text) - held_back(text, markers)
                lps = (
                    {"logprobs": chat_logprobs(part, self.tokenizer)}
                    if logprobs and part.token_ids
                    else {}
                )
                if upto > sent or lps:
                    emit(i, {"content": text[sent:upto]}, **lps)
                    sent = max(sent, upto)
                if cut_at_stop(text, sp.stop)[1]:
                    break  # the engine stops on stop strings too; nothing after one is shown
        served = self.finish(concat(parts), text, sp.stop, tools)
        if not served.calls and len(served.text) > sent:
            emit(i, {"content": served.text[sent:]})
        if served.calls:
            emit(i, {"tool_calls": [tool_call_json(c, k) for k, c in enumerate(served.calls)]})
        emit(i, {}, finish_reason=served.finish, **token_extras(served.gen))
        return served

    # -------------------------------------------------------- /v1/completions

    async def complete(self, req: CompletionRequest) -> dict[str, Any]:
        if req.logprobs:
            raise APIError(400, "logprobs > 0 is not supported; use 0", "logprobs", "unsupported")
        if req.echo or req.stream:
            param = "echo" if req.echo else "stream"
            raise APIError(400, f"`{param}` is not supported here", param, "unsupported")
        prompts = self.prompt_ids(req.prompt)
        limits = [self.budget(req, len(p), req.max_tokens or 16, "prompt") for p in prompts]
        runs = [
            self.run(p, self.sampling(req, limit, i, self.eos))
            for p, limit in zip(prompts, limits, strict=True)
            for i in range(req.n)
        ]
        served = await asyncio.gather(*runs)
        choices = [completion_choice(k, s, self.tokenizer, req) for k, s in enumerate(served)]
        used = usage(sum(map(len, prompts)) * req.n, served)
        return {**self.head("cmpl"), "object": "text_completion", "choices": choices, "usage": used}

    def prompt_ids(self, prompt: str | list[str] | list[int] | list[list[int]]) -> list[list[int]]:
        """Text, token ids, or a batch of either -> token id lists (as vLLM accepts)."""
        single = isinstance(prompt, str) or (bool(prompt) and isinstance(prompt[0], int))
        batch: list[Any] = [prompt] if single else list(prompt)
        ids = [
            self.tokenizer.encode(p, add_special_tokens=False) if isinstance(p, str) else list(p)
            for p in batch
        ]
        if not ids or not all(ids):
            raise APIError(400, "prompt must not be empty", "prompt")
        vocab = len(self.tokenizer)
        if any(not 0 <= t < vocab for p in ids for t in p):
            raise APIError(400, f"prompt token ids must lie in [0, {vocab})", "prompt")
        return ids

    # ------------------------------------------------------------------ admin

    async def load_weights(
        self, req: LoadWeightsRequest, authorization: str | None
    ) -> dict[str, Any]:
        """Swap weights in flight: running requests continue, later tokens get the new version."""
        if self.admin_token and authorization != f"Bearer {self.admin_token}":
            raise APIError(
                401, "admin needs `Authorization: Bearer <token>`", None, "invalid_api_key"
            )
        if not isinstance(self.policy, WeightSink):
            raise APIError(400, "this policy cannot swap weights in flight", "path", "unsupported")
        async with self.swap_lock:
            version = self.version + 1 if req.version is None else req.version
            state = await asyncio.to_thread(read_safetensors, req.path)
            try:  # the engine applies it between two decode steps; wait off the event loop
                await asyncio.to_thread(self.policy.update_weights, state, version, delta=req.delta)
            except (KeyError, ValueError, RuntimeError) as e:  # wrong names or shapes
                raise APIError(400, f"weights do not fit this model: {e}", "path") from e
            self.version = version
        return {"version": version, "tensors": len(state), "delta": req.delta}


# ----------------------------------------------- glue to harness, engine, disk


def parse_reply(text: str, tools: Sequence[dict[str, Any]]) -> tuple[str, tuple[ToolCall, ...]]:
    """The harness's own Hermes parser; if a call is malformed the client sees the raw text."""
    reply = parse_tool_calls(text, tools, id_prefix=f"call_{uuid.uuid4().hex[:8]}")
    return (text.strip() if reply.errors else reply.content), reply.calls


async def stream_generate(
    policy: Policy, prompt: Sequence[int], sp: SamplingParams
) -> AsyncGenerator[TokenDelta, None]:
    """Token deltas as they are decoded if the policy streams; one delta otherwise."""
    if isinstance(policy, StreamingPolicy):
        async for delta in policy.generate_stream(prompt, sp):
            yield delta
    else:
        gen = await policy.generate(prompt, sp)
        yield TokenDelta(gen.token_ids, gen.logprobs, gen.versions, gen.finish_reason)


def concat(parts: Sequence[TokenDelta]) -> Generation:
    ids = tuple(t for p in parts for t in p.token_ids)
    lps = tuple(x for p in parts for x in p.logprobs)
    versions = tuple(v for p in parts for v in p.versions)
    finish: FinishReason = next(
        (p.finish_reason for p in reversed(parts) if p.finish_reason), "abort"
    )
    return Generation(ids, lps, versions, finish)


def read_safetensors(path: str) -> dict[str, Any]:
    """A safetensors file, or every `*.safetensors` shard of a checkpoint directory."""
    from safetensors.torch import load_file

    p = Path(path)
    files = sorted(p.glob("*.safetensors")) if p.is_dir() else [p]
    if not files or not files[0].is_file():
        raise APIError(400, f"no safetensors weights at {path}", "path", "not_found")
    state: dict[str, Any] = {}
    for f in files:
        state.update(load_file(str(f)))
    return state


def create_app(
    policy: Policy,
    tokenizer: Any,
    model_name: str,
    *,
    max_context_tokens: int,
    admin_token: str | None = None,
    version: int = 0,
) -> FastAPI:
    """The ASGI app; serve it with uvicorn (`shadowrl serve`) or `serve_in_thread`."""
    app = FastAPI(title="shadowrl", docs_url=None, redoc_url=None)
    srv = app.state.server = OpenAIServer(
        policy, tokenizer, model_name, max_context_tokens, admin_token, version
    )

    @app.exception_handler(APIError)
    async def api_error(_: Request, e: APIError) -> JSONResponse:
        return e.response()

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, e: RequestValidationError) -> JSONResponse:
        return validation_error(e.errors()).response()

    app.post("/v1/chat/completions")(srv.chat)
    app.post("/v1/completions")(srv.complete)

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        card = {"id": model_name, "object": "model", "created": 0, "owned_by": "shadowrl"}
        return {"object": "list", "data": [{**card, "max_model_len": max_context_tokens}]}

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "model": model_name, "version": srv.version}

    @app.post("/admin/load_weights")
    async def load_weights(
        req: LoadWeightsRequest, authorization: str | None = Header(None)
    ) -> dict[str, Any]:
        return await srv.load_weights(req, authorization)

    return app
