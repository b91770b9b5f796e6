"""Matrix tables, matrix_load bookkeeping and API tokens.

Revision ID: 0001_matrix_and_tokens
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_matrix_and_tokens"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "matrix_load",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("source_path", sa.String(1024), nullable=False),
        sa.Column("loaded_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
    )
    op.create_table(
        "source",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("key", sa.String(128), nullable=False, unique=True),
        sa.Column("title", sa.String(), nullable=False),
        sa.Column("url", sa.String(), nullable=True),
        sa.Column("confidence", sa.String(32), nullable=False),
        sa.Column("retrieved", sa.Date(), nullable=True),
        sa.Column("note", sa.String(), nullable=True),
    )
    op.create_table(
        "build_variant",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("label", sa.String(32), nullable=False, unique=True),
        sa.Column("family", sa.String(16), nullable=False),
        sa.Column("runtime", sa.String(32), nullable=True),
        sa.Column("runtime_full", sa.String(32), nullable=True),
        sa.Column("index_url", sa.String(), nullable=False),
        sa.Column("source", sa.JSON(), nullable=False),
    )
    op.create_table(
        "torch_release",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("version", sa.String(32), nullable=False, unique=True),
        sa.Column("minor", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("release_date", sa.Date(), nullable=True),
        sa.Column("torchvision", sa.String(32), nullable=True),
        sa.Column("torchaudio", sa.String(32), nullable=True),
        sa.Column("triton", sa.String(32), nullable=True),
        sa.Column("index_option", sa.String(32), nullable=True),
        sa.Column("sort_key", sa.String(64), nullable=False),
    )
    op.create_index("ix_torch_release_minor", "torch_release", ["minor"])
    op.create_index("ix_torch_release_sort_key", "torch_release", ["sort_key"])
    for name, column in (("torch_wheel", "label"), ("torch_python", "python")):
        extra = [sa.Column("family", sa.String(16), nullable=False)] if name == "torch_wheel" else []
        op.create_table(
            name,
            sa.Column("id", sa.Integer(), primary_key=True),
            sa.Column(
                "torch_version",
                sa.String(32),
                sa.ForeignKey("torch_release.version", ondelete="CASCADE"),
                nullable=False,
            ),
            sa.Column(column, sa.String(32 if column == "label" else 8), nullable=False),
            *extra,
            sa.Column("platform", sa.String(32), nullable=False),
            sa.UniqueConstraint("torch_version", column, "platform"),
        )
        op.create_index(f"ix_{name}_{column}", name, [column])
    op.create_table(
        "cuda_toolkit",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("version", sa.String(32), nullable=False, unique=True),
        sa.Column("min_driver_linux", sa.String(32), nullable=True),
        sa.Column("min_driver_windows", sa.String(32), nullable=True),
        sa.Column("source", sa.JSON(), nullable=False),
    )
    op.create_table(
        "gpu_arch_list",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("torch", sa.String(64), nullable=False),
        sa.Column("variant", sa.String(32), nullable=False),
        sa.Column("platforms_key", sa.String(255), nullable=False),
        sa.Column("platforms", sa.JSON(), nullable=False),
        sa.Column("archs", sa.JSON(), nullable=False),
        sa.Column("ptx", sa.String(16), nullable=True),
        sa.Column("source", sa.JSON(), nullable=False),
        sa.UniqueConstraint("torch", "variant", "platforms_key"),
    )
    op.create_table(
        "vendor_plugin",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("plugin", sa.String(32), nullable=False),
        sa.Column("plugin_version", sa.String(64), nullable=False),
        sa.Column("torch", sa.String(64), nullable=False),
        sa.Column("toolkit", sa.String(64), nullable=True),
        sa.Column("driver", sa.String(64), nullable=True),
        sa.Column("python", sa.JSON(), nullable=True),
        sa.Column("source", sa.JSON(), nullable=False),
        sa.UniqueConstraint("plugin", "plugin_version", "torch"),
    )
    op.create_table(
        "api_token",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("scope", sa.String(16), nullable=False),
        sa.Column("note", sa.String(255), nullable=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
    )


def downgrade() -> None:
    for name in (
        "api_token",
        "vendor_plugin",
        "gpu_arch_list",
        "cuda_toolkit",
        "torch_python",
        "torch_wheel",
        "torch_release",
        "build_variant",
        "source",
        "matrix_load",
    ):
        op.drop_table(name)
