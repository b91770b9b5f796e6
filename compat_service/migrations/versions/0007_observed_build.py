"""Build facts learned from probe reports: ``observed_build``, one row per report stating its compiled arch list.

Revision ID: 0007_observed_build
Revises: 0006_report_recent_index
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_observed_build"
down_revision = "0006_report_recent_index"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "observed_build",
        sa.Column("report_id", sa.String(length=36), sa.ForeignKey("probe_report.report_id"), primary_key=True),
        sa.Column("torch_version", sa.String(length=64), nullable=False),
        sa.Column("torch_build", sa.String(length=32), nullable=False),
        sa.Column("platform", sa.String(length=32), nullable=False),
        sa.Column("arch_flags", sa.String(length=1024), nullable=False),
        sa.Column("runtime_version", sa.String(length=64), nullable=True),
        sa.Column("cudnn_version", sa.String(length=64), nullable=True),
        sa.Column("nccl_version", sa.String(length=64), nullable=True),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_observed_build_key", "observed_build", ["torch_version", "torch_build", "platform"])


def downgrade() -> None:
    op.drop_index("ix_observed_build_key", table_name="observed_build")
    op.drop_table("observed_build")
