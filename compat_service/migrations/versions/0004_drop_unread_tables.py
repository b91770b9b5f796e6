"""Drop the matrix tables nothing reads: source, build_variant, cuda_toolkit, gpu_arch_list, vendor_plugin.

The importer filled them on every load, but every reader (the resolver, `GET /v1/matrix`, doctor) reads the
validated document kept in ``matrix_load.data``; the torch_release / torch_wheel / torch_python tables stay
(``GET /v1/torch`` queries them). The downgrade recreates the five tables as 0001 made them and fills them
from the newest ``matrix_load`` snapshot, so the older importer, which skips a load whose content hash it
already holds, finds them as it left them.

Revision ID: 0004_drop_unread_tables
Revises: 0003_report_body_lz4
(Revision ids stay within alembic_version.version_num, VARCHAR(32) on PostgreSQL.)
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0004_drop_unread_tables"
down_revision = "0003_report_body_lz4"
branch_labels = None
depends_on = None

DROPPED = ("source", "build_variant", "cuda_toolkit", "gpu_arch_list", "vendor_plugin")


def upgrade() -> None:
    for name in DROPPED:
        op.drop_table(name)


def _recreate() -> dict[str, sa.Table]:
    """The five tables exactly as revision 0001 created them."""
    return {
        "source": op.create_table(
            "source",
            sa.Column("id", sa.Integer(), primary_key=True),
            sa.Column("key", sa.String(128), nullable=False, unique=True),
            sa.Column("title", sa.String(), nullable=False),
            sa.Column("url", sa.String(), nullable=True),
            sa.Column("confidence", sa.String(32), nullable=False),
            sa.Column("retrieved", sa.Date(), nullable=True),
            sa.Column("note", sa.String(), nullable=True),
        ),
        "build_variant": op.create_table(
            "build_variant",
            sa.Column("id", sa.Integer(), primary_key=True),
            sa.Column("label", sa.String(32), nullable=False, unique=True),
            sa.Column("family", sa.String(16), nullable=False),
            sa.Column("runtime", sa.String(32), nullable=True),
            sa.Column("runtime_full", sa.String(32), nullable=True),
            sa.Column("index_url", sa.String(), nullable=False),
            sa.Column("source", sa.JSON(), nullable=False),
        ),
        "cuda_toolkit": op.create_table(
            "cuda_toolkit",
            sa.Column("id", sa.Integer(), primary_key=True),
            sa.Column("version", sa.String(32), nullable=False, unique=True),
            sa.Column("min_driver_linux", sa.String(32), nullable=True),
            sa.Column("min_driver_windows", sa.String(32), nullable=True),
            sa.Column("source", sa.JSON(), nullable=False),
        ),
        "gpu_arch_list": op.create_table(
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
        ),
        "vendor_plugin": op.create_table(
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
        ),
    }


def _rows(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The rows the 0003-era importer wrote for these tables, from a stored MatrixData document."""

    def day(value: str | None) -> dt.date | None:
        return dt.date.fromisoformat(value) if value else None

    vendors = doc["vendor_backends"]
    return {
        "source": [
            {"key": s["key"], "title": s["title"], "url": s.get("url"), "confidence": s["confidence"],
             "retrieved": day(s.get("retrieved")), "note": s.get("note")}
            for s in doc["sources"]["sources"]
        ],
        "build_variant": [
            {"label": v["label"], "family": v["family"], "runtime": v.get("runtime"),
             "runtime_full": v.get("runtime_full"), "index_url": v["index_url"], "source": list(v["source"])}
            for v in doc["build_variants"]["variants"]
        ],
        "cuda_toolkit": [
            {"version": t["version"], "min_driver_linux": t.get("min_driver_linux"),
             "min_driver_windows": t.get("min_driver_windows"), "source": list(t["source"])}
            for t in doc["cuda"]["toolkits"]
        ],
        "gpu_arch_list": [
            {"torch": a["torch"], "variant": a["variant"], "platforms_key": ",".join(sorted(a["platforms"])),
             "platforms": list(a["platforms"]), "archs": list(a["archs"]), "ptx": a.get("ptx"),
             "source": list(a["source"])}
            for a in doc["gpu_archs"]["arch_lists"]
        ],
        "vendor_plugin": [
            {"plugin": "torch_npu", "plugin_version": r["torch_npu"], "torch": r["torch"], "toolkit": r.get("cann"),
             "driver": None, "python": r.get("python"), "source": list(r["source"])}
            for r in vendors["ascend_npu"]
        ] + [
            {"plugin": "torch_mlu", "plugin_version": r["torch_mlu"], "torch": r["torch"],
             "toolkit": r.get("toolkit"), "driver": r.get("driver"), "python": r.get("python"),
             "source": list(r["source"])}
            for r in vendors["cambricon_mlu"]
        ],
    }


def downgrade() -> None:
    tables = _recreate()
    latest = op.get_bind().execute(sa.text("SELECT data FROM matrix_load ORDER BY id DESC LIMIT 1")).scalar()
    if latest is None:
        return
    for name, rows in _rows(json.loads(latest)).items():
        if rows:
            op.bulk_insert(tables[name], rows)
