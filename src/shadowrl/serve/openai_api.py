"""The OpenAI wire format and its rules, kept apart from the serving logic.

Request schemas (validated by pydantic, so a bad field becomes a 400 naming the
field; the error body is `errors.py`), what a request asks the policy to run (`Job`), and pure
helpers that turn a `Generation` into OpenAI's JSON shapes. Two of OpenAI's rules
live here as pure text functions: a reply is cut at its first stop string, which is
never returned (a streamed reply holds back any tail that could still become one), and
`tool_choice="required"` or a named function is honoured exactly by forcing the
opening of a Hermes tool call: the tokens of `<tool_call>\\n{"name": "` (required) or
of `<tool_call>\\n{"name": "<name>", "arguments": ` (named) are appended to the prompt
and reported as the first tokens of the completion (logprob 0, `forced_tokens` says
how many; they count against `max_tokens`), so the model only writes the rest of the
call. The content beside a call is the text before the first `<tool_call>`, as written; a
reply whose calls do not all parse is returned whole as content, without calls.
Nothing here touches a model; `server.py` does the work.
"""

from __future__ import annotations

import json
import time
import uuid
from bisect import bisect_right
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ModelWrapValidatorHandler, model_validator

from shadowrl.inference import TokenDelta
from shadowrl.serve.errors import APIError
from shadowrl.types import Generation, Message, SamplingParams, ToolCall

TOOL_TAG = "<tool_call>"


# ---------------------------------------------------------------- request schemas
# Only what we honour is declared; unknown fields are ignored, as OpenAI does.

TokenId = Annotated[int, Field(ge=0, strict=True)]  # strict: a JSON true is not token 1
Text = Annotated[str, Field(min_length=1)]


class SamplingRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: str
    max_tokens: int | None = Field(None, ge=1)
    temperature: float = Field(1.0, ge=0.0, le=2.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    n: int = Field(1, ge=1)  # capped by `serve.max_n`
    stop: str | list[str] | None = None
    stop_token_ids: list[TokenId] | None = None  # vLLM's extension, on top of end-of-turn ids
    top_k: int = Field(0, ge=-1)  # vLLM's extension; 0 or -1 = off
    seed: int | None = None
    stream: bool = False
    stream_options: dict[str, Any] | None = None

    def stops(self) -> tuple[str, ...]:
        """The stop strings; an empty one would match before any text, so it is ignored."""
        stops = (self.stop,) if isinstance(self.stop, str) else tuple(self.stop or ())
        return tuple(s for s in stops if s)

    def sampling(
        self, max_tokens: int, i: int, stop_ids: tuple[int, ...], top: int, vocab: int
    ) -> SamplingParams:
        """Choice `i`'s sampling; `stop_ids` (end of turn) come before the request's own."""
        seed = None if self.seed is None else self.seed + i  # the n choices must differ
        stop_ids = (*stop_ids, *(t for t in self.stop_token_ids or () if t not in stop_ids))
        top_k = min(max(self.top_k, 0), vocab)  # 0 or -1 = off; above the vocab = off too
        return SamplingParams(
            max_tokens, self.temperature, self.top_p, top_k, self.stops(), stop_ids, seed, top
        )


class FunctionCallIn(BaseModel):
    name: str
    arguments: str | dict[str, Any] = "{}"


class ToolCallIn(BaseModel):
    id: str = ""
    type: Literal["function"] = "function"
    function: FunctionCallIn


class MessageIn(BaseModel):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = None
    name: str | None = None


class ParametersIn(BaseModel):
    """A tool's JSON schema: checked as far as the harness reads it (prompt and parser)."""

    model_config = ConfigDict(extra="allow")
    type: str = "object"
    properties: dict[str, dict[str, Any]] = {}
    required: list[str] = []


class FunctionSchemaIn(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str = Field(min_length=1)
    description: str = ""
    parameters: ParametersIn | None = None


class ToolIn(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Literal["function"] = "function"
    function: FunctionSchemaIn


class NamedFunction(BaseModel):
    name: str


class NamedToolChoice(BaseModel):
    type: Literal["function"] = "function"
    function: NamedFunction


class ChatRequest(SamplingRequest):
    messages: list[MessageIn] = Field(min_length=1)
    tools: list[ToolIn] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0, le=20)
    max_completion_tokens: int | None = Field(None, ge=1)
    _raw_tools: list[dict[str, Any]] = []

    @model_validator(mode="wrap")
    @classmethod
    def _keep_raw_tools(cls, data: Any, handler: ModelWrapValidatorHandler[ChatRequest]) -> Any:
        """Keep the client's tool dicts as sent: a native template renders them verbatim."""
        req = handler(data)
        if isinstance(data, dict) and req.tools:
            req._raw_tools = list(data["tools"])
        return req

    def tool_schemas(self) -> list[dict[str, Any]] | None:
        """The offered tools (validated, in the client's own spelling); None: plain text."""
        return None if self.tool_choice == "none" or not self.tools else self._raw_tools


class CompletionRequest(SamplingRequest):
    prompt: Text | list[Text] | list[TokenId] | list[list[TokenId]] = Field(min_length=1)
    logprobs: int | None = Field(None, ge=0, le=20)
    echo: bool = False
    return_tokens_as_token_ids: bool = False


@dataclass(frozen=True)
class Job:
    """One prompt to run `len(samplings)` times (the n choices)."""

    prompt: list[int]
    samplings: list[SamplingParams]
    tools: list[dict[str, Any]] | None = None
    forced: tuple[int, ...] = ()  # ids appended to the prompt and reported as generated


# ------------------------------------------------------------------ conversions


def to_messages(raw: Sequence[MessageIn]) -> list[Message]:
    """OpenAI wire messages -> the harness's `Message` records."""
    out = []
    for m in raw:
        text = m.content if isinstance(m.content, str) else ""
        if isinstance(m.content, list):  # content parts: only text carries meaning here
            text = "".join(str(p.get("text", "")) for p in m.content if p.get("type") == "text")
        calls = tuple(
            ToolCall(c.id, c.function.name, _json_object(c.function.arguments))
            for c in m.tool_calls or ()
        )
        role = "system" if m.role == "developer" else m.role
        out.append(Message(role, text, calls, m.tool_call_id, m.name))
    return out


def _json_object(arguments: str | dict[str, Any]) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    try:
        parsed = json.loads(arguments or "{}")
    except json.JSONDecodeError as e:
        raise APIError(400, f"tool call arguments are not JSON: {e}", "messages") from e
    if not isinstance(parsed, dict):
        raise APIError(400, "tool call arguments must be a JSON object", "messages")
    return parsed


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


def forced_delta(job: Job, sp: SamplingParams, version: int) -> TokenDelta | None:
    """The forced tokens as if generated: probability 1, so logprob 0 (and sole alternative)."""
    if not job.forced:
        return None
    n, tops = len(job.forced), tuple(((t, 0.0),) for t in job.forced)
    return TokenDelta(job.forced, (0.0,) * n, (version,) * n, None, tops if sp.top_logprobs else ())


def tool_call_json(call: ToolCall, index: int | None = None) -> dict[str, Any]:
    fn = {"name": call.name, "arguments": json.dumps(call.arguments)}
    out = {"id": call.id, "type": "function", "function": fn}
    return out if index is None else {"index": index, **out}


def token_extras(gen: Generation, forced: int = 0) -> dict[str, Any]:
    """The token-exact record, beyond OpenAI's schema (`token_ids` is vLLM's name).

    `forced_tokens`: how many leading ids a `tool_choice` forced (not sampled; logprob 0).
    """
    extra = {"token_ids": list(gen.token_ids), "policy_versions": list(gen.versions)}
    return {**extra, "forced_tokens": forced} if forced else extra


def _token_json(tokenizer: Any, tid: int, lp: float) -> dict[str, Any]:
    tok = tokenizer.decode([tid])
    return {"token": tok, "logprob": lp, "bytes": list(tok.encode())}


def chat_logprobs(gen: Generation | TokenDelta, tokenizer: Any) -> dict[str, Any]:
    n = len(gen.token_ids)
    tops = gen.top_logprobs if len(gen.top_logprobs) == n else [()] * n  # none recorded
    content = [
        {
            **_token_json(tokenizer, tid, lp),
            "top_logprobs": [_token_json(tokenizer, t, x) for t, x in top],
        }
        for tid, lp, top in zip(gen.token_ids, gen.logprobs, tops, strict=True)
    ]
    return {"content": content}


# -------------------------------------------------------- what the client is shown


def cut_at_stop(text: str, stops: Sequence[str]) -> tuple[str, bool]:
    """Drop the first stop string and all after it (OpenAI never returns it)."""
    hits = [i for i in (text.find(s) for s in stops if s) if i >= 0]
    return (text[: min(hits)], True) if hits else (text, False)


def held_back(text: str, markers: Sequence[str]) -> int:
    """How many trailing chars could still grow into a marker, so can't be streamed yet."""
    longest = max((len(m) for m in markers), default=1)
    for k in range(min(len(text), longest - 1), 0, -1):
        if any(m.startswith(text[-k:]) for m in markers):
            return k
    return 0


def tokens_for(ends: Sequence[int], n_chars: int) -> int:
    """How many leading tokens lie wholly within the first `n_chars` characters, given
    each token's end offset in the text: a token that straddles the cut (part of a stop
    string) is out, so the returned tokens never spell any of what was cut."""
    return bisect_right(ends, n_chars)


@dataclass(frozen=True)
class Served:
    """One finished choice: the raw generation and what the client is shown of it.

    `kept` leading tokens are returned: after a stop string, those wholly inside the
    returned text (`tokens_for`); `gen` stays untrimmed, what the model produced.
    """

    gen: Generation
    text: str
    finish: str
    calls: tuple[ToolCall, ...] = ()
    kept: int | None = None  # None: every token
    forced: int = 0  # leading tokens a tool_choice forced

    @property
    def shown(self) -> Generation:
        """The generation cut to the returned tokens (ids, logprobs, versions, alternatives)."""
        g, k = self.gen, self.kept
        if k is None:
            return g
        return Generation(
            g.token_ids[:k], g.logprobs[:k], g.versions[:k], g.finish_reason, g.top_logprobs[:k]
        )


def chat_choice(index: int, s: Served, tokenizer: Any, logprobs: bool) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": s.text if s.text or not s.calls else None,
    }
    if s.calls:
        message["tool_calls"] = [tool_call_json(c) for c in s.calls]
    lps = chat_logprobs(s.shown, tokenizer) if logprobs else None
    return {
        "index": index,
        "message": message,
        "finish_reason": s.finish,
        "logprobs": lps,
        **token_extras(s.shown, s.forced),
    }


def envelope(kind: str, model: str) -> dict[str, Any]:
    """The fields every response (or chunk) of one request shares."""
    return {"id": f"{kind}-{uuid.uuid4().hex}", "created": int(time.time()), "model": model}


def usage(prompt_tokens: int, served: Sequence[Served]) -> dict[str, int]:
    done = sum(len(s.shown.token_ids) for s in served)
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": done,
        "total_tokens": prompt_tokens + done,
    }


def sse(events: AsyncIterator[dict[str, Any]]) -> StreamingResponse:
    """Server-sent events as OpenAI streams them: one JSON per `data:` line, then [DONE]."""

    async def body() -> AsyncIterator[str]:
        async for event in events:
            yield f"data: {json.dumps(event)}\n\n"
        yield "data: [DONE]\n\n"

    return StreamingResponse(body(), media_type="text/event-stream")


def validation_error(errors: Sequence[Any]) -> APIError:
    """pydantic's first complaint about a request body, as a 400 naming the field."""
    err = next(iter(errors), {"msg": "invalid request", "loc": ()})
    param = ".".join(str(x) for x in err.get("loc", ())[1:]) or None
    code = "invalid_json" if err.get("type") == "json_invalid" else "invalid_value"
    return APIError(400, f"{err['msg']} ({param or 'body'})", param, code)
