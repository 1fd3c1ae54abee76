"""The `/v1/agent/sessions` routes: the HTTP face of `agent_sessions.AgentSessions`.

    POST /v1/agent/sessions                  {"workspace", "commit"?, "task", "task_id"?, "budgets"?}
    GET  /v1/agent/sessions/{id}             status, steps, diff, token counts (?tokens=true: ids)
    GET  /v1/agent/sessions/{id}/events      server-sent events: message, step..., end
    POST /v1/agent/sessions/{id}/messages    {"content"}: continue a finished turn -> 202
    POST /v1/agent/sessions/{id}/cancel      stop it and free its sandbox
    POST /v1/agent/sessions/{id}/apply       write its changes into the real workspace

Budgets may only lower the server's agent config (more is a 400). Every route takes
the caller from the `owner` dependency (the auth layer's `Caller`; anonymous without
auth): a session belongs to the key that created it, another key's id is a 404, and a
private key's session is run but never recorded (nor its follow-ups). Without
`serve.workspaces_root` the API is off: every `/v1/agent/...` path is a 404 saying so.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from shadowrl.serve.agent_sessions import BUDGETS, AgentSession, AgentSessions, Status
from shadowrl.serve.auth import ANONYMOUS, Caller
from shadowrl.serve.errors import APIError
from shadowrl.serve.responses import EVENTS, ErrorResponse

PREFIX = "/v1/agent/sessions"
OFF = "the agent API is off: set serve.workspaces_root to the directory workspaces live in"


class Budgets(BaseModel):
    """Per-session budgets; each at most the server's `agent:` value."""

    model_config = ConfigDict(extra="forbid")
    max_turns: int | None = Field(None, ge=1, description="Assistant turns per message.")
    max_new_tokens: int | None = Field(None, ge=1, description="Tokens per turn.")
    max_episode_tokens: int | None = Field(None, ge=1, description="Generated tokens per message.")
    episode_timeout_s: float | None = Field(None, gt=0, description="Seconds per message.")


class CreateSession(BaseModel):
    model_config = ConfigDict(extra="forbid")
    workspace: str = Field(
        min_length=1, description="A directory under serve.workspaces_root (or relative to it)."
    )
    commit: str | None = Field(
        None, min_length=1, max_length=256, description="Start from this git commit of it."
    )
    task: str = Field(min_length=1, description="What the agent is asked to do.")
    task_id: str | None = Field(
        None, min_length=1, max_length=256,
        description="An id of the task for the trace store (e.g. a benchmark instance id); "
        "the agent never sees it.",
    )  # fmt: skip
    budgets: Budgets | None = Field(None, description="Lower budgets for this session.")


class UserMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    content: str = Field(min_length=1, description="The user's follow-up message.")


# ------------------------------------------------ response shapes (OpenAPI only)


class ToolCallOut(BaseModel):
    id: str
    name: str
    arguments: dict[str, Any]


class ToolResultOut(BaseModel):
    call_id: str
    name: str
    output: str
    is_error: bool


class StepOut(BaseModel):
    index: int
    text: str
    tool_calls: list[ToolCallOut]
    results: list[ToolResultOut]
    parse_errors: list[str]
    num_generated: int


class AgentUsage(BaseModel):
    context: int
    generated: int
    prompt: int


class AgentSessionOut(BaseModel):
    id: str
    object: Literal["agent.session"]
    status: Status
    workspace: str
    task: str
    created: int
    end: str | None
    error: str | None
    steps: list[StepOut]
    diff: str
    usage: AgentUsage
    budgets: dict[str, float]
    versions: list[int]
    token_ids: list[int] | None = None
    loss_mask: list[bool] | None = None


class Applied(BaseModel):
    id: str
    applied: list[str]
    workspace: str


def documented(status: int, model: type[BaseModel], streams: bool = False) -> dict[int | str, Any]:
    ok: dict[str, Any] = {"model": model, **({"content": EVENTS} if streams else {})}
    errors: dict[int | str, Any] = {c: {"model": ErrorResponse} for c in (400, 401, 404, 409, 429)}
    return {status: ok, **errors}


