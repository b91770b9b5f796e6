"""Evidence per submitter (the token that sent a report), so one token cannot verify a cell alone.

- ``probe_report.submitter_id``: the token that submitted the report (null: stored before this revision);
  indexed, so an admin can withdraw a token's reports;
- ``evidence_submitter``: one row per (cell, token), like ``evidence_host``; the reports stored before this
  revision are counted as one submitter, id 0 ("unknown"), which is what they are;
- ``evidence_cell.submitters`` / ``passing_submitters``: the counters ``verification`` reads.

Revision ID: 0005_evidence_submitters
Revises: 0004_drop_unread_tables
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0005_evidence_submitters"
down_revision = "0004_drop_unread_tables"
branch_labels = None
depends_on = None

#: as in 0002 (counter rows are updated in place: free room per page keeps the updates HOT)
_COUNTER_TABLE: dict[str, Any] = {"postgresql_with": {"fillfactor": 50}}


def _counter(name: str) -> sa.Column:
    return sa.Column(name, sa.Integer(), nullable=False, server_default="0")


def upgrade() -> None:
    with op.batch_alter_table("probe_report") as batch:
        # no foreign key: on SQLite adding one rebuilds the table; tokens are never deleted anyway
        batch.add_column(sa.Column("submitter_id", sa.Integer(), nullable=True))
    op.create_index("ix_probe_report_submitter", "probe_report", ["submitter_id"])
    with op.batch_alter_table("evidence_cell") as batch:
        batch.add_column(_counter("submitters"))
        batch.add_column(_counter("passing_submitters"))
    op.create_table(
        "evidence_submitter",
        sa.Column("cell_id", sa.Integer(), sa.ForeignKey("evidence_cell.id"), primary_key=True),
        sa.Column("submitter_id", sa.Integer(), primary_key=True),
        _counter("reports"),
        _counter("passing_reports"),
        sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen", sa.DateTime(timezone=True), nullable=False),
        **_COUNTER_TABLE,
    )
    # what was stored before: one unknown submitter per cell
    op.execute(
        "INSERT INTO evidence_submitter (cell_id, submitter_id, reports, passing_reports, first_seen, last_seen) "
        "SELECT c.id, 0, c.reports, coalesce((SELECT sum(h.passing_reports) FROM evidence_host h "
        "WHERE h.cell_id = c.id), 0), c.first_seen, c.last_seen FROM evidence_cell c WHERE c.reports > 0"
    )
    op.execute(
        "UPDATE evidence_cell SET submitters = 1, passing_submitters = CASE WHEN passing_hosts > 0 THEN 1 "
        "ELSE 0 END WHERE reports > 0"
    )


def downgrade() -> None:
    op.drop_table("evidence_submitter")
    with op.batch_alter_table("evidence_cell") as batch:
        batch.drop_column("passing_submitters")
        batch.drop_column("submitters")
    op.drop_index("ix_probe_report_submitter", table_name="probe_report")
    with op.batch_alter_table("probe_report") as batch:
        batch.drop_column("submitter_id")
