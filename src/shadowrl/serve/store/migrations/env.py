"""Alembic environment for the trace store: migrations run on the connection `db.migrate`
hands over (never from an ini file), against the ORM metadata in `schema.py`."""

from __future__ import annotations

from alembic import context

from shadowrl.serve.store.schema import Base

connection = context.config.attributes["connection"]
# render_as_batch: SQLite cannot ALTER most things; batch mode copies the table instead
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
