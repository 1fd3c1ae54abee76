"""What the server writes into the trace store: one frozen record per write.

Each record knows how to apply itself to an open connection (`apply`); the
`TraceWriter` applies a batch of them, in submission order, in one transaction. They
are plain values, built on the request path and handed to the writer thread, so no
ORM object ever crosses threads. Lengths are checked when a record is made: a
request whose logprobs do not match its tokens is refused before it reaches the queue.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import Connection, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite

from shadowrl.serve.store.packing import pack_floats, pack_ints
from shadowrl.serve.store.schema import (
    Checkpoint,
    CheckpointStatus,
    Endpoint,
    Feedback,
    SessionKind,
    TraceRequest,
    TraceSession,
    TraceStep,
    utcnow,
)
from shadowrl.serve.store.signals import Signal


class Write(Protocol):
    """One unit of work for the writer; `apply` runs inside the batch's transaction."""

    def apply(self, conn: Connection) -> None: ...


@dataclass(frozen=True)
class NewSession:
    id: str
    kind: SessionKind = "chat"
    api_key_id: str | None = None
    status: str = "open"
    task: str | None = None
    task_id: str | None = None
    workspace: str | None = None
    checkpoint: str | None = None
    info: dict[str, Any] = field(default_factory=dict)
    workspace_hash: str | None = None  # an agent session's starting workspace
    created_at: datetime = field(default_factory=utcnow)

    def apply(self, conn: Connection) -> None:
        values = {k: getattr(self, k) for k in self.__dataclass_fields__}
        conn.execute(insert(TraceSession).values(**values, updated_at=self.created_at))


@dataclass(frozen=True)
class SessionUpdate:
    """New status / diff / info of a session; None leaves a field as it is."""

    id: str
    status: str | None = None
    diff: str | None = None
    info: dict[str, Any] | None = None
    at: datetime = field(default_factory=utcnow)

    def apply(self, conn: Connection) -> None:
        fields = (("status", self.status), ("diff", self.diff), ("info", self.info))
        changes = {k: v for k, v in fields if v is not None}
        stmt = update(TraceSession).where(TraceSession.id == self.id)
        if conn.execute(stmt.values(**changes, updated_at=self.at)).rowcount != 1:
            raise KeyError(f"no session {self.id!r}")


@dataclass(frozen=True)
class RequestRecord:
    """One choice of one completion call, token-exact (see `schema.TraceRequest`)."""

    id: str
    response_id: str
    session_id: str
    endpoint: Endpoint
    model: str
    prompt_ids: Sequence[int]
    generated_ids: Sequence[int]
    logprobs: Sequence[float]
    versions: Sequence[int]
    finish_reason: str
    temperature: float
    top_p: float
    choice_index: int = 0
    seed: int | None = None
    max_tokens: int | None = None
    forced_ids: Sequence[int] = ()
    tools: list[Any] | None = None
    tool_calls: list[Any] | None = None
    token_exact: bool = True
    parent_id: str | None = None
    api_key_id: str | None = None
    checkpoint: str | None = None
    queued_s: float | None = None
    first_token_s: float | None = None
    total_s: float | None = None
    created_at: datetime = field(default_factory=utcnow)

    def __post_init__(self) -> None:
        n = len(self.generated_ids)
        if not len(self.logprobs) == len(self.versions) == n:
            raise ValueError(
                f"request {self.id}: {n} generated ids but {len(self.logprobs)} logprobs "
                f"and {len(self.versions)} versions"
            )

    def apply(self, conn: Connection) -> None:
        blobs = {
            "prompt_ids": pack_ints(self.prompt_ids),
            "n_prompt": len(self.prompt_ids),
            "generated_ids": pack_ints(self.generated_ids),
            "n_generated": len(self.generated_ids),
            "logprobs": pack_floats(self.logprobs),
            "versions": pack_ints(self.versions),
            "forced_ids": pack_ints(self.forced_ids),
            "n_forced": len(self.forced_ids),
        }
        plain = {k: getattr(self, k) for k in self.__dataclass_fields__ if k not in blobs}
        conn.execute(insert(TraceRequest).values(**plain, **blobs))
        touch = update(TraceSession).where(TraceSession.id == self.session_id)
        conn.execute(touch.values(updated_at=self.created_at))


@dataclass(frozen=True)
class StepRecord:
    """Step `index` of an agent session: the model's tool calls and what they returned."""

    session_id: str
    index: int
    tool_calls: list[Any]
    results: list[Any]
    request_id: str | None = None
    workspace_hash: str | None = None  # the workspace after the step (`workspaces.ContentHasher`)
    created_at: datetime = field(default_factory=utcnow)

    def apply(self, conn: Connection) -> None:
        values = {k: getattr(self, k) for k in self.__dataclass_fields__}
        conn.execute(insert(TraceStep).values(**values))


@dataclass(frozen=True)
class FeedbackRecord:
    """A user's signal. A second record with the same idempotency key is a no-op."""

    session_id: str
    signal: Signal
    value: float | None = None
    response_id: str | None = None
    idempotency_key: str | None = None
    api_key_id: str | None = None
    at: datetime = field(default_factory=utcnow)
    received_at: datetime = field(default_factory=utcnow)
    # the id of the row that holds it (a repeat: the first one's), set by `apply`
    stored: list[int] = field(default_factory=list, compare=False, repr=False)

    def apply(self, conn: Connection) -> None:
        values = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "stored"}
        if self.idempotency_key is None:
            row = conn.execute(insert(Feedback).values(**values).returning(Feedback.id))
            self.stored[:] = [row.scalar_one()]
            return
        dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
        stmt = dialect.insert(Feedback).values(**values)
        conn.execute(stmt.on_conflict_do_nothing(index_elements=["idempotency_key"]))
        same = select(Feedback.id).where(Feedback.idempotency_key == self.idempotency_key)
        self.stored[:] = [conn.execute(same).scalar_one()]


@dataclass(frozen=True)
class CheckpointRecord:
    """A checkpoint entering the registry (usually as a candidate)."""

    path: str
    version: int
    status: CheckpointStatus = "candidate"
    gate: dict[str, Any] | None = None
    reason: str | None = None
    parent: str | None = None
    cycle: int | None = None
    deployed_at: datetime | None = None
    created_at: datetime = field(default_factory=utcnow)

    def apply(self, conn: Connection) -> None:
        values = {k: getattr(self, k) for k in self.__dataclass_fields__}
        conn.execute(insert(Checkpoint).values(**values, updated_at=self.created_at))


@dataclass(frozen=True)
class CheckpointUpdate:
    """A registry decision: deployed, rejected or rolled back, with the gate's result.
    A deploy also stamps `deployed_at` (the live checkpoint is the latest deployed)."""

    path: str
    status: CheckpointStatus
    gate: dict[str, Any] | None = None
    reason: str | None = None
    at: datetime = field(default_factory=utcnow)

    def apply(self, conn: Connection) -> None:
        changes: dict[str, Any] = {"status": self.status, "updated_at": self.at}
        if self.status == "deployed":
            changes["deployed_at"] = self.at
        changes |= {
            k: v for k, v in (("gate", self.gate), ("reason", self.reason)) if v is not None
        }
        stmt = update(Checkpoint).where(Checkpoint.path == self.path).values(**changes)
        if conn.execute(stmt).rowcount != 1:
            raise KeyError(f"no checkpoint {self.path!r}")