async def no_owner() -> Caller:
    """The caller without auth: everyone is the same, anonymous and recorded."""
    return ANONYMOUS


def view(s: AgentSession, tokens: bool = False) -> dict[str, Any]:
    """A session as the API shows it."""
    out: dict[str, Any] = {
        "id": s.id,
        "object": "agent.session",
        "status": s.status,
        "workspace": s.snapshot.label,
        "task": s.task,
        "created": int(s.created),
        "end": s.end,
        "error": s.error,
        "steps": s.steps,
        "diff": s.diff,
        "usage": s.token_counts(),
        "budgets": s.config.model_dump(include=set(BUDGETS)),
        "versions": sorted(s.versions),
    }
    if tokens and s.status != "running":
        t = s.state.tokens
        out["token_ids"], out["loss_mask"] = t.ids, t.mask
    return out


def _checked_budgets(sessions: AgentSessions, budgets: Budgets | None) -> dict[str, Any]:
    asked = {} if budgets is None else budgets.model_dump(exclude_none=True)
    limit = sessions.settings.spec.agent
    for name, value in asked.items():
        if value > getattr(limit, name):
            msg = f"budgets.{name} may be at most {getattr(limit, name)} on this server"
            raise APIError(400, msg, f"budgets.{name}")
    return asked


def agent_router(
    sessions: AgentSessions, owner: Callable[..., Awaitable[Caller]] = no_owner
) -> APIRouter:
    """The routes above on `sessions`; `owner` is the app's key check (`app.py::Auth.caller`)."""
    r = APIRouter(prefix=PREFIX, tags=["agent"])
    Owner = Depends(owner)

    @r.post("", status_code=201, responses=documented(201, AgentSessionOut))
    async def create(body: CreateSession, who: Caller = Owner) -> dict[str, Any]:
        budgets = _checked_budgets(sessions, body.budgets)
        s = await sessions.create(
            body.workspace, body.task, body.commit, budgets, who, body.task_id
        )
        return view(s)

    @r.get("/{session_id}", responses=documented(200, AgentSessionOut))
    async def get(
        session_id: str,
        tokens: bool = Query(False, description="Include the token ids and loss mask."),
        who: Caller = Owner,
    ) -> dict[str, Any]:
        return view(sessions.get(session_id, who), tokens)

    @r.get("/{session_id}/events", responses=documented(200, StepOut, streams=True))
    async def events(
        session_id: str,
        after: int = Query(-1, ge=-1, description="Only events with a larger id."),
        who: Caller = Owner,
    ) -> StreamingResponse:
        s = sessions.get(session_id, who)

        async def body() -> AsyncIterator[str]:
            async for e in s.follow(after):
                yield f"id: {e['id']}\nevent: {e['event']}\ndata: {json.dumps(e['data'])}\n\n"

        return StreamingResponse(body(), media_type="text/event-stream")

    @r.post("/{session_id}/messages", status_code=202, responses=documented(202, AgentSessionOut))
    async def message(session_id: str, body: UserMessage, who: Caller = Owner) -> dict[str, Any]:
        s = sessions.get(session_id, who)
        await sessions.message(s, body.content)
        return view(s)

    @r.post("/{session_id}/cancel", responses=documented(200, AgentSessionOut))
    async def cancel(session_id: str, who: Caller = Owner) -> dict[str, Any]:
        s = sessions.get(session_id, who)
        await sessions.cancel(s)
        return view(s)

    @r.post("/{session_id}/apply", responses=documented(200, Applied))
    async def apply(session_id: str, who: Caller = Owner) -> dict[str, Any]:
        s = sessions.get(session_id, who)
        return {"id": s.id, "applied": await sessions.apply(s), "workspace": str(s.snapshot.source)}

    return r


def agent_off_router() -> APIRouter:
    """Every agent path answers 404 with the reason, when no workspaces root is set."""
    r = APIRouter()

    @r.api_route("/v1/agent/{rest:path}", methods=["GET", "POST"], include_in_schema=False)
    async def off(rest: str) -> JSONResponse:
        return APIError(404, OFF, None, "agent_api_off").response()

    return r
