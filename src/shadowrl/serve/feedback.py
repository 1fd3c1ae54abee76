"""`POST /v1/feedback`: what users do with the agent's work, stored as raw signals.

A signal names a session (`session_id`) or one response (`response_id`, the id the
client saw; stored with that response's session). It is validated (400: neither or
both ids, an unknown signal, `keep` without a `value` in [0, 1], a `value` on any
other signal), refused with 404 when the store holds no such session or response,
and written through the trace writer, under the caller's key (with API keys a
session of another key is a 404 too); the reply comes after the commit. With an
`Idempotency-Key` header a repeat is stored once: it gets the first row back (same
id, 200), whatever its body says. Turning signals into rewards is not done here.

Silence is a state: `silence_loop` runs `queries.finalize_silent` every so often, so a
session with no feedback `serve.feedback_window` seconds after its last request gets
a `silent` row. Feedback that comes later is stored too (a raw fact).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shadowrl.serve.auth import ANONYMOUS, Caller
from shadowrl.serve.errors import APIError
from shadowrl.serve.store import FeedbackRecord, TraceWriter
from shadowrl.serve.store.queries import (
    finalize_silent,
    get_feedback,
    session_of_response,
    session_owner,
)
from shadowrl.serve.store.schema import utcnow
from shadowrl.serve.store.signals import UserSignal

log = logging.getLogger(__name__)

IDEMPOTENCY_KEY_MAX = 256  # feedback.idempotency_key is a String(256)


class FeedbackIn(BaseModel):
    """The body of `POST /v1/feedback`."""

    model_config = ConfigDict(extra="forbid")
    session_id: str | None = Field(None, min_length=1, max_length=64, description="A session.")
    response_id: str | None = Field(
        None, min_length=1, max_length=96, description="A response's `id`, as the client saw it."
    )
    signal: UserSignal = Field(description="What the user did: " + ", ".join(get_args(UserSignal)))
    value: float | None = Field(
        None, ge=0, le=1, description="keep: the fraction of the agent's changed lines kept."
    )
    at: datetime | None = Field(
        None, description="When the user gave it (ISO 8601; no zone means UTC); default now."
    )

    @model_validator(mode="after")
    def _consistent(self) -> FeedbackIn:
        if (self.session_id is None) == (self.response_id is None):
            raise ValueError("give exactly one of session_id and response_id")
        if (self.signal == "keep") != (self.value is not None):
            raise ValueError("`value` goes with signal `keep`, and only with it")
        return self


class FeedbackOut(BaseModel):
    """The stored row (for a repeated Idempotency-Key: the first one)."""

    id: str
    object: Literal["feedback"]
    session_id: str
    response_id: str | None
    signal: str
    value: float | None
    at: str


def as_utc(at: datetime | None) -> datetime:
    if at is None:
        return utcnow()
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


async def give_feedback(
    writer: TraceWriter, body: FeedbackIn, key: str | None, caller: Caller = ANONYMOUS
) -> dict[str, Any]:
    """Store one signal (once per idempotency key) and return the stored row; a session
    that is not the caller's is a 404, as if it did not exist. A private key has nothing
    recorded to rate, and its feedback is never stored (404)."""
    if caller.private:
        msg = "a private API key's traffic is never recorded, so there is nothing to rate"
        raise APIError(404, msg, "response_id" if body.response_id else "session_id", "not_found")
    if key is not None and not 0 < len(key) <= IDEMPOTENCY_KEY_MAX:
        msg = f"Idempotency-Key must be 1 to {IDEMPOTENCY_KEY_MAX} characters"
        raise APIError(400, msg, "Idempotency-Key")
    engine = writer.engine
    if body.response_id is not None:
        sid = await asyncio.to_thread(session_of_response, engine, body.response_id)
        if sid is None:
            raise APIError(404, f"no response {body.response_id!r}", "response_id", "not_found")
    else:
        sid = body.session_id
        assert sid is not None  # FeedbackIn holds exactly one of the two
    found, owner = await asyncio.to_thread(session_owner, engine, sid)
    if not (found and caller.may_see(owner)):
        if body.response_id is not None:
            raise APIError(404, f"no response {body.response_id!r}", "response_id", "not_found")
        raise APIError(404, f"no session {sid!r}", "session_id", "not_found")
    record = FeedbackRecord(
        sid, body.signal, body.value, body.response_id, key, caller.key_id, at=as_utc(body.at)
    )
    await writer.write(record)
    row = await asyncio.to_thread(get_feedback, engine, record.stored[0])
    assert row is not None  # committed before the write returned
    return {
        "id": f"fb-{row.id}",
        "object": "feedback",
        "session_id": row.session_id,
        "response_id": row.response_id,
        "signal": row.signal,
        "value": row.value,
        "at": row.at.isoformat(),
    }


async def silence_loop(writer: TraceWriter, window_s: float, period_s: float) -> None:
    """Finalize silent sessions every `period_s` until cancelled (with the app)."""
    while True:
        await asyncio.sleep(period_s)
        try:
            done = await asyncio.to_thread(finalize_silent, writer, utcnow(), window_s)
        except Exception as e:  # a database hiccup must not end the loop
            log.warning("finalizing silent sessions failed: %s", e)
            continue
        if done:
            log.info("%d sessions final as silent", len(done))


def silence_lifespan(
    writer: TraceWriter | None, window_s: float | None
) -> Callable[[Any], AbstractAsyncContextManager[None]]:
    """An app lifespan that runs `silence_loop` while the app does (given a store and window)."""

    @asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        task = None
        if writer is not None and window_s is not None:
            task = asyncio.create_task(silence_loop(writer, window_s, silence_period(window_s)))
        try:
            yield
        finally:
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    return lifespan


def silence_period(window_s: float) -> float:
    """How often to look: a tenth of the window, between 10 ms and a minute."""
    return min(max(window_s / 10, 0.01), 60.0)
