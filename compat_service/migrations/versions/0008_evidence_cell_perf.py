"""Each evidence cell keeps the perf figures of its newest report that carried them.

``perf`` is the headline of the report's ``perf`` block as JSON text (``compat_service.domain.evidence.perf``),
``perf_at`` that report's ``created_at``: a later ingest replaces the figures only with a newer report's.

Revision ID: 0008_evidence_cell_perf
Revises: 0007_observed_build
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_evidence_cell_perf"
down_revision = "0007_observed_build"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("evidence_cell", sa.Column("perf", sa.Text(), nullable=True))
    op.add_column("evidence_cell", sa.Column("perf_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column("evidence_cell", "perf_at")
    op.drop_column("evidence_cell", "perf")
