"""PostgreSQL: compress stored report bodies with lz4 instead of pglz.

A report body is ~65 KB of JSON, compressed (TOAST) as it is stored: pglz costs the server ~0.4 ms of CPU per
report, lz4 ~0.1 ms at a similar size on disk (measured on PostgreSQL 15), which at hundreds of reports a
second is a large share of the database's CPU. Servers built without lz4 keep pglz; SQLite stores bodies as
they are, nothing to do there. Only new values are written with lz4; existing rows stay readable as they are.

Revision ID: 0003_report_body_lz4
Revises: 0002_reports_and_evidence
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_report_body_lz4"
down_revision = "0002_reports_and_evidence"
branch_labels = None
depends_on = None


def _postgres_has_lz4() -> bool:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return False
    choices = bind.execute(
        sa.text("SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'")
    ).scalar()
    return "lz4" in (choices or ())


def upgrade() -> None:
    if _postgres_has_lz4():
        op.execute("ALTER TABLE probe_report ALTER COLUMN body SET COMPRESSION lz4")


def downgrade() -> None:
    if _postgres_has_lz4():
        op.execute("ALTER TABLE probe_report ALTER COLUMN body SET COMPRESSION default")
