"""The trace store's tables, as typed SQLAlchemy ORM models (the one schema definition).

Alembic migrations (`migrations/versions/`) create exactly these tables; a test checks
that autogenerate finds no difference on SQLite and on PostgreSQL. Token arrays are
packed blobs (`packing.py`) with their lengths beside them. Times are UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar, Literal, get_args

from sqlalchemy import (
    JSON,
    CheckConstraint,
    DateTime,
    Dialect,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from shadowrl.serve.store.signals import Signal

SessionKind = Literal["chat", "agent"]
Endpoint = Literal["chat", "completions"]
CheckpointStatus = Literal["candidate", "deployed", "rejected", "rolled_back"]


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in and out; SQLite keeps no zone, so it is stored as UTC."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime: give the store aware (UTC) times")
        return value.astimezone(UTC).replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _one_of(column: str, values: tuple[str, ...]) -> CheckConstraint:
    listed = ", ".join(f"'{v}'" for v in values)
    return CheckConstraint(f"{column} IN ({listed})", name=f"ck_{column}_known")


class Base(DeclarativeBase):
    # none_as_null: a missing value is SQL NULL, not the JSON text "null"
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        datetime: UTCDateTime(),
        dict[str, Any]: JSON(none_as_null=True),
        list[Any]: JSON(none_as_null=True),
    }


class TraceSession(Base):
    """A conversation (chat requests grouped by `X-Session-Id` or prefix) or an agent run."""

    __tablename__ = "sessions"
    __table_args__ = (_one_of("kind", get_args(SessionKind)),)

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(index=True)
    updated_at: Mapped[datetime]
    api_key_id: Mapped[str | None] = mapped_column(String(64), index=True)
    status: Mapped[str] = mapped_column(String(32), doc="open|running|done|cancelled|error|...")
    task: Mapped[str | None] = mapped_column(Text, doc="the agent's task (agent sessions)")
    task_id: Mapped[str | None] = mapped_column(String(256), doc="a benchmark instance id")
    workspace: Mapped[str | None] = mapped_column(Text, doc="workspace path or repo@commit")
    diff: Mapped[str | None] = mapped_column(Text, doc="the agent's changes as a unified diff")
    checkpoint: Mapped[str | None] = mapped_column(String(512), doc="serving checkpoint")
    info: Mapped[dict[str, Any]] = mapped_column(doc="budgets, token counts, anything else")
    workspace_hash: Mapped[str | None] = mapped_column(
        String(64), doc="content hash of the workspace copy the agent started on"
    )


class TraceRequest(Base):
    """One choice of one `/v1/chat/completions` or `/v1/completions` call, token-exact."""

    __tablename__ = "requests"
    __table_args__ = (
        _one_of("endpoint", get_args(Endpoint)),
        Index("ix_requests_session_created", "session_id", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(96), primary_key=True)
    response_id: Mapped[str] = mapped_column(String(96), index=True, doc="id the client saw")
    choice_index: Mapped[int]
    session_id: Mapped[str] = mapped_column(ForeignKey("sessions.id"))
    parent_id: Mapped[str | None] = mapped_column(
        ForeignKey("requests.id"), doc="the request whose conversation this one extends"
    )
    endpoint: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(index=True)
    api_key_id: Mapped[str | None] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(String(256))
    checkpoint: Mapped[str | None] = mapped_column(String(512))
    prompt_ids: Mapped[bytes] = mapped_column(LargeBinary, doc="int32 LE: the rendered prompt")
    n_prompt: Mapped[int]
    generated_ids: Mapped[bytes] = mapped_column(LargeBinary, doc="int32 LE, untrimmed")
    n_generated: Mapped[int]
    logprobs: Mapped[bytes] = mapped_column(LargeBinary, doc="float32 LE, one per generated")
    versions: Mapped[bytes] = mapped_column(LargeBinary, doc="int32 LE, one per generated")
    forced_ids: Mapped[bytes] = mapped_column(LargeBinary, doc="int32 LE: tool_choice forcing")
    n_forced: Mapped[int]
    temperature: Mapped[float] = mapped_column(Double)
    top_p: Mapped[float] = mapped_column(Double)
    seed: Mapped[int | None]
    max_tokens: Mapped[int | None]
    tools: Mapped[list[Any] | None] = mapped_column(doc="tool schemas offered")
    tool_calls: Mapped[list[Any] | None] = mapped_column(doc="tool calls parsed from the reply")
    finish_reason: Mapped[str] = mapped_column(String(32))
    token_exact: Mapped[bool] = mapped_column(doc="False: prompt re-rendered from edited history")
    queued_s: Mapped[float | None] = mapped_column(Double, doc="arrival to first scheduling")
    first_token_s: Mapped[float | None] = mapped_column(Double, doc="arrival to first token")
    total_s: Mapped[float | None] = mapped_column(Double, doc="arrival to last token")


class TraceStep(Base):
    """One step of an agent session: the tool calls the model made and their results."""

    __tablename__ = "steps"
    __table_args__ = (UniqueConstraint("session_id", "index", name="uq_steps_session_index"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("sessions.id"))
    index: Mapped[int]
    request_id: Mapped[str | None] = mapped_column(ForeignKey("requests.id"))
    created_at: Mapped[datetime]
    tool_calls: Mapped[list[Any]]
    results: Mapped[list[Any]]
    workspace_hash: Mapped[str | None] = mapped_column(
        String(64), doc="content hash of the workspace after the step (None: not taken)"
    )


class Feedback(Base):
    """A raw user signal about a session or one response (rewards are made elsewhere)."""

    __tablename__ = "feedback"
    __table_args__ = (_one_of("signal", get_args(Signal)),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("sessions.id"), index=True)
    response_id: Mapped[str | None] = mapped_column(String(96))
    signal: Mapped[str] = mapped_column(String(32))
    value: Mapped[float | None] = mapped_column(Double, doc="keep: fraction of lines kept")
    at: Mapped[datetime] = mapped_column(doc="when the user gave it")
    received_at: Mapped[datetime]
    idempotency_key: Mapped[str | None] = mapped_column(String(256), unique=True)
    api_key_id: Mapped[str | None] = mapped_column(String(64))


class Checkpoint(Base):
    """The checkpoint registry: what was a candidate, deployed, rejected or rolled back."""

    __tablename__ = "checkpoints"
    __table_args__ = (_one_of("status", get_args(CheckpointStatus)),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    path: Mapped[str] = mapped_column(String(1024), unique=True)
    version: Mapped[int] = mapped_column(doc="policy version of its weights")
    status: Mapped[str] = mapped_column(String(16))
    gate: Mapped[dict[str, Any] | None] = mapped_column(doc="the gate decision, as JSON")
    reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    parent: Mapped[str | None] = mapped_column(
        String(1024), doc="the checkpoint it was trained from"
    )
    cycle: Mapped[int | None] = mapped_column(doc="the real-time cycle that made it")
    deployed_at: Mapped[datetime | None] = mapped_column(doc="when it last went live")
