"""The ASGI app: routes, who may call them, hang-ups, errors, around one `OpenAIServer`.

A chat request reads through four files: this one (the route, the key check, the
hang-up watch), `openai_api.py` (the wire format), `server.py` (what the request does)
and the harness's `agent/prompt.py` (the rendering). Around them: the key file
(`auth.py`), `/v1/completions` (`completions.py`), `/admin/*` (`weights.py`), the
agent-session router (`agent_routes.py`), and, given a trace store, recording,
feedback and the review page. Client mistakes come back OpenAI-shaped.

Who may call: with keys, every route needs `Authorization: Bearer <key>` (401
otherwise) and its handler gets the key's `Caller`; the admin token is taken wherever
a key is (the operator: recorded without a key id, sees every session). `/admin/*`
needs the admin token; without one, admin is refused (403), never open. Both checks
are FastAPI dependencies (`Auth.caller`, `Auth.admin`), handed to every router mounted
here, the agent sessions' and the review page's included, so they all check alike.

Starlette does not cancel a handler whose client left, so without `unless_disconnected`
a dropped non-streaming request would decode to `max_tokens` for nobody (a streaming
one is cancelled by its response's own disconnect listener).
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Annotated, Any, TypeVar

from fastapi import Depends, FastAPI, Header, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException

from shadowrl.serve import completions
from shadowrl.serve import responses as docs
from shadowrl.serve.agent_routes import agent_off_router, agent_router
from shadowrl.serve.agent_sessions import AgentSessions, AgentSettings
from shadowrl.serve.auth import ADMIN, ANONYMOUS, Caller, KeyRing
from shadowrl.serve.errors import APIError
from shadowrl.serve.feedback import FeedbackIn, FeedbackOut, give_feedback, silence_lifespan
from shadowrl.serve.openai_api import ChatRequest, CompletionRequest, validation_error
from shadowrl.serve.recording import Recorder
from shadowrl.serve.server import Limits, OpenAIServer
from shadowrl.serve.store import TraceWriter
from shadowrl.serve.store.queries import SessionView
from shadowrl.serve.ui import mount_ui
from shadowrl.serve.weights import LoadWeightsRequest, Weights
from shadowrl.types import Policy

T = TypeVar("T")
# the review page's branching seam: (session, K, turn, the served policy) -> JSON (`ui/`)
BranchPolicy = Callable[[SessionView, int, int, Policy], Awaitable[dict[str, Any]]]
Who = Callable[..., Awaitable[Caller]]  # the key check, as a route dependency
Lifespan = Callable[[FastAPI], AbstractAsyncContextManager[None]]


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
    (`feedback.py`, `ui/`) and, with a `feedback_window` (seconds), silent sessions are
    finalized while the app runs. With `agent`, `/v1/agent/sessions` runs the agent loop
    on `policy` (`agent_routes.py`), each session owned by the key that created it.
    With `keys` every route needs a key and a key sees only its sessions; `/admin/*`
    needs `admin_token`. With `branch` and `traces`, the review page offers an agent
    session's continuations side by side, run on the served policy (`ui/`).
    """
    auth = Auth(keys, admin_token)
    recorder = None if traces is None else Recorder(traces, model_name, checkpoint)
    limits = Limits(max_context_tokens, max_n, max_tokens_cap)
    srv = OpenAIServer(policy, tokenizer, model_name, limits, version, recorder)
    sessions = None
    if agent is not None:  # the harness as a service, on the very policy served here
        ckpt = lambda: None if recorder is None else recorder.checkpoint  # noqa: E731
        sessions = AgentSessions(agent, lambda: srv.policy, tokenizer, model_name, traces, ckpt)
    app = FastAPI(
        title="shadowrl",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,  # `docs` serves it as a route, so it needs a key like every other
        lifespan=_lifespan(silence_lifespan(traces, feedback_window), sessions),
        dependencies=[Depends(auth.caller)],
    )
    docs.document_limits(app, model_name, max_n, max_tokens_cap)
    _error_handlers(app)
    _openai_routes(app, srv, auth.caller)
    _admin_routes(app, Weights(srv), auth)
    app.include_router(
        agent_off_router() if sessions is None else agent_router(sessions, owner=auth.caller)
    )
    if traces is not None:
        _feedback_route(app, traces, auth.caller)
        on_policy = None if branch is None else (lambda v, k, t: branch(v, k, t, srv.policy))
        mount_ui(app, traces, tokenizer, auth.caller, on_policy)  # reads the same store
    return app


def _lifespan(silence: Lifespan, sessions: AgentSessions | None) -> Lifespan:
    @asynccontextmanager
    async def lifespan(a: FastAPI) -> AsyncIterator[None]:
        async with silence(a):
            try:
                yield
            finally:
                if sessions is not None:
                    await sessions.close()

    return lifespan


def _error_handlers(app: FastAPI) -> None:
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


