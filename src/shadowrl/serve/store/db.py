"""Opening the trace store: a URL or a path, the engine, and the schema migrated to head.

`serve.traces` is either a SQLAlchemy URL (`postgresql+psycopg://user@host/db`) or a
file path, which means embedded SQLite (relative paths are under the run dir).
SQLite runs in WAL mode with `synchronous=FULL`: a commit is on disk when it returns,
so a write acknowledged by `TraceWriter` survives a crash of the process or the
machine; WAL lets readers (`shadowrl traces`) run while the server writes. Opening
always runs the Alembic migrations to `head`, so an old store is upgraded in place.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from shadowrl.serve.store.writer import TraceWriter

MIGRATIONS = Path(__file__).with_name("migrations")
PG_MIGRATION_LOCK = 0x5EED7ACE  # advisory lock id: one migrator at a time per database


class StoreError(RuntimeError):
    """The store cannot be opened (bad URL, missing file when one is required)."""


def resolve_url(traces: str, run_dir: str | Path = ".") -> str:
    """A SQLAlchemy URL for `serve.traces`: URLs pass through, paths become SQLite."""
    if "://" in traces:
        try:
            make_url(traces)
        except Exception as e:  # sqlalchemy raises ArgumentError with a good message
            raise StoreError(f"bad trace store URL {traces!r}: {e}") from e
        return traces
    path = Path(traces).expanduser()
    if not path.is_absolute():
        path = Path(run_dir) / path
    return f"sqlite:///{path.resolve()}"


def sqlite_path(url: str) -> Path | None:
    """The database file of a SQLite URL; None for other databases (or in-memory)."""
    u = make_url(url)
    return Path(u.database) if u.get_backend_name() == "sqlite" and u.database else None


def make_engine(url: str) -> Engine:
    """An engine with the settings the store's guarantees rest on (see the top docstring)."""
    path = sqlite_path(url)
    if path is None:
        return create_engine(url, pool_pre_ping=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    # NullPool: a connection per use, so no pooled SQLite handle outlives a fork or thread
    engine = create_engine(url, poolclass=NullPool, connect_args={"timeout": 30})
    event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    for pragma in ("journal_mode=WAL", "synchronous=FULL", "foreign_keys=ON"):
        cur.execute(f"PRAGMA {pragma}")
    cur.close()


def alembic_config() -> AlembicConfig:
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return cfg


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest revision (Alembic `upgrade head`), in one
    transaction; a store already at head is only checked."""
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)  # set-up chatter
    cfg = alembic_config()
    heads = set(ScriptDirectory.from_config(cfg).get_heads())
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":  # two servers starting at once migrate in turn
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": PG_MIGRATION_LOCK})
        if _current_revisions(conn) == heads:
            return
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


def _current_revisions(conn: Connection) -> set[str]:
    if not inspect(conn).has_table("alembic_version"):
        return set()
    return set(conn.scalars(text("SELECT version_num FROM alembic_version")))


def open_engine(url: str, *, must_exist: bool = False) -> Engine:
    """The store's engine, schema migrated to head. `must_exist`: refuse to create a
    new SQLite file (readers asking about a store that was never written)."""
    path = sqlite_path(url)
    if must_exist and path is not None and not path.exists():
        raise StoreError(f"no trace store at {path} (is serve.traces set where it was served?)")
    engine = make_engine(url)
    migrate(engine)
    return engine


class TraceStore:
    """An open store: the engine readers query and the one writer that writes to it."""

    def __init__(self, engine: Engine, max_batch: int = 512) -> None:
        self.engine = engine
        self.writer = TraceWriter(engine, max_batch=max_batch)

    def close(self) -> None:
        """Commit what was submitted, stop the writer, release connections."""
        self.writer.close()
        self.engine.dispose()

    def __enter__(self) -> TraceStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_store(traces: str, run_dir: str | Path = ".", max_batch: int = 512) -> TraceStore:
    """Open (creating and migrating as needed) the store `serve.traces` names."""
    return TraceStore(open_engine(resolve_url(traces, run_dir)), max_batch=max_batch)
