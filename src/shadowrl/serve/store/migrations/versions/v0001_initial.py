"""initial schema: sessions, requests, steps, feedback, checkpoints

Revision ID: 0001
Revises:
Create Date: 2026-12-01

The schema is `schema.py` at this revision; written out in full so later changes to
`schema.py` need a new revision (a test compares the migrated schema with the models).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "checkpoints",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("path", sa.String(length=1024), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("gate", sa.JSON(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "status IN ('candidate', 'deployed', 'rejected', 'rolled_back')", name="ck_status_known"
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("path"),
    )
    op.create_table(
        "sessions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("api_key_id", sa.String(length=64), nullable=True),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("task", sa.Text(), nullable=True),
        sa.Column("task_id", sa.String(length=256), nullable=True),
        sa.Column("workspace", sa.Text(), nullable=True),
        sa.Column("diff", sa.Text(), nullable=True),
        sa.Column("checkpoint", sa.String(length=512), nullable=True),
        sa.Column("info", sa.JSON(), nullable=False),
        sa.CheckConstraint("kind IN ('chat', 'agent')", name="ck_kind_known"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_sessions_api_key_id"), ["api_key_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_sessions_created_at"), ["created_at"], unique=False)

    op.create_table(
        "feedback",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column("response_id", sa.String(length=96), nullable=True),
        sa.Column("signal", sa.String(length=32), nullable=False),
        sa.Column("value", sa.Double(), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("idempotency_key", sa.String(length=256), nullable=True),
        sa.Column("api_key_id", sa.String(length=64), nullable=True),
        sa.CheckConstraint(
            "signal IN ('accept', 'reject', 'keep', 'revert', 'thumbs_up', 'thumbs_down', 'followup_dissatisfied', 'followup_satisfied', 'silent')",
            name="ck_signal_known",
        ),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("idempotency_key"),
    )
    with op.batch_alter_table("feedback", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_feedback_session_id"), ["session_id"], unique=False)

    op.create_table(
        "requests",
        sa.Column("id", sa.String(length=96), nullable=False),
        sa.Column("response_id", sa.String(length=96), nullable=False),
        sa.Column("choice_index", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column("parent_id", sa.String(length=96), nullable=True),
        sa.Column("endpoint", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("api_key_id", sa.String(length=64), nullable=True),
        sa.Column("model", sa.String(length=256), nullable=False),
        sa.Column("checkpoint", sa.String(length=512), nullable=True),
        sa.Column("prompt_ids", sa.LargeBinary(), nullable=False),
        sa.Column("n_prompt", sa.Integer(), nullable=False),
        sa.Column("generated_ids", sa.LargeBinary(), nullable=False),
        sa.Column("n_generated", sa.Integer(), nullable=False),
        sa.Column("logprobs", sa.LargeBinary(), nullable=False),
        sa.Column("versions", sa.LargeBinary(), nullable=False),
        sa.Column("forced_ids", sa.LargeBinary(), nullable=False),
        sa.Column("n_forced", sa.Integer(), nullable=False),
        sa.Column("temperature", sa.Double(), nullable=False),
        sa.Column("top_p", sa.Double(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=True),
        sa.Column("max_tokens", sa.Integer(), nullable=True),
        sa.Column("tools", sa.JSON(), nullable=True),
        sa.Column("tool_calls", sa.JSON(), nullable=True),
        sa.Column("finish_reason", sa.String(length=32), nullable=False),
        sa.Column("token_exact", sa.Boolean(), nullable=False),
        sa.Column("queued_s", sa.Double(), nullable=True),
        sa.Column("first_token_s", sa.Double(), nullable=True),
        sa.Column("total_s", sa.Double(), nullable=True),
        sa.CheckConstraint("endpoint IN ('chat', 'completions')", name="ck_endpoint_known"),
        sa.ForeignKeyConstraint(
            ["parent_id"],
            ["requests.id"],
        ),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("requests", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_requests_created_at"), ["created_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_requests_response_id"), ["response_id"], unique=False)
        batch_op.create_index(
            "ix_requests_session_created", ["session_id", "created_at"], unique=False
        )

    op.create_table(
        "steps",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column("index", sa.Integer(), nullable=False),
        sa.Column("request_id", sa.String(length=96), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("tool_calls", sa.JSON(), nullable=False),
        sa.Column("results", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["request_id"],
            ["requests.id"],
        ),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("session_id", "index", name="uq_steps_session_index"),
    )


def downgrade() -> None:
    op.drop_table("steps")
    with op.batch_alter_table("requests", schema=None) as batch_op:
        batch_op.drop_index("ix_requests_session_created")
        batch_op.drop_index(batch_op.f("ix_requests_response_id"))
        batch_op.drop_index(batch_op.f("ix_requests_created_at"))

    op.drop_table("requests")
    with op.batch_alter_table("feedback", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_feedback_session_id"))

    op.drop_table("feedback")
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_sessions_created_at"))
        batch_op.drop_index(batch_op.f("ix_sessions_api_key_id"))

    op.drop_table("sessions")
    op.drop_table("checkpoints")
