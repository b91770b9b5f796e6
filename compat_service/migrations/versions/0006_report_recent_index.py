"""The recent reports of a cell from an index in the order they are listed: ``(cell_id, received_at DESC,
report_id)`` replaces ``(cell_id, received_at)``.

`GET /v1/evidence` lists the 20 newest report ids of a cell (``ORDER BY received_at DESC, report_id``). The
old index had the cell's rows but not in that order (the directions are mixed), so every read fetched and
sorted all of a cell's reports (343 of them, 3 to 10 ms, at 1 000 000 reports: benchmarks/bench_scale.md);
this one is read in order and stops after 20. It leads with the same columns, so it serves every lookup the
old one did (nothing else reads ``probe_report`` by cell), and ingest still writes one index per report.

Revision ID: 0006_report_recent_index
Revises: 0005_evidence_submitters
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_report_recent_index"
down_revision = "0005_evidence_submitters"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_probe_report_cell_recent", "probe_report", ["cell_id", sa.text("received_at DESC"), "report_id"]
    )
    op.drop_index("ix_probe_report_cell_received", table_name="probe_report")


def downgrade() -> None:
    op.create_index("ix_probe_report_cell_received", "probe_report", ["cell_id", "received_at"])
    op.drop_index("ix_probe_report_cell_recent", table_name="probe_report")
