"""The response shapes, declared for the OpenAPI schema (`/openapi.json`) only.

Handlers build plain dicts (`openai_api`), so these models never filter or slow a reply;
they exist so a client, and the schemathesis fuzz test, can check every response
against what the schema promises. Extra fields beyond OpenAI's (`token_ids`,
`policy_versions`, `forced_tokens`) are declared too.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

Finish = Literal["stop", "length", "abort", "tool_calls"]


class ErrorBody(BaseModel):
    message: str
    type: str
    param: str | None
    code: str | None


class ErrorResponse(BaseModel):
    error: ErrorBody


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class TokenExtras(BaseModel):
    token_ids: list[int]
    policy_versions: list[int]
    forced_tokens: int = 0


class FunctionOut(BaseModel):
    name: str
    arguments: str


class ToolCallOut(BaseModel):
    id: str
    type: Literal["function"]
    function: FunctionOut


class MessageOut(BaseModel):
    role: Literal["assistant"]
    content: str | None
    tool_calls: list[ToolCallOut] = []


class TopLogprob(BaseModel):
    token: str
    logprob: float
    bytes: list[int]


class TokenLogprob(TopLogprob):
    top_logprobs: list[TopLogprob]


class ChatLogprobs(BaseModel):
    content: list[TokenLogprob]


class ChatChoice(TokenExtras):
    index: int
    message: MessageOut
    finish_reason: Finish
    logprobs: ChatLogprobs | None


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[ChatChoice]
    usage: Usage


class CompletionLogprobs(BaseModel):
    tokens: list[str]
    token_logprobs: list[float]
    top_logprobs: list[dict[str, float]] | None
    text_offset: list[int]


class CompletionChoice(TokenExtras):
    index: int
    text: str
    finish_reason: Finish
    logprobs: CompletionLogprobs | None


class Completion(BaseModel):
    id: str
    object: Literal["text_completion"]
    created: int
    model: str
    choices: list[CompletionChoice]
    usage: Usage


class ModelCard(BaseModel):
    id: str
    object: Literal["model"]
    created: int
    owned_by: str
    max_model_len: int


class ModelList(BaseModel):
    object: Literal["list"]
    data: list[ModelCard]


class Health(BaseModel):
    status: Literal["ok"]
    model: str
    version: int


class WeightsLoaded(BaseModel):
    version: int
    tensors: int
    delta: bool


class RolledBack(BaseModel):
    rolled_back: str
    deployed: str
    version: int


ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse} for status in (400, 401, 403, 404, 409)
}
# with "stream": true. Before OpenAPI 3.2 (FastAPI writes 3.1) `schema` describes one event
EVENT = {
    "type": "object",
    "properties": {"data": {"type": "string", "description": "a chunk as JSON, or [DONE]"}},
    "required": ["data"],
}
EVENTS = {"text/event-stream": {"schema": EVENT}}


def responses(model: type[BaseModel], streams: bool = False) -> dict[int | str, dict[str, Any]]:
    """A route's documented responses: `model` on 200 (or events), errors otherwise."""
    ok: dict[str, Any] = {"model": model, **({"content": EVENTS} if streams else {})}
    return {200: ok, **ERRORS}


def document_limits(app: FastAPI, model_name: str, max_n: int, max_tokens_cap: int) -> None:
    """Write what this server accepts into the request schemas: the one `model` it answers
    to (an enum) and its caps on `n` and `max_tokens` (maxima); serve it at /openapi.json
    as an ordinary route (so the app's key check covers it)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, routes=app.routes)
            for name in ("ChatRequest", "CompletionRequest"):
                props = schema["components"]["schemas"][name]["properties"]
                props["model"]["enum"] = [model_name]
                _maximum(props["n"], max_n)
                for field in ("max_tokens", "max_completion_tokens"):
                    if field in props:
                        _maximum(props[field], max_tokens_cap)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

    @app.get("/openapi.json", include_in_schema=False)
    async def schema() -> dict[str, Any]:
        return app.openapi()


def _maximum(prop: dict[str, Any], value: int) -> None:
    """Set the maximum of an integer property, or of its integer branch if nullable."""
    for branch in prop.get("anyOf", [prop]):
        if branch.get("type") == "integer":
            branch["maximum"] = value
