"""The trace store: every served request, token-exact, in a real database.

SQLAlchemy over embedded SQLite (WAL, the default, a file under the run dir) or
PostgreSQL (by URL); the schema is `schema.py`, versioned by the Alembic migrations
in `migrations/`, applied on open. Writes go through one `TraceWriter` (group
commit, `writer.py`); reads through `queries.py` and `export.py`. README.md in this
directory describes the tables and the commit guarantee.
"""

from shadowrl.serve.store.db import StoreError, TraceStore, open_store, resolve_url
from shadowrl.serve.store.records import (
    CheckpointRecord,
    CheckpointUpdate,
    FeedbackRecord,
    NewSession,
    RequestRecord,
    SessionUpdate,
    StepRecord,
    Write,
)
from shadowrl.serve.store.writer import TraceWriter, WriterClosed

__all__ = [
    "CheckpointRecord",
    "CheckpointUpdate",
    "FeedbackRecord",
    "NewSession",
    "RequestRecord",
    "SessionUpdate",
    "StepRecord",
    "StoreError",
    "TraceStore",
    "TraceWriter",
    "Write",
    "WriterClosed",
    "open_store",
    "resolve_url",
]
