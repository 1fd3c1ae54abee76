"""`/v1/completions`: the legacy text endpoint, on the chat endpoint's steps.

A prompt is text, token ids, or a batch of either (as vLLM accepts), used as given:
no chat template, so it stops at the tokenizer's end-of-sequence id (not a turn's end)
besides the request's own stops, and an omitted `max_tokens` is 16 (OpenAI's default).
Checks, generation and the stop-string cut are `OpenAIServer`'s (`server.py`); what is
particular to this endpoint is here: the prompts, `echo` and `stream` refused, and the
legacy logprobs shape (`return_tokens_as_token_ids` spells tokens `token_id:N`, as vLLM
does). A completions call joins a recorded session only by its `X-Session-Id` header.
"""

from __future__ import annotations

import asyncio
from typing import Any

from shadowrl.serve.auth import ANONYMOUS, Caller
from shadowrl.serve.openai_api import (
    APIError,
    CompletionRequest,
    Job,
    Served,
    envelope,
    token_extras,
    usage,
)
from shadowrl.serve.server import OpenAIServer
from shadowrl.types import Generation

Prompt = str | list[str] | list[int] | list[list[int]]


async def complete(
    srv: OpenAIServer,
    req: CompletionRequest,
    session_header: str | None = None,
    caller: Caller = ANONYMOUS,
) -> dict[str, Any]:
    trace = await srv.trace(session_header, caller)
    jobs = completion_jobs(srv, req)
    served = await asyncio.gather(*(srv.run(j, sp) for j in jobs for sp in j.samplings))
    head = envelope("cmpl", srv.model_name)
    if trace is not None:
        await trace.record_completions(jobs, served, head["id"])
    choices = [completion_choice(k, s, srv.tokenizer, req) for k, s in enumerate(served)]
    used = usage(sum(len(j.prompt) for j in jobs), served)  # each prompt once, whatever n
    return {**head, "object": "text_completion", "choices": choices, "usage": used}


def completion_jobs(srv: OpenAIServer, req: CompletionRequest) -> list[Job]:
    """One `Job` per prompt, each run `n` times."""
    if req.echo or req.stream:
        param = "echo" if req.echo else "stream"
        raise APIError(400, f"`{param}` is not supported here", param, "unsupported")
    prompts = prompt_ids(srv.tokenizer, srv.vocab, req.prompt)
    srv.check(req, req.n * len(prompts))
    jobs = []
    for p in prompts:
        limit = srv.budget(len(p), req.max_tokens, "max_tokens", "prompt", default=16)
        top = req.logprobs or 0
        jobs.append(Job(p, [req.sampling(limit, i, srv.eos, top, srv.vocab) for i in range(req.n)]))
    return jobs


def prompt_ids(tokenizer: Any, vocab: int, prompt: Prompt) -> list[list[int]]:
    """Text, token ids, or a batch of either -> token id lists (as vLLM accepts)."""
    single = isinstance(prompt, str) or (bool(prompt) and isinstance(prompt[0], int))
    batch: list[Any] = [prompt] if single else list(prompt)
    ids = [
        tokenizer.encode(p, add_special_tokens=False) if isinstance(p, str) else list(p)
        for p in batch
    ]
    if not ids or not all(ids):
        raise APIError(400, "prompt must not be empty", "prompt")
    if any(not 0 <= t < vocab for p in ids for t in p):
        raise APIError(400, f"prompt token ids must lie in [0, {vocab})", "prompt")
    return ids


def completion_choice(
    index: int, s: Served, tokenizer: Any, req: CompletionRequest
) -> dict[str, Any]:
    lps = None
    if req.logprobs is not None:
        lps = completion_logprobs(s.shown, tokenizer, req.return_tokens_as_token_ids)
    return {
        "index": index,
        "text": s.text,
        "finish_reason": s.finish,
        "logprobs": lps,
        **token_extras(s.shown),
    }


def completion_logprobs(gen: Generation, tokenizer: Any, as_ids: bool) -> dict[str, Any]:
    """Legacy completions logprobs; `as_ids` spells tokens `token_id:N` like vLLM."""

    def spell(t: int) -> str:
        return f"token_id:{t}" if as_ids else tokenizer.decode([t])

    texts = [tokenizer.decode([t]) for t in gen.token_ids]
    offsets, at = [], 0
    for t in texts:
        offsets.append(at)
        at += len(t)
    recorded = len(gen.top_logprobs) == len(gen.token_ids) > 0
    tops = [{spell(t): x for t, x in top} for top in gen.top_logprobs] if recorded else None
    return {
        "tokens": [spell(t) for t in gen.token_ids] if as_ids else texts,
        "token_logprobs": list(gen.logprobs),
        "top_logprobs": tops,
        "text_offset": offsets,
    }
