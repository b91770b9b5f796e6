"""Store a probe report and add it to its cell's evidence, in one transaction.

Concurrency: several workers (processes and threads) ingest at once and no report may be lost or counted
twice. Every write is an insert-if-absent keyed by something unique, or an increment done by the database
(``SET n = n + k``), never read-modify-write in Python:

1. create the cell row if absent (``ON CONFLICT (key_hash) DO NOTHING``) and read its id, unless this
   process already knows it (``_known_cell_ids``: cells are never deleted);
2. insert the report (``ON CONFLICT (report_id) DO NOTHING``); no row inserted means it is already stored,
   and nothing else changes (idempotent);
3. upsert the host row adding 1 to its counters, ``RETURNING`` them: a count that became 1 is a new host
   (or a new passing host) for the cell. Under concurrency the row lock makes exactly one writer see 1;
4. upsert the per-check counters of the report's shard (report_id modulo CHECK_SHARDS) at once: one statement
   (PostgreSQL) or one executemany (SQLite), sorted by check id so writers of a shard lock rows in one order;
5. increment the cell counters (``WHERE id = :id AND key_hash = :digest``, so a stale cached id is caught).

On PostgreSQL the default READ COMMITTED isolation and the row locks these statements take are enough. On
SQLite writers first queue on ``evidence_write_gate`` (no busy-handler sleeps), then the transaction starts
with ``BEGIN IMMEDIATE``: it takes the write lock up front, so a writer from elsewhere waits (busy_timeout)
instead of failing on a read-to-write lock upgrade.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import threading
import weakref
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlmodel import Session

from compat_service.db.evidence_write_gate import sqlite_write_gate
from compat_service.db.evidence_models import CHECK_SHARDS, EvidenceCell, EvidenceHost
from compat_service.db.reports_models import StoredReport
from compat_service.domain.errors import DatabaseNotReadyError
from compat_service.domain.evidence import CellKey, IngestResult, ReportConflictError, cell_key_of
from compat_service.domain.report import CHECK_STATUSES, MAX_TEXT, ProbeReport
from compat_service.domain.verification import ReportVerdict, classify_report, is_failing


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _as_utc(value: dt.datetime) -> dt.datetime:
    """A report's timestamp in UTC; one without an offset is taken as UTC."""
    return value.astimezone(dt.UTC) if value.tzinfo else value.replace(tzinfo=dt.UTC)


def canonical_json(report: ProbeReport) -> str:
    return report.model_dump_json()


_CELL = EvidenceCell.__table__
_HOST = EvidenceHost.__table__
_REPORT = StoredReport.__table__


def _later(column: sa.ColumnElement, other: sa.ColumnElement) -> sa.ColumnElement:
    """``max(column, other)`` in SQL both databases understand."""
    return sa.case((column < other, other), else_=column)


_CHECK_COLUMNS = ("check_id", "group", *CHECK_STATUSES, "aten_op", "last_failure")
_ADD_COUNTS = ", ".join(f"{s} = evidence_check.{s} + excluded.{s}" for s in CHECK_STATUSES)
_CHECK_CONFLICT = (
    f"ON CONFLICT (cell_id, check_id, shard) DO UPDATE SET {_ADD_COUNTS}, "
    "aten_op = coalesce(excluded.aten_op, evidence_check.aten_op), "
    "last_failure = coalesce(excluded.last_failure, evidence_check.last_failure)"
)
_INSERT_CHECKS = 'INSERT INTO evidence_check (cell_id, shard, check_id, "group", {counts}, aten_op, last_failure) '.format(
    counts=", ".join(CHECK_STATUSES)
)
_CHECK_UPSERT = {
    # The rows travel as ONE jsonb parameter (a list of lists, encoded in C by json.dumps): adapting them
    # as eleven PostgreSQL arrays runs psycopg's array dumper in Python over every element of every row.
    "postgresql": _INSERT_CHECKS
    + "SELECT :cell_id, :shard, "
    + ", ".join(
        f"CAST(e->>{i} AS integer)" if column in CHECK_STATUSES else f"e->>{i}"
        for i, column in enumerate(_CHECK_COLUMNS)
    )
    + " FROM jsonb_array_elements(CAST(:rows AS jsonb)) AS e "
    + _CHECK_CONFLICT,
    # SQLite runs in-process: one prepared statement run per row (executemany, in C) costs less than
    # encoding the rows as JSON and taking them apart again with json_each / json_extract
    "sqlite": _INSERT_CHECKS + f"VALUES ({', '.join('?' * (2 + len(_CHECK_COLUMNS)))}) " + _CHECK_CONFLICT,
}


