"""Reading the trace store: what `shadowrl traces list | show` print and `export` reads,
what the server looks up (a session, a response's session, a feedback row), and the
one derived write, `finalize_silent`: silence as a state.

Rows come back as plain frozen views with token arrays unpacked; `RequestView.of`
refuses a row whose blobs disagree with their counts (`TornRow`), which the store's
transactions should make impossible and a test checks after a `kill -9`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, exists, func, or_, select
from sqlalchemy.orm import Session

from shadowrl.serve.store.packing import PackingError, count, unpack_floats, unpack_ints
from shadowrl.serve.store.records import FeedbackRecord
from shadowrl.serve.store.schema import Feedback, TraceRequest, TraceSession, TraceStep
from shadowrl.serve.store.writer import TraceWriter


class TornRow(ValueError):
    """A request row whose packed arrays do not match their recorded lengths."""


@dataclass(frozen=True)
class RequestView:
    """A request row with its token arrays unpacked."""

    id: str
    response_id: str
    session_id: str
    parent_id: str | None
    created_at: datetime
    checkpoint: str | None
    prompt_ids: tuple[int, ...]
    generated_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    versions: tuple[int, ...]
    forced_ids: tuple[int, ...]
    finish_reason: str
    token_exact: bool
    row: TraceRequest  # every other column (sampling, tools, timings, ...)

    @classmethod
    def of(cls, r: TraceRequest) -> RequestView:
        check_whole(r)
        return cls(
            r.id,
            r.response_id,
            r.session_id,
            r.parent_id,
            r.created_at,
            r.checkpoint,
            unpack_ints(r.prompt_ids),
            unpack_ints(r.generated_ids),
            unpack_floats(r.logprobs),
            unpack_ints(r.versions),
            unpack_ints(r.forced_ids),
            r.finish_reason,
            r.token_exact,
            r,
        )


def check_whole(r: TraceRequest) -> None:
    """Raise `TornRow` unless every blob of `r` holds exactly its recorded count."""
    expected = {
        "prompt_ids": r.n_prompt,
        "generated_ids": r.n_generated,
        "logprobs": r.n_generated,
        "versions": r.n_generated,
        "forced_ids": r.n_forced,
    }
    for name, n in expected.items():
        try:
            got = count(getattr(r, name))
        except PackingError as e:
            raise TornRow(f"request {r.id}: {name}: {e}") from e
        if got != n:
            raise TornRow(f"request {r.id}: {name} holds {got} values, the row says {n}")


@dataclass(frozen=True)
class SessionSummary:
    """One line of `shadowrl traces list`."""

    id: str
    kind: str
    status: str
    created_at: datetime
    updated_at: datetime
    checkpoint: str | None
    requests: int
    generated_tokens: int
    signals: tuple[str, ...]


@dataclass(frozen=True)
class SessionView:
    """Everything recorded about one session (`shadowrl traces show`)."""

    session: TraceSession
    requests: tuple[RequestView, ...]
    steps: tuple[TraceStep, ...]
    feedback: tuple[Feedback, ...]


def list_sessions(
    engine: Engine,
    since: datetime | None = None,
    limit: int | None = 50,
    api_key_id: str | None = None,
) -> list[SessionSummary]:
    """Sessions updated at or after `since`, most recent first (only `api_key_id`'s if given)."""
    per_session = (
        select(
            TraceRequest.session_id,
            func.count().label("n"),
            func.coalesce(func.sum(TraceRequest.n_generated), 0).label("tokens"),
        )
        .group_by(TraceRequest.session_id)
        .subquery()
    )
    stmt = (
        select(TraceSession, per_session.c.n, per_session.c.tokens)
        .outerjoin(per_session, per_session.c.session_id == TraceSession.id)
        .order_by(TraceSession.updated_at.desc(), TraceSession.id)
        .limit(limit)
    )
    if since is not None:
        stmt = stmt.where(TraceSession.updated_at >= since)
    if api_key_id is not None:
        stmt = stmt.where(TraceSession.api_key_id == api_key_id)
    with Session(engine) as db:
        rows = db.execute(stmt).all()
        signals = _signals(db, [r[0].id for r in rows])
    return [
        SessionSummary(
            s.id,
            s.kind,
            s.status,
            s.created_at,
            s.updated_at,
            s.checkpoint,
            int(n or 0),
            int(tokens or 0),
            tuple(signals.get(s.id, ())),
        )
        for s, n, tokens in rows
    ]


def _signals(db: Session, session_ids: Sequence[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    if not session_ids:
        return out
    stmt = (
        select(Feedback.session_id, Feedback.signal)
        .where(Feedback.session_id.in_(session_ids))
        .order_by(Feedback.at, Feedback.id)
    )
    for sid, signal in db.execute(stmt):
        out.setdefault(sid, []).append(signal)
    return out


def resolve_session_id(engine: Engine, ident: str) -> str | None:
    """The session an id names: a session id, a request id or a response id."""
    with engine.connect() as conn:
        if conn.scalar(select(TraceSession.id).where(TraceSession.id == ident)):
            return ident
        by_request = or_(TraceRequest.id == ident, TraceRequest.response_id == ident)
        return conn.scalar(select(TraceRequest.session_id).where(by_request).limit(1))


def get_request(engine: Engine, request_id: str) -> RequestView | None:
    """One request by id (what a continuation of its conversation reuses token for token)."""
    with Session(engine) as db:
        row = db.get(TraceRequest, request_id)
        return None if row is None else RequestView.of(row)


def get_session(engine: Engine, ident: str) -> SessionView | None:
    """The whole of one session (None when the id names nothing in the store)."""
    sid = resolve_session_id(engine, ident)
    if sid is None:
        return None
    with Session(engine) as db:
        session = db.execute(select(TraceSession).where(TraceSession.id == sid)).scalar_one()
        requests = db.execute(_session_requests(sid)).scalars().all()
        steps = db.execute(
            select(TraceStep).where(TraceStep.session_id == sid).order_by(TraceStep.index)
        )
        feedback = db.execute(
            select(Feedback).where(Feedback.session_id == sid).order_by(Feedback.at, Feedback.id)
        )
        return SessionView(
            session,
            tuple(RequestView.of(r) for r in requests),
            tuple(steps.scalars()),
            tuple(feedback.scalars()),
        )


def _session_requests(sid: str) -> Any:
    return (
        select(TraceRequest)
        .where(TraceRequest.session_id == sid)
        .order_by(TraceRequest.created_at, TraceRequest.choice_index, TraceRequest.id)
    )


def iter_sessions(
    engine: Engine, since: datetime | None = None, exclude_keys: Collection[str] = ()
) -> Iterator[SessionView]:
    """Every session updated at or after `since`, oldest first, one at a time; none that
    belongs to a key in `exclude_keys` (private keys: their traffic is never recorded, but
    a store written before that held may have some)."""
    stmt = select(TraceSession.id).order_by(TraceSession.updated_at, TraceSession.id)
    if since is not None:
        stmt = stmt.where(TraceSession.updated_at >= since)
    if exclude_keys:
        kept = TraceSession.api_key_id.is_(None) | TraceSession.api_key_id.not_in(exclude_keys)
        stmt = stmt.where(kept)
    with engine.connect() as conn:
        ids = list(conn.scalars(stmt))
    for sid in ids:
        view = get_session(engine, sid)
        if view is not None:
            yield view


def session_exists(engine: Engine, session_id: str) -> bool:
    with engine.connect() as conn:
        return conn.scalar(select(TraceSession.id).where(TraceSession.id == session_id)) is not None


def session_owner(engine: Engine, session_id: str) -> tuple[bool, str | None]:
    """(whether session `session_id` exists, the API key id it was recorded under)."""
    stmt = select(TraceSession.api_key_id).where(TraceSession.id == session_id)
    with engine.connect() as conn:
        row = conn.execute(stmt).first()
    return (False, None) if row is None else (True, row[0])


def session_of_response(engine: Engine, response_id: str) -> str | None:
    """The session of the response the client saw as `response_id` (None: unknown)."""
    stmt = select(TraceRequest.session_id).where(TraceRequest.response_id == response_id)
    with engine.connect() as conn:
        return conn.scalar(stmt.limit(1))


def get_feedback(engine: Engine, feedback_id: int) -> Feedback | None:
    with Session(engine) as db:
        return db.get(Feedback, feedback_id)


def unanswered_sessions(
    engine: Engine, before: datetime, limit: int = 1000
) -> list[tuple[str, datetime]]:
    """Sessions last active before `before` with no feedback at all: (id, updated_at)."""
    has_feedback = exists().where(Feedback.session_id == TraceSession.id)
    stmt = (
        select(TraceSession.id, TraceSession.updated_at)
        .where(TraceSession.updated_at < before, ~has_feedback)
        .order_by(TraceSession.updated_at, TraceSession.id)
        .limit(limit)
    )
    with engine.connect() as conn:
        return [(sid, at) for sid, at in conn.execute(stmt)]


def finalize_silent(
    writer: TraceWriter, now: datetime, window_s: float, limit: int = 1000
) -> list[str]:
    """Give every session silent for `window_s` seconds a `silent` feedback row.

    A session is silent when it has no feedback and its last request (`updated_at`) is
    more than the window before `now`; the row's `at` is when the window closed. At
    most `limit` sessions per call; the idempotency key `silent:<id>` makes a second
    call, or a second server, a no-op. Returns the ids finalized, after the commit.
    """
    window = timedelta(seconds=window_s)
    rows = unanswered_sessions(writer.engine, now - window, limit)
    futures = [
        writer.submit(
            FeedbackRecord(sid, "silent", at=at + window, idempotency_key=f"silent:{sid}")
        )
        for sid, at in rows
    ]
    for f in futures:
        f.result()
    return [sid for sid, _ in rows]
