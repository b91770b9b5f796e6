"""Evidence tables (revision 0002_reports_and_evidence): per-cell counters kept up to date by each ingest.

- ``evidence_cell``: one row per evidence cell key (``key_hash`` is unique; NULL key parts compare equal
  through the hash), with the counters ``evidence.status`` reads.
- ``evidence_host``: one row per (cell, host fingerprint): counts distinct hosts and passing hosts.
- ``evidence_submitter``: the same per (cell, token that submitted): distinct and passing submitters.
- ``evidence_check``: results by status, the aten op and the last failure, per (cell, check id, shard). A
  report adds to the rows of one shard (its report_id modulo ``CHECK_SHARDS``), so concurrent submitters
  for the same cell mostly lock different rows; reads add the shards up (``GROUP BY check_id``).

Every counter is changed only by ``UPDATE ... SET n = n + k`` or an upsert adding to it, in the ingest
transaction that stores the report (``evidence_ingest``), never recomputed from the reports.

These rows are rewritten by every report, none of their indexed columns ever changes: on PostgreSQL the
tables keep free room in each page (``COUNTER_TABLE_OPTIONS``) so an update stays on its page (a HOT update,
no index entry written) instead of moving to a new page and adding index entries every time.
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from compat_service.db.evidence.build_facts import ObservedBuildRow  # noqa: F401  (registers observed_build)
from compat_service.db.evidence.report_tables import StoredReport  # noqa: F401  (registers probe_report)
from compat_service.domain.evidence.cells import CheckCounts
from compat_service.domain.evidence.status import CellTally

#: storage options of the counter tables (migration 0002 creates them with the same)
COUNTER_TABLE_OPTIONS = {"postgresql_with": {"fillfactor": 50}}


class EvidenceCell(SQLModel, CellTally, table=True):
    __tablename__ = "evidence_cell"
    __table_args__ = (
        sa.Index("ix_evidence_cell_declared", "torch_version", "torch_build", "python"),
        COUNTER_TABLE_OPTIONS,
    )

    id: int | None = Field(default=None, primary_key=True)
    key_hash: str = Field(max_length=64, unique=True)
    torch_version: str = Field(max_length=64)
    torch_build: str | None = Field(default=None, max_length=32)
    python: str = Field(max_length=32)
    os: str = Field(max_length=16)
    arch: str = Field(max_length=32)
    backend: str = Field(max_length=32)
    runtime_version: str | None = Field(default=None, max_length=64)
    driver_version: str | None = Field(default=None, max_length=64)
    device_arch: str | None = Field(default=None, max_length=64)
    # the counters: CellTally's fields, declared once (in the domain, which reads them)
    first_seen: dt.datetime
    last_seen: dt.datetime
    #: the perf headline (JSON, ``domain.evidence.perf``) of the newest report that carried one, and its time
    perf: str | None = Field(default=None, sa_type=sa.Text)
    perf_at: dt.datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))


class EvidenceHost(SQLModel, table=True):
    __tablename__ = "evidence_host"
    __table_args__ = (COUNTER_TABLE_OPTIONS,)

    cell_id: int = Field(foreign_key="evidence_cell.id", primary_key=True)
    host_fingerprint: str = Field(max_length=128, primary_key=True)
    reports: int = 0
    passing_reports: int = 0
    first_seen: dt.datetime
    last_seen: dt.datetime


class EvidenceSubmitter(SQLModel, table=True):
    """Per (cell, token): distinct submitters and passing submitters (revision 0005). Submitter 0 stands
    for the reports stored before that revision."""

    __tablename__ = "evidence_submitter"
    __table_args__ = (COUNTER_TABLE_OPTIONS,)

    cell_id: int = Field(foreign_key="evidence_cell.id", primary_key=True)
    submitter_id: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    reports: int = 0
    passing_reports: int = 0
    first_seen: dt.datetime
    last_seen: dt.datetime


#: rows per (cell, check): how many reports for one cell can update its check counters at the same time
CHECK_SHARDS = 16


class EvidenceCheck(SQLModel, CheckCounts, table=True):
    __tablename__ = "evidence_check"
    __table_args__ = (COUNTER_TABLE_OPTIONS,)

    cell_id: int = Field(foreign_key="evidence_cell.id", primary_key=True)
    check_id: str = Field(max_length=200, primary_key=True)
    shard: int = Field(default=0, primary_key=True, ge=0, lt=CHECK_SHARDS)
    group: str = Field(max_length=16)
    # the counts by status: CheckCounts' fields, declared once (in the domain, which reads them)
    aten_op: str | None = Field(default=None, max_length=200)
    last_failure: str | None = Field(default=None, sa_type=sa.Text)