class _Statements:
    """The ingest statements of one dialect, built once, so SQLAlchemy compiles and caches each once."""

    def __init__(self, dialect: str) -> None:
        insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        self.cell_insert = insert(_CELL).on_conflict_do_nothing(index_elements=["key_hash"])
        self.cell_id = sa.select(_CELL.c.id).where(_CELL.c.key_hash == sa.bindparam("digest"))
        self.report_insert = (
            insert(_REPORT).on_conflict_do_nothing(index_elements=["report_id"]).returning(_REPORT.c.report_id)
        )
        self.stored_sha = sa.select(_REPORT.c.body_sha256).where(_REPORT.c.report_id == sa.bindparam("rid"))
        host = insert(_HOST)
        self.host_upsert = host.on_conflict_do_update(
            index_elements=["cell_id", "host_fingerprint"],
            set_={
                "reports": _HOST.c.reports + host.excluded.reports,
                "passing_reports": _HOST.c.passing_reports + host.excluded.passing_reports,
                "last_seen": _later(_HOST.c.last_seen, host.excluded.last_seen),
            },
        ).returning(_HOST.c.reports, _HOST.c.passing_reports)
        # All of a report's checks at once (a report carries hundreds): on PostgreSQL ONE statement over a
        # jsonb list (one round trip); on SQLite an executemany of a driver statement (see _CHECK_UPSERT).
        # Rows arrive sorted by check id, so writers lock them in one order.
        self.check_upsert_many = dialect == "sqlite"
        upsert = _CHECK_UPSERT[dialect]
        self.check_upsert: Any = upsert if self.check_upsert_many else sa.text(upsert)
        self.cell_update = (
            sa.update(_CELL)
            # the key_hash too: a cached cell id that no longer names this cell updates nothing (see _store)
            .where(_CELL.c.id == sa.bindparam("cid"), _CELL.c.key_hash == sa.bindparam("digest"))
            .values(
                reports=_CELL.c.reports + 1,
                **{
                    name: _CELL.c[name] + sa.bindparam(f"add_{name}")
                    for name in (
                        "hosts", "passing_hosts", "required_bad_reports", "other_bad_reports",
                        "smoke_passed_reports",
                    )
                },
                last_seen=_later(_CELL.c.last_seen, sa.bindparam("now", type_=_CELL.c.last_seen.type)),
            )
        )


@functools.cache
def _statements(dialect: str) -> _Statements:
    return _Statements(dialect)


_STATUS_COLUMN = {status: 2 + i for i, status in enumerate(CHECK_STATUSES)}
_NO_COUNTS = (0,) * len(CHECK_STATUSES)
_ATEN_OP = 2 + len(CHECK_STATUSES)
_LAST_FAILURE = _ATEN_OP + 1


def _check_rows(report: ProbeReport) -> list[tuple[Any, ...]]:
    """One row per check id, in ``_CHECK_COLUMNS`` order, sorted by id (a report may repeat an id; one
    upsert must not touch a row twice). Plain lists, not objects: it runs for every check of every report."""
    sums: dict[str, list[Any]] = {}
    for check in report.checks:
        row = sums.get(check.id)
        if row is None:
            row = sums[check.id] = [check.id, check.group, *_NO_COUNTS, None, None]
        row[_STATUS_COLUMN[check.status]] += 1
        if check.data:
            op = check.data.get("aten_op") or check.data.get("aten")
            if isinstance(op, str):
                row[_ATEN_OP] = op[:200]
        if is_failing(check.group, check.status):
            row[_LAST_FAILURE] = (check.detail or check.status)[:MAX_TEXT]
    return [tuple(sums[check_id]) for check_id in sorted(sums)]


def _begin(session: Session) -> None:
    if session.get_bind().dialect.name == "sqlite":
        session.connection().exec_driver_sql("BEGIN IMMEDIATE")


@dataclass
class _Prepared:
    """Everything computed from the report before the write lock is taken: the locked section (one writer
    at a time on SQLite, row locks on PostgreSQL) only runs statements."""

    key: CellKey
    digest: str
    report_row: dict[str, Any]
    verdict: ReportVerdict
    checks: dict[str, Any]


def _prepare(report: ProbeReport, dialect: str, now: dt.datetime) -> _Prepared:
    key = cell_key_of(report.environment)
    body = canonical_json(report)
    rows = _check_rows(report)
    checks: dict[str, Any] = {"shard": report.report_id.int % CHECK_SHARDS}
    checks["rows"] = json.dumps(rows) if dialect == "postgresql" else rows
    return _Prepared(
        key=key,
        digest=key.digest(),
        report_row={
            "report_id": str(report.report_id),
            "host_fingerprint": report.environment.host_fingerprint,
            "created_at": _as_utc(report.created_at),
            "received_at": now,
            "ok": report.summary.ok,
            "body_sha256": hashlib.sha256(body.encode()).hexdigest(),
            "body": body,
        },
        verdict=classify_report(report.checks),
        checks=checks if rows else {},
    )


