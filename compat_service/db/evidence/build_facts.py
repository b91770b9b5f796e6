"""Build facts learned from probe reports (revision 0007_observed_build): one row per stored report that
states its build's compiled arch list, written by ingest in the report's transaction and deleted with it.

``observed_arch_lists`` reads them back as the domain's observed facts (agreeing reports only, see
``compat_service.domain.evidence.observed_builds``), which the service's matrix reads below curated rows.
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Field, SQLModel

from compat_service.db.engine import core_table
from compat_service.db.evidence.report_tables import StoredReport  # noqa: F401  (registers probe_report)
from compat_service.domain.evidence.observed_builds import BuildObservation, ObservedFacts, agreeing_builds


class ObservedBuildRow(SQLModel, table=True):
    __tablename__ = "observed_build"
    __table_args__ = (sa.Index("ix_observed_build_key", "torch_version", "torch_build", "platform"),)

    report_id: str = Field(primary_key=True, max_length=36, foreign_key="probe_report.report_id")
    torch_version: str = Field(max_length=64, description="the public release, e.g. '2.7.1'")
    torch_build: str = Field(max_length=32)
    platform: str = Field(max_length=32)
    #: the compiled arch list as reported, space-separated (sm_XY, compute_XY, gfxNNN)
    arch_flags: str = Field(max_length=1024)
    runtime_version: str | None = Field(default=None, max_length=64)
    cudnn_version: str | None = Field(default=None, max_length=64)
    nccl_version: str | None = Field(default=None, max_length=64)
    received_at: dt.datetime


_TABLE = core_table(ObservedBuildRow)


def observation_row(obs: BuildObservation, received_at: dt.datetime) -> dict[str, object]:
    return {
        "report_id": obs.report_id, "torch_version": obs.torch[:64], "torch_build": obs.variant[:32],
        "platform": obs.platform, "arch_flags": " ".join(obs.arch_flags)[:1024],
        "runtime_version": (obs.runtime or None) and obs.runtime[:64],
        "cudnn_version": (obs.cudnn or None) and obs.cudnn[:64],
        "nccl_version": (obs.nccl or None) and obs.nccl[:64],
        "received_at": received_at,
    }


def insert_observations(conn: Connection, rows: list[dict[str, object]]) -> None:
    """Insert the rows of newly stored reports (inside ingest's transaction)."""
    if rows:
        conn.execute(sa.insert(_TABLE), rows)


def delete_observations(conn: Connection, report_ids: list[str]) -> None:
    """Delete the rows of reports being deleted (before the reports: the foreign key)."""
    if report_ids:
        conn.execute(sa.delete(_TABLE).where(_TABLE.c.report_id.in_(report_ids)))


def observed_state(engine: Engine) -> tuple[int, str | None]:
    """(row count, newest received_at): changes whenever a fact may have changed; one cheap query."""
    with engine.connect() as conn:
        count, newest = conn.execute(sa.select(sa.func.count(), sa.func.max(_TABLE.c.received_at))).one()
    return int(count or 0), str(newest) if newest is not None else None


def observed_facts(engine: Engine) -> ObservedFacts:
    """Every build's agreeing observations (newest reports first)."""
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(_TABLE).order_by(_TABLE.c.received_at.desc(), _TABLE.c.report_id)
        ).mappings().all()
    return agreeing_builds(
        BuildObservation(
            report_id=r["report_id"], torch=r["torch_version"], variant=r["torch_build"], platform=r["platform"],
            arch_flags=tuple(r["arch_flags"].split()), runtime=r["runtime_version"], cudnn=r["cudnn_version"],
            nccl=r["nccl_version"],
        )
        for r in rows
    )