def _openai_routes(app: FastAPI, srv: OpenAIServer, who: Who) -> None:
    asker = Depends(who)  # the app's own check: FastAPI runs it once a request

    @app.post("/v1/chat/completions", responses=docs.responses(docs.ChatCompletion, True))
    async def chat(
        body: ChatRequest,
        request: Request,
        caller: Caller = asker,
        x_session_id: str | None = Header(None),
    ) -> Any:
        return await unless_disconnected(request, srv.chat(body, x_session_id, caller))

    @app.post("/v1/completions", responses=docs.responses(docs.Completion))
    async def complete(
        body: CompletionRequest,
        request: Request,
        caller: Caller = asker,
        x_session_id: str | None = Header(None),
    ) -> Any:
        return await unless_disconnected(
            request, completions.complete(srv, body, x_session_id, caller)
        )

    @app.get("/v1/models", responses=docs.responses(docs.ModelList))
    async def models() -> dict[str, Any]:
        card = {"id": srv.model_name, "object": "model", "created": 0, "owned_by": "shadowrl"}
        return {
            "object": "list",
            "data": [{**card, "max_model_len": srv.limits.max_context_tokens}],
        }

    @app.get("/health", responses=docs.responses(docs.Health))
    async def health() -> dict[str, Any]:
        return {"status": "ok", "model": srv.model_name, "version": srv.version}


def _admin_routes(app: FastAPI, weights: Weights, auth: Auth) -> None:
    admin = [Depends(auth.admin)]

    @app.post(
        "/admin/load_weights", responses=docs.responses(docs.WeightsLoaded), dependencies=admin
    )
    async def load_weights(req: LoadWeightsRequest) -> dict[str, Any]:
        return await weights.load(req)

    @app.post("/admin/rollback", responses=docs.responses(docs.RolledBack), dependencies=admin)
    async def rollback() -> dict[str, Any]:
        return await weights.rollback()


def _feedback_route(app: FastAPI, writer: TraceWriter, who: Who) -> None:
    asker = Depends(who)

    @app.post("/v1/feedback", responses=docs.responses(FeedbackOut))
    async def feedback(
        body: FeedbackIn,
        caller: Caller = asker,
        idempotency_key: str | None = Header(None),
    ) -> dict[str, Any]:
        return await give_feedback(writer, body, idempotency_key, caller)


# ------------------------------------------------------------------- who may call

_bearer = HTTPBearer(auto_error=False, description="An API key (`shadowrl keys add`).")
Bearer = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


class Auth:
    """The app's two checks, as dependencies: `caller` (every route), `admin` (/admin/*)."""

    def __init__(self, keys: KeyRing | None, admin_token: str | None) -> None:
        self.keys, self.admin_token = keys, admin_token
        self.caller = self._caller_dependency()

    def _caller_dependency(self) -> Who:
        if self.keys is None:  # open server: no security scheme in the schema either

            async def anonymous() -> Caller:
                return ANONYMOUS

            return anonymous
        ring = self.keys

        async def caller(cred: Bearer) -> Caller:
            return self.check(ring, cred)

        return caller

    def check(self, ring: KeyRing, cred: HTTPAuthorizationCredentials | None) -> Caller:
        if cred is not None and self.is_admin(cred.credentials):
            return ADMIN
        found = None if cred is None else ring.lookup(cred.credentials)
        if found is None:
            what = "missing" if cred is None else "not a valid key"
            msg = f"this server needs `Authorization: Bearer <key>` ({what})"
            raise APIError(401, msg, None, "invalid_api_key")
        return Caller(found.id, found.private)

    def is_admin(self, token: str) -> bool:
        return self.admin_token is not None and hmac.compare_digest(
            token.encode(), self.admin_token.encode()
        )

    async def admin(self, cred: Bearer) -> None:
        if self.admin_token is None:
            msg = "admin is off: set serve.admin_token to enable /admin/*"
            raise APIError(403, msg, None, "admin_disabled")
        if cred is None or not self.is_admin(cred.credentials):
            msg = "admin needs `Authorization: Bearer <serve.admin_token>`"
            raise APIError(401, msg, None, "invalid_api_key")


# --------------------------------------------------------------------- hang-ups


async def unless_disconnected(request: Request, work: Coroutine[Any, Any, T]) -> T | Response:
    """Await `work`, cancelling it if the client hangs up first.

    Once the body is read, the next ASGI message can only be the disconnect (vLLM
    listens for it the same way).
    """
    task = asyncio.ensure_future(work)

    async def hung_up() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    watch = asyncio.ensure_future(hung_up())
    try:
        await asyncio.wait((task, watch), return_when=asyncio.FIRST_COMPLETED)
    finally:
        watch.cancel()
        task.cancel()  # no-op when it finished; aborts the generation when it did not
    if task.cancelled():
        return Response(status_code=499)  # nobody is listening; nginx's "client closed"
    return task.result()
