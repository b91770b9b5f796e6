"""The stored probe report (revision 0002_reports_and_evidence): the validated JSON, kept whole.

``report_id`` is the primary key, so a resubmission is an ``INSERT ... ON CONFLICT DO NOTHING`` that
changes nothing; ``body_sha256`` tells an identical resubmission from a different report reusing the id.
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlmodel import Field, SQLModel


class StoredReport(SQLModel, table=True):
    __tablename__ = "probe_report"
    __table_args__ = (
        sa.Index("ix_probe_report_submitter", "submitter_id"),
    )

    report_id: str = Field(primary_key=True, max_length=36, description="the report's UUID, lower-case")
    cell_id: int = Field(foreign_key="evidence_cell.id")
    host_fingerprint: str = Field(max_length=128)
    #: the api_token that submitted it; null: stored before revision 0005 (submitter unknown)
    submitter_id: int | None = None
    created_at: dt.datetime = Field(description="when the probe ran (host clock, UTC)")
    received_at: dt.datetime = Field(description="when the service stored it (UTC)")
    ok: bool
    body_sha256: str = Field(max_length=64)
    body: str = Field(sa_type=sa.Text, description="the validated report as canonical JSON")


# a cell's newest reports in the order GET /v1/evidence lists them (revision 0006)
sa.Index(
    "ix_probe_report_cell_recent",
    StoredReport.cell_id,  # type: ignore[arg-type]
    StoredReport.received_at.desc(),  # type: ignore[attr-defined]
    StoredReport.report_id,
)


class TokenStorage(SQLModel, table=True):
    """What each token has stored (revision 0010_token_storage): the reports it created and their bodies'
    bytes, added to by the ingest transaction that stores them (``SET n = n + k``), so the per-token storage
    quota (ACCELENV_QUOTA_TOKEN_REPORT_BYTES) is decided by the database, never by a read in Python."""

    __tablename__ = "token_storage"

    token_id: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    reports: int = 0
    report_bytes: int = Field(default=0, sa_type=sa.BigInteger)
