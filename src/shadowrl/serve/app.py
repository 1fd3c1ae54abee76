"""The ASGI app: routes, auth, error handlers and lifespan around one `OpenAIServer`.

`server.py` holds what a request does; this module wires who may ask for it and where
(`auth.py`), the agent-session router (`agent_routes.py`), feedback and the review page
(given a trace store), and the admin routes. Client mistakes come back OpenAI-shaped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, Header, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from shadowrl.serve import responses as docs
from shadowrl.serve.agent_routes import agent_off_router, agent_router
from shadowrl.serve.agent_sessions import AgentSessions, AgentSettings
from shadowrl.serve.auth import Auth, CallerDep, KeyRing, request_caller
from shadowrl.serve.disconnect import unless_disconnected
from shadowrl.serve.feedback import (
    FeedbackIn,
    FeedbackOut,
    give_feedback,
    silence_lifespan,
)
from shadowrl.serve.openai_api import (
    APIError,
    ChatRequest,
    CompletionRequest,
    LoadWeightsRequest,
    validation_error,
)
from shadowrl.serve.prepare import Limits
from shadowrl.serve.recording import Recorder
from shadowrl.serve.server import OpenAIServer
from shadowrl.serve.store import TraceWriter
from shadowrl.serve.store.queries import SessionView
from shadowrl.serve.ui import mount_ui
from shadowrl.types import (
    Policy,
)

# the review page's branching seam: (session, K, turn, the served policy) -> JSON (`ui/`)
BranchPolicy = Callable[[SessionView, int, int, Policy], Awaitable[dict[str, Any]]]


def create_app(
    policy: Policy,
    tokenizer: Any,
    model_name: str,
    *,
    max_context_tokens: int,
    max_n: int = 16,
    max_tokens_cap: int = 4096,
    admin_token: str | None = None,
    version: int = 0,
    traces: TraceWriter | None = None,
    checkpoint: str | None = None,
    feedback_window: float | None = None,
    agent: AgentSettings | None = None,
    keys: KeyRing | None = None,
    branch: BranchPolicy | None = None,
) -> FastAPI:
    """The ASGI app; serve it with uvicorn (`shadowrl serve`) or `serve_in_thread`.

    `max_n` and `max_tokens_cap` are `ServeConfig`'s caps (same defaults). With
    `traces` (the store's writer, which the caller opens and closes) every completion
    is recorded (`recording.py`), `/v1/feedback` and the `/ui` review page exist
    (`feedback.py`, `ui/`) and, with a
    `feedback_window` (seconds), silent sessions are finalized while the app runs.
    With `agent`, `/v1/agent/sessions` runs the agent loop on `policy` (`agent_routes.py`),
    each session owned by the key that created it.
    With `keys` every route needs a key and a key sees only its sessions; `/admin/*`
    needs `admin_token` and is refused without one (`auth.py`). Routers mounted later
    get the key check from the app; `app.state.auth` holds it for their handlers.
    With `branch` and `traces`, the review page offers an agent session's continuations
    side by side, run on the served policy (`ui/`).
    """

    auth = Auth(keys, admin_token)
    silence = silence_lifespan(traces, feedback_window)
    sessions: AgentSessions | None = None

    @asynccontextmanager
    async def lifespan(a: FastAPI) -> AsyncIterator[None]:
        async with silence(a):
            try:
                yield
            finally:
                if sessions is not None:
                    await sessions.close()

    app = FastAPI(
        title="shadowrl",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,  # `docs` serves it as a route, so it needs a key like every other
        lifespan=lifespan,
        dependencies=[Depends(auth.caller)],
    )
    app.state.auth = auth
    limits = Limits(max_context_tokens, max_n, max_tokens_cap)
    recorder = None if traces is None else Recorder(traces, model_name, checkpoint)
    srv = app.state.server = OpenAIServer(policy, tokenizer, model_name, limits, version, recorder)
    docs.document_limits(app, model_name, max_n, max_tokens_cap)
    if agent is not None:  # the harness as a service, on the very policy served here
        ckpt = lambda: None if recorder is None else recorder.checkpoint  # noqa: E731
        sessions = AgentSessions(agent, lambda: srv.policy, tokenizer, model_name, traces, ckpt)
    app.include_router(
        agent_off_router() if sessions is None else agent_router(sessions, owner=request_caller)
    )

    @app.exception_handler(APIError)
    async def api_error(_: Request, e: APIError) -> JSONResponse:
        return e.response()

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, e: RequestValidationError) -> JSONResponse:
        return validation_error(e.errors()).response()

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, e: HTTPException) -> JSONResponse:
        # FastAPI's own: a body that is not UTF-8 or JSON, an unknown route or method.
        return APIError(e.status_code, str(e.detail)).response()

    @app.post("/v1/chat/completions", responses=docs.responses(docs.ChatCompletion, True))
    async def chat(
        body: ChatRequest,
        request: Request,
        caller: CallerDep,
        x_session_id: str | None = Header(None),
    ) -> Any:
        return await unless_disconnected(request, srv.chat(body, x_session_id, caller))

    @app.post("/v1/completions", responses=docs.responses(docs.Completion))
    async def complete(
        body: CompletionRequest,
        request: Request,
        caller: CallerDep,
        x_session_id: str | None = Header(None),
    ) -> Any:
        return await unless_disconnected(request, srv.complete(body, x_session_id, caller))

    if traces is not None:
        writer = traces

        @app.post("/v1/feedback", responses=docs.responses(FeedbackOut))
        async def feedback(
            body: FeedbackIn, caller: CallerDep, idempotency_key: str | None = Header(None)
        ) -> dict[str, Any]:
            return await give_feedback(writer, body, idempotency_key, caller)

        on_policy = None if branch is None else (lambda v, k, t: branch(v, k, t, srv.policy))
        mount_ui(app, writer, tokenizer, on_policy)  # the review page reads the same store

    @app.get("/v1/models", responses=docs.responses(docs.ModelList))
    async def models() -> dict[str, Any]:
        card = {"id": model_name, "object": "model", "created": 0, "owned_by": "shadowrl"}
        return {"object": "list", "data": [{**card, "max_model_len": max_context_tokens}]}

    @app.get("/health", responses=docs.responses(docs.Health))
    async def health() -> dict[str, Any]:
        return {"status": "ok", "model": model_name, "version": srv.version}

    @app.post(
        "/admin/load_weights",
        responses=docs.responses(docs.WeightsLoaded),
        dependencies=[Depends(auth.admin)],
    )
    async def load_weights(req: LoadWeightsRequest) -> dict[str, Any]:
        return await srv.load_weights(req)

    @app.post(
        "/admin/rollback",
        responses=docs.responses(docs.RolledBack),
        dependencies=[Depends(auth.admin)],
    )
    async def rollback() -> dict[str, Any]:
        return await srv.rollback()

    return app
