"""The checkpoint registry: which checkpoint is live, which came before, what was decided.

Every candidate the real-time loop trains enters as `candidate` and leaves as
`deployed` (the gate promoted it, the server hot-swapped it in), `rejected` (the gate
or an alarm refused it) or, after a deploy, `rolled_back` (a live signal dropped, or a
person asked). The live checkpoint is the latest `deployed` one by `deployed_at`; a
rollback marks it `rolled_back`, which makes the one deployed before it live again.
The server's `POST /admin/rollback` and `shadowrl deploy --rollback` both go through
`rollback_target`, so they agree on what "previous" means.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from shadowrl.serve.store.schema import Checkpoint


@dataclass(frozen=True)
class CheckpointView:
    """One registry row."""

    path: str
    version: int
    status: str
    gate: dict[str, Any] | None
    reason: str | None
    parent: str | None
    cycle: int | None
    created_at: datetime
    deployed_at: datetime | None

    @classmethod
    def of(cls, c: Checkpoint) -> CheckpointView:
        return cls(
            c.path, c.version, c.status, c.gate, c.reason, c.parent, c.cycle,
            c.created_at, c.deployed_at,
        )  # fmt: skip


def history(engine: Engine) -> list[CheckpointView]:
    """Every registered checkpoint, oldest first."""
    with Session(engine) as db:
        rows = db.scalars(select(Checkpoint).order_by(Checkpoint.created_at, Checkpoint.id))
        return [CheckpointView.of(c) for c in rows]


def get(engine: Engine, path: str) -> CheckpointView | None:
    with Session(engine) as db:
        row = db.scalar(select(Checkpoint).where(Checkpoint.path == path))
        return None if row is None else CheckpointView.of(row)


def deployed(engine: Engine) -> list[CheckpointView]:
    """Checkpoints that are deployed (not rolled back), the live one first."""
    stmt = (
        select(Checkpoint)
        .where(Checkpoint.status == "deployed")
        .order_by(Checkpoint.deployed_at.desc(), Checkpoint.id.desc())
    )
    with Session(engine) as db:
        return [CheckpointView.of(c) for c in db.scalars(stmt)]


def live(engine: Engine) -> CheckpointView | None:
    """The checkpoint the server should be serving."""
    rows = deployed(engine)
    return rows[0] if rows else None


def rollback_target(engine: Engine) -> tuple[CheckpointView, CheckpointView] | None:
    """(live, the one deployed before it); None when there is nothing to roll back to."""
    rows = deployed(engine)
    return (rows[0], rows[1]) if len(rows) >= 2 else None


def next_version(engine: Engine) -> int:
    """A policy version no registered checkpoint has (tokens' versions stay unambiguous)."""
    versions = [c.version for c in history(engine)]
    return max(versions, default=-1) + 1
