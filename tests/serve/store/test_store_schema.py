"""The migrated schema is the ORM schema, on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

from shadowrl.serve.store import FeedbackRecord, NewSession, TraceStore, resolve_url
from shadowrl.serve.store.db import alembic_config, migrate, open_engine
from shadowrl.serve.store.schema import Base

TABLES = {"sessions", "requests", "steps", "feedback", "checkpoints", "alembic_version"}


def test_migrations_create_exactly_the_models(open_store: Callable[..., TraceStore]) -> None:
    store = open_store()
    with store.engine.connect() as conn:
        assert set(inspect(conn).get_table_names()) == TABLES
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        assert diff == []
        heads = ScriptDirectory.from_config(alembic_config()).get_heads()
        assert [conn.scalar(text("SELECT version_num FROM alembic_version"))] == heads


def test_reopening_migrates_nothing_and_keeps_data(
    open_store: Callable[..., TraceStore],
) -> None:
    store = open_store()
    store.writer.submit(NewSession("s1")).result()
    migrate(store.engine)  # what every later open does
    with store.engine.connect() as conn:
        assert conn.scalar(text("SELECT count(*) FROM sessions")) == 1


def test_sqlite_runs_in_wal_mode(tmp_path: Path) -> None:
    engine = open_engine(resolve_url("traces.db", tmp_path))
    with engine.connect() as conn:
        assert conn.scalar(text("PRAGMA journal_mode")) == "wal"
        assert conn.scalar(text("PRAGMA synchronous")) == 2  # FULL
        assert conn.scalar(text("PRAGMA foreign_keys")) == 1
    engine.dispose()
    assert (tmp_path / "traces.db").exists()


def test_database_refuses_unknown_signals_and_dangling_sessions(
    open_store: Callable[..., TraceStore],
) -> None:
    w = open_store().writer
    w.submit(NewSession("s1")).result()
    with pytest.raises(IntegrityError):
        w.submit(FeedbackRecord("s1", "meh")).result()  # type: ignore[arg-type]
    with pytest.raises(IntegrityError):
        w.submit(FeedbackRecord("no-such-session", "accept")).result()


def test_times_come_back_aware_utc(open_store: Callable[..., TraceStore]) -> None:
    from shadowrl.serve.store.queries import get_session

    store = open_store()
    t = datetime(2026, 12, 1, 10, 0, 0, 123456, tzinfo=UTC)
    store.writer.submit(NewSession("s1", created_at=t)).result()
    view = get_session(store.engine, "s1")
    assert view is not None and view.session.created_at == t
    assert view.session.created_at.tzinfo is not None
