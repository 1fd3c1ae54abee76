"""realtime registry: a checkpoint's parent, cycle and deploy time

Revision ID: 0002_realtime
Revises: 0001
Create Date: 2026-12-01

The real-time loop (issue 20) records which checkpoint each candidate was trained
from, in which cycle, and when a checkpoint went live: the live checkpoint is the
latest `deployed` one, and a rollback restores the one deployed before it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_realtime"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("checkpoints") as batch:
        batch.add_column(sa.Column("parent", sa.String(length=1024), nullable=True))
        batch.add_column(sa.Column("cycle", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("deployed_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("checkpoints") as batch:
        batch.drop_column("deployed_at")
        batch.drop_column("cycle")
        batch.drop_column("parent")