def ingest_report(session: Session, report: ProbeReport, *, now: dt.datetime | None = None) -> IngestResult:
    """Store ``report`` and update its cell's evidence; commit. Resubmitting the same report is a no-op.

    Raises ReportConflictError when the report_id is stored with different content.
    """
    now = _as_utc(now) if now is not None else utcnow()
    prepared = _prepare(report, session.get_bind().dialect.name, now)
    with sqlite_write_gate(session.get_bind()):
        return _store(session, prepared, now)


_cell_ids: weakref.WeakKeyDictionary[Engine, dict[str, int]] = weakref.WeakKeyDictionary()
_cell_ids_lock = threading.Lock()


def _known_cell_ids(engine: Engine) -> dict[str, int]:
    """Cell ids by key digest, per engine: cells are never deleted, so after a cell's first report its id
    saves two statements per report. An id gone stale (the database replaced under a running service) is
    caught by the cell update matching no row: that transaction is rolled back and redone uncached."""
    with _cell_ids_lock:
        return _cell_ids.setdefault(engine, {})


class _StaleCellId(Exception):
    pass


def _store(session: Session, p: _Prepared, now: dt.datetime) -> IngestResult:
    known = _known_cell_ids(session.get_bind())
    cached = known.get(p.digest)
    if cached is None:
        return _store_once(session, p, now, None, known)
    try:
        return _store_once(session, p, now, cached, known)
    except (_StaleCellId, sa.exc.IntegrityError):  # an id naming another cell, or no cell (foreign key)
        known.pop(p.digest, None)
        return _store_once(session, p, now, None, known)


def _store_once(
    session: Session, p: _Prepared, now: dt.datetime, cell_id: int | None, known: dict[str, int]
) -> IngestResult:
    report_id = p.report_row["report_id"]
    try:
        _begin(session)
        # Core statements on the session's connection: plain INSERT/UPDATE semantics, no ORM bookkeeping.
        conn = session.connection()
        sql = _statements(conn.dialect.name)
        if cell_id is None:
            key = p.key.model_dump()
            conn.execute(sql.cell_insert, {"key_hash": p.digest, "first_seen": now, "last_seen": now, **key})
            cell_id = conn.execute(sql.cell_id, {"digest": p.digest}).scalar_one()
        inserted = conn.execute(sql.report_insert, {**p.report_row, "cell_id": cell_id}).first()
        if inserted is None:
            stored_sha = conn.execute(sql.stored_sha, {"rid": report_id}).scalar_one()
            session.rollback()
            if stored_sha != p.report_row["body_sha256"]:
                raise ReportConflictError(
                    f"report {report_id} is already stored with different content",
                    hint="a report_id names one probe run; generate a new report_id (uuid4) for a new run",
                )
            return IngestResult(report_id=report_id, created=False, key=p.key)
        if not _add_evidence(conn, sql, cell_id, p, now):
            raise _StaleCellId
        session.commit()
        known[p.digest] = cell_id
    except sa.exc.OperationalError as exc:
        session.rollback()
        raise DatabaseNotReadyError(
            f"could not store report {report_id}: {exc.orig}",
            hint="the database is unavailable or overloaded; retry the submission (it is idempotent)",
        ) from exc
    except BaseException:
        session.rollback()
        raise
    return IngestResult(report_id=report_id, created=True, key=p.key)


def _add_evidence(
    conn: sa.Connection, sql: _Statements, cell_id: int, p: _Prepared, now: dt.datetime
) -> bool:
    """Add the report to its host, check and cell counters; False if ``cell_id`` is not the report's cell."""
    verdict = p.verdict
    passing = int(verdict.passed)
    host_reports, host_passing = conn.execute(
        sql.host_upsert,
        {
            "cell_id": cell_id,
            "host_fingerprint": p.report_row["host_fingerprint"],
            "reports": 1,
            "passing_reports": passing,
            "first_seen": now,
            "last_seen": now,
        },
    ).one()
    if p.checks and sql.check_upsert_many:
        shard = p.checks["shard"]
        conn.exec_driver_sql(sql.check_upsert, [(cell_id, shard, *row) for row in p.checks["rows"]])
    elif p.checks:
        conn.execute(sql.check_upsert, {"cell_id": cell_id, **p.checks})
    updated = conn.execute(
        sql.cell_update,
        {
            "cid": cell_id,
            "digest": p.digest,
            "add_hosts": int(host_reports == 1),
            "add_passing_hosts": int(passing == 1 and host_passing == 1),
            "add_required_bad_reports": int(verdict.required_bad),
            "add_other_bad_reports": int(verdict.other_bad),
            "add_smoke_passed_reports": int(verdict.smoke_passed),
            "now": now,
        },
    )
    return updated.rowcount == 1
