"""Tokens carry an owner; evidence counts submitters by owner, so two tokens of one owner verify nothing.

- ``api_token.owner``: the person or organisation holding the token (set by the admin,
  `accelenv token create --owner ORG`); each token stored before this revision is its own owner,
  ``token-<id>``, which is what the counting assumed so far;
- ``api_token.owner_key``: the id of the owner's first token. ``evidence_submitter.submitter_id`` holds it
  from now on (it held the token id, which for the tokens before this revision is the same number), so the
  counters need no rewrite.

Revision ID: 0009_token_owner
Revises: 0008_evidence_cell_perf
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_token_owner"
down_revision = "0008_evidence_cell_perf"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_token") as batch:
        batch.add_column(sa.Column("owner", sa.String(64), nullable=True))
        batch.add_column(sa.Column("owner_key", sa.Integer(), nullable=True))
    op.execute("UPDATE api_token SET owner = 'token-' || CAST(id AS VARCHAR(16)), owner_key = id")
    op.create_index("ix_api_token_owner", "api_token", ["owner"])


def downgrade() -> None:
    op.drop_index("ix_api_token_owner", table_name="api_token")
    with op.batch_alter_table("api_token") as batch:
        batch.drop_column("owner_key")
        batch.drop_column("owner")
