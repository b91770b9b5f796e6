"""What each report token has stored, for the per-token storage quota (ACCELENV_QUOTA_TOKEN_REPORT_BYTES).

- ``token_storage``: one row per token that stored a report: the reports it created and the bytes of
  their stored bodies; filled here from the reports already stored (those before revision 0005 have no
  submitter and count for nobody).

Revision ID: 0010_token_storage
Revises: 0009_token_owner
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_token_storage"
down_revision = "0009_token_owner"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "token_storage",
        sa.Column("token_id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("reports", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("report_bytes", sa.BigInteger(), nullable=False, server_default="0"),
    )
    # bytes of the UTF-8 body, as the ingest counts them (length() would count characters)
    size = "octet_length(body)" if op.get_bind().dialect.name == "postgresql" else "length(CAST(body AS BLOB))"
    op.execute(
        "INSERT INTO token_storage (token_id, reports, report_bytes) "
        f"SELECT submitter_id, count(*), coalesce(sum({size}), 0) FROM probe_report "
        "WHERE submitter_id IS NOT NULL GROUP BY submitter_id"
    )


def downgrade() -> None:
    op.drop_table("token_storage")
