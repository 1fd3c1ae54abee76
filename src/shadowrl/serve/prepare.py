"""Client requests -> what the policy runs: prompt ids, forced tokens, sampling settings.

What the request schemas (`openai_api.py`) cannot check is checked here, before any
token is generated, as an OpenAI-shaped 400/404 naming the field: the model name,
context room, the server's caps on `n` and `max_tokens` (`ServeConfig.max_n`,
`max_tokens_cap`), token ids outside the vocabulary, a `tool_choice` naming no offered
tool.

`tool_choice="required"` or a named function is honoured exactly by forcing the opening
of a Hermes tool call: the tokens of `<tool_call>\\n{"name": "` (required) or of
`<tool_call>\\n{"name": "<name>", "arguments": ` (named) are appended to the prompt, and
reported as the first tokens of the completion (logprob 0, `forced_tokens` says how
many; they count against `max_tokens`), so the model only writes the rest of the call.
A model that then writes no valid call gets its raw text returned as content.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from shadowrl.agent.prompt import Renderer
from shadowrl.inference.requests import TokenDelta
from shadowrl.serve.openai_api import (
    APIError,
    ChatRequest,
    CompletionRequest,
    NamedToolChoice,
    SamplingRequest,
    to_messages,
)
from shadowrl.types import Message, SamplingParams

TOOL_TAG = "<tool_call>"
Render = Callable[[Renderer, list[Message]], list[int]]  # (renderer, messages) -> prompt ids


@dataclass(frozen=True)
class Limits:
    """What the server allows one request: context length and its caps."""

    max_context_tokens: int
    max_n: int
    max_tokens_cap: int


@dataclass(frozen=True)
class Job:
    """One prompt to run `len(samplings)` times (the n choices)."""

    prompt: list[int]
    samplings: list[SamplingParams]
    tools: list[dict[str, Any]] | None = None
    forced: tuple[int, ...] = ()  # ids appended to the prompt and reported as generated


def forced_text(choice: Any, tools: Sequence[dict[str, Any]] | None) -> str:
    """The opening of the tool call a `tool_choice` demands ('' when it demands none)."""
    if choice != "required" and not isinstance(choice, NamedToolChoice):
        return ""
    if not tools:
        raise APIError(400, "tool_choice needs tools to choose from", "tool_choice")
    if choice == "required":
        return TOOL_TAG + '\n{"name": "'
    name = choice.function.name
    if name not in {t["function"]["name"] for t in tools}:
        raise APIError(400, f"tool_choice names `{name}`, which is not in tools", "tool_choice")
    return TOOL_TAG + "\n" + json.dumps({"name": name})[:-1] + ', "arguments": '


class Preparer:
    """Turns validated request bodies into `Job`s for one tokenizer and model name."""

    def __init__(self, tokenizer: Any, model_name: str, limits: Limits) -> None:
        self.tokenizer, self.model_name, self.limits = tokenizer, model_name, limits
        self.vocab = len(tokenizer)
        self.eos = () if tokenizer.eos_token_id is None else (int(tokenizer.eos_token_id),)

    def chat(self, req: ChatRequest, render: Render | None = None) -> Job:
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
        sps = [self.sampling(req, limit, i, renderer.stop_token_ids, top) for i in range(req.n)]
        return Job(prompt, sps, tools, tuple(forced))

    def completion(self, req: CompletionRequest) -> list[Job]:
        if req.echo or req.stream:
            param = "echo" if req.echo else "stream"
            raise APIError(400, f"`{param}` is not supported here", param, "unsupported")
        prompts = self.prompt_ids(req.prompt)
        self.check(req, req.n * len(prompts))
        jobs = []
        for p in prompts:
            limit = self.budget(len(p), req.max_tokens, "max_tokens", "prompt", default=16)
            sps = [self.sampling(req, limit, i, self.eos, req.logprobs or 0) for i in range(req.n)]
            jobs.append(Job(p, sps))
        return jobs

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

    def sampling(
        self, req: SamplingRequest, max_tokens: int, i: int, stop_ids: tuple[int, ...], top: int
    ) -> SamplingParams:
        seed = None if req.seed is None else req.seed + i  # the n choices must differ
        stop_ids = (*stop_ids, *(t for t in req.stop_token_ids or () if t not in stop_ids))
        top_k = min(max(req.top_k, 0), self.vocab)  # 0 or -1 = off; above the vocab = off too
        return SamplingParams(
            max_tokens, req.temperature, req.top_p, top_k, req.stops(), stop_ids, seed, top
        )

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
        if any(not 0 <= t < self.vocab for p in ids for t in p):
            raise APIError(400, f"prompt token ids must lie in [0, {self.vocab})", "prompt")
        return ids


def forced_delta(job: Job, sp: SamplingParams, version: int) -> TokenDelta | None:
    """The forced tokens as if generated: probability 1, so logprob 0 (and sole alternative)."""
    if not job.forced:
        return None
    n, tops = len(job.forced), tuple(((t, 0.0),) for t in job.forced)
    return TokenDelta(job.forced, (0.0,) * n, (version,) * n, None, tops if sp.top_logprobs else ())
