"""`GET /ui`: the review page, served by the same app with no build step.

The page is three static files (`static/`: HTML, a little JS, CSS; package data) and
the JSON it reads from two routes here: `/ui/api/sessions` (each session's status,
feedback signals and checkpoint, most recent first) and `/ui/api/sessions/{id}` (the
transcript, every tool call and result, the diff). Accept and reject post the public
`/v1/feedback`, so what the page records is exactly what any client could.

The static files carry no data and are served to anyone (plain Starlette routes, out
of the app's key check), so a browser can load the page and ask for a key; the JSON
routes are API routes like any other: with keys on they need one, and a key sees only
its own sessions (another's id is a 404). The page keeps the key in sessionStorage.

The transcript is what the store holds, token-exact: for each request, the prompt
tokens it added to its conversation (the whole prompt when it starts one or was
re-rendered) and the reply, decoded with the template's special tokens left in, so
a reviewer sees what the model saw. Agent sessions add their steps (tool calls and
results) and their diff.

Where the server is given a `BranchSessions` (the seam: `shadowrl serve` builds one from
`realtime/branch_view.py`, which sits above this layer), an agent session's page also
offers K fresh continuations from a turn: `POST /ui/api/sessions/{id}/branch` rebuilds
the session there, continues it K times on the served policy and answers each
continuation's score, end, turns and diff, which the page shows side by side. Without
one the route answers 404.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

from fastapi import Depends, FastAPI
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import Response

from shadowrl.serve.auth import Caller
from shadowrl.serve.errors import APIError
from shadowrl.serve.store import TraceWriter
from shadowrl.serve.store.queries import RequestView, SessionView, get_session, list_sessions

ASSETS = {"app.js": "text/javascript", "style.css": "text/css"}
LISTED = 200  # sessions on the index page
# (session, K, turn (0-based)) -> the K continuations as JSON; raises APIError
BranchSessions = Callable[[SessionView, int, int], Awaitable[dict[str, Any]]]


class BranchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    k: int = Field(2, ge=1, le=8)
    from_turn: int = Field(ge=1)


def mount_ui(
    app: FastAPI,
    writer: TraceWriter,
    tokenizer: Any,
    who: Callable[..., Awaitable[Caller]],
    branch: BranchSessions | None = None,
) -> None:
    """Add the page (`/ui`, `/ui/sessions/{id}`, its assets) and its JSON routes to `app`;
    `who` is the app's key check (`app.py`), so the JSON routes know their caller."""
    asker = Depends(who)
    static = resources.files(__name__) / "static"
    page = (static / "index.html").read_bytes()
    assets = {name: ((static / name).read_bytes(), kind) for name, kind in ASSETS.items()}

    async def html(_: Request) -> Response:
        return Response(page, media_type="text/html; charset=utf-8")

    async def asset(request: Request) -> Response:
        found = assets.get(request.path_params["name"])
        if found is None:
            return Response(status_code=404)
        return Response(found[0], media_type=found[1])

    app.add_route("/ui", html, include_in_schema=False)
    app.add_route("/ui/sessions/{sid}", html, include_in_schema=False)
    app.add_route("/ui/static/{name}", asset, include_in_schema=False)

    @app.get("/ui/api/sessions", include_in_schema=False)
    async def sessions(caller: Caller = asker) -> dict[str, Any]:
        rows = await asyncio.to_thread(list_sessions, writer.engine, None, LISTED, caller.key_id)
        return {"data": [summary_json(r) for r in rows]}

    async def visible(sid: str, caller: Any) -> SessionView:
        view = await asyncio.to_thread(get_session, writer.engine, sid)
        if view is None or view.session.id != sid or not caller.may_see(view.session.api_key_id):
            raise APIError(404, f"no session {sid!r}", "session_id", "not_found")
        return view

    @app.get("/ui/api/sessions/{sid}", include_in_schema=False)
    async def session(sid: str, caller: Caller = asker) -> dict[str, Any]:
        return {**session_json(await visible(sid, caller), tokenizer), "branching": bool(branch)}

    @app.post("/ui/api/sessions/{sid}/branch", include_in_schema=False)
    async def branch_session(sid: str, body: BranchIn, caller: Caller = asker) -> dict[str, Any]:
        view = await visible(sid, caller)
        if branch is None:
            raise APIError(404, "this server does not branch sessions", None, "not_found")
        return await branch(view, body.k, body.from_turn - 1)


def summary_json(s: Any) -> dict[str, Any]:
    return {
        "id": s.id,
        "kind": s.kind,
        "status": s.status,
        "checkpoint": s.checkpoint,
        "updated_at": s.updated_at.isoformat(),
        "requests": s.requests,
        "generated_tokens": s.generated_tokens,
        "signals": list(s.signals),
    }


def session_json(view: SessionView, tokenizer: Any) -> dict[str, Any]:
    """One session as the page shows it: transcript, steps, diff, feedback."""
    s = view.session
    streams = {r.id: (*r.prompt_ids, *r.generated_ids) for r in view.requests}
    return {
        "id": s.id,
        "kind": s.kind,
        "status": s.status,
        "checkpoint": s.checkpoint,
        "created_at": s.created_at.isoformat(),
        "task": s.task,
        "workspace": s.workspace,
        "diff": s.diff,
        "requests": [request_json(r, streams, tokenizer) for r in view.requests],
        "steps": [
            {"index": st.index, "tool_calls": st.tool_calls, "results": st.results}
            for st in view.steps
        ],
        "feedback": [
            {
                "signal": f.signal,
                "value": f.value,
                "at": f.at.isoformat(),
                "response": f.response_id,
            }
            for f in view.feedback
        ],
    }


def request_json(
    r: RequestView, streams: dict[str, tuple[int, ...]], tokenizer: Any
) -> dict[str, Any]:
    before = streams.get(r.parent_id or "", ())
    extends = bool(before) and r.prompt_ids[: len(before)] == before
    new_prompt = r.prompt_ids[len(before) :] if extends else r.prompt_ids
    decode = lambda ids: tokenizer.decode(list(ids), skip_special_tokens=False)  # noqa: E731
    return {
        "id": r.id,
        "response_id": r.response_id,
        "endpoint": r.row.endpoint,
        "created_at": r.created_at.isoformat(),
        "prompt": decode(new_prompt),
        "continues": extends,
        "reply": decode(r.generated_ids),
        "tool_calls": r.row.tool_calls or [],
        "finish_reason": r.finish_reason,
        "token_exact": r.token_exact,
        "prompt_tokens": len(r.prompt_ids),
        "generated_tokens": len(r.generated_ids),
    }
