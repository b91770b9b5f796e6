"""Probe reports and the per-cell evidence counters.

Revision ID: 0002_reports_and_evidence
Revises: 0001_matrix_and_tokens
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0002_reports_and_evidence"
down_revision = "0001_matrix_and_tokens"
branch_labels = None
depends_on = None


#: counter rows are updated in place by every report: free room per page keeps updates HOT on PostgreSQL
#: (same as compat_service.db.evidence.tables.COUNTER_TABLE_OPTIONS; a migration does not import models)
_COUNTER_TABLE: dict[str, Any] = {"postgresql_with": {"fillfactor": 50}}


def _counter(name: str) -> sa.Column:
    return sa.Column(name, sa.Integer(), nullable=False, server_default="0")


def upgrade() -> None:
    op.create_table(
        "evidence_cell",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("torch_version", sa.String(64), nullable=False),
        sa.Column("torch_build", sa.String(32), nullable=True),
        sa.Column("python", sa.String(32), nullable=False),
        sa.Column("os", sa.String(16), nullable=False),
        sa.Column("arch", sa.String(32), nullable=False),
        sa.Column("backend", sa.String(32), nullable=False),
        sa.Column("runtime_version", sa.String(64), nullable=True),
        sa.Column("driver_version", sa.String(64), nullable=True),
        sa.Column("device_arch", sa.String(64), nullable=True),
        _counter("reports"),
        _counter("hosts"),
        _counter("passing_hosts"),
        _counter("required_bad_reports"),
        _counter("other_bad_reports"),
        _counter("smoke_passed_reports"),
        sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen", sa.DateTime(timezone=True), nullable=False),
        **_COUNTER_TABLE,
    )
    op.create_index("ix_evidence_cell_declared", "evidence_cell", ["torch_version", "torch_build", "python"])
    op.create_table(
        "evidence_host",
        sa.Column("cell_id", sa.Integer(), sa.ForeignKey("evidence_cell.id"), primary_key=True),
        sa.Column("host_fingerprint", sa.String(128), primary_key=True),
        _counter("reports"),
        _counter("passing_reports"),
        sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen", sa.DateTime(timezone=True), nullable=False),
        **_COUNTER_TABLE,
    )
    op.create_table(
        "evidence_check",
        sa.Column("cell_id", sa.Integer(), sa.ForeignKey("evidence_cell.id"), primary_key=True),
        sa.Column("check_id", sa.String(200), primary_key=True),
        sa.Column("shard", sa.SmallInteger(), primary_key=True, server_default="0"),
        sa.Column("group", sa.String(16), nullable=False),
        _counter("passed"),
        _counter("failed"),
        _counter("unsupported"),
        _counter("skipped"),
        _counter("timeout"),
        _counter("crashed"),
        _counter("error"),
        sa.Column("aten_op", sa.String(200), nullable=True),
        sa.Column("last_failure", sa.Text(), nullable=True),
        **_COUNTER_TABLE,
    )
    op.create_table(
        "probe_report",
        sa.Column("report_id", sa.String(36), primary_key=True),
        sa.Column("cell_id", sa.Integer(), sa.ForeignKey("evidence_cell.id"), nullable=False),
        sa.Column("host_fingerprint", sa.String(128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("body_sha256", sa.String(64), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
    )
    op.create_index("ix_probe_report_cell_received", "probe_report", ["cell_id", "received_at"])


def downgrade() -> None:
    op.drop_index("ix_probe_report_cell_received", table_name="probe_report")
    op.drop_table("probe_report")
    op.drop_table("evidence_check")
    op.drop_table("evidence_host")
    op.drop_index("ix_evidence_cell_declared", table_name="evidence_cell")
    op.drop_table("evidence_cell")
