"""workspace hashes: an agent session's starting workspace and the workspace after each step

Revision ID: 0003_workspace_hashes
Revises: 0002_realtime
Create Date: 2026-12-02

Branching a recorded session (issue 35) rebuilds its sandbox by re-running the recorded
tool calls; a rebuilt step is faithful only when its workspace hashes as the recorded
one did. Rows written before this revision have no hash (NULL): they give no branch point.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_workspace_hashes"
down_revision = "0002_realtime"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table in ("sessions", "steps"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("workspace_hash", sa.String(length=64), nullable=True))


def downgrade() -> None:
    for table in ("steps", "sessions"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("workspace_hash")
