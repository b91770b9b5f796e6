"""Store probe reports and add them to their cells' evidence, one transaction per batch (a single report is
a batch of one). A batch's counts are summed in Python first, so each counter row (host, check, cell) is
written once per batch, not once per report; the steps below run per batch, each in sorted key order.

Concurrency: several workers (processes and threads) ingest at once and no report may be lost or counted
twice. Every write is an insert-if-absent keyed by something unique, or an increment done by the database
(``SET n = n + k``), never read-modify-write in Python:

1. create the cell row if absent (``ON CONFLICT (key_hash) DO NOTHING``) and read its id, unless this
   process already knows it (``_known_cell_ids``: cells are never deleted);
2. insert the report (``ON CONFLICT (report_id) DO NOTHING``); no row inserted means it is already stored,
   and nothing else changes (idempotent);
3. upsert the host row adding the batch's reports to its counters, ``RETURNING`` them: a count equal to
   what this batch added is a new host (or a new passing host) for the cell. Under concurrency the row lock
   makes exactly one writer see that;
4. upsert the per-check counters of one shard per cell (its first report's id modulo CHECK_SHARDS) at
   once: one statement (PostgreSQL) or one executemany (SQLite), sorted by check id so writers of a shard
   lock rows in one order;
5. increment the cell counters (``WHERE id = :id AND key_hash = :digest``, so a stale cached id is caught).

On PostgreSQL the default READ COMMITTED isolation and the row locks these statements take are enough. On
SQLite writers first queue on ``evidence_write_gate`` (no busy-handler sleeps), then the transaction starts
with ``BEGIN IMMEDIATE``: it takes the write lock up front, so a writer from elsewhere waits (busy_timeout)
instead of failing on a read-to-write lock upgrade.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import threading
import weakref
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlmodel import Session

from compat_service.db.engine import core_table
from compat_service.db.evidence.build_facts import insert_observations, observation_row
from compat_service.db.evidence.prepare import (
    CHECK_COLUMNS,
    PreparedReport,
    as_utc,
    check_rows,
    prepare_report,
    utcnow,
)
from compat_service.db.evidence.report_tables import StoredReport, TokenStorage
from compat_service.db.evidence.tables import CHECK_SHARDS, EvidenceCell, EvidenceHost, EvidenceSubmitter
from compat_service.db.evidence.write_gate import sqlite_write_gate
from compat_service.db.matrix.tables import ApiToken
from compat_service.domain.errors import (
    AccelenvError,
    AuthError,
    DatabaseNotReadyError,
    ReportConflictError,
    ReportStorageQuotaError,
)
from compat_service.domain.evidence.cells import IngestResult
from compat_service.domain.evidence.report import CHECK_STATUSES, ProbeReport

_CELL = core_table(EvidenceCell)
_HOST = core_table(EvidenceHost)
_SUBMITTER = core_table(EvidenceSubmitter)
_TOKEN = core_table(ApiToken)
_REPORT = core_table(StoredReport)
_STORAGE = core_table(TokenStorage)


def _later(column: sa.ColumnElement, other: sa.ColumnElement) -> sa.ColumnElement:
    """``max(column, other)`` in SQL both databases understand."""
    return sa.case((column < other, other), else_=column)


def _tally_upsert(insert: Any, who: str) -> Any:
    """Add rows to evidence_host or evidence_submitter, whose key is (cell, ``who``): their reports and
    passing reports summed, last_seen the later; RETURNING the key and both sums, from which the caller
    sees whether the host or submitter is new to the cell (or newly passing)."""
    table = insert.table
    return insert.on_conflict_do_update(
        index_elements=["cell_id", who],
        set_={
            "reports": table.c.reports + insert.excluded.reports,
            "passing_reports": table.c.passing_reports + insert.excluded.passing_reports,
            "last_seen": _later(table.c.last_seen, insert.excluded.last_seen),
        },
    ).returning(table.c.cell_id, table.c[who], table.c.reports, table.c.passing_reports)


_ADD_COUNTS = ", ".join(f"{s} = evidence_check.{s} + excluded.{s}" for s in CHECK_STATUSES)
_CHECK_CONFLICT = (
    f"ON CONFLICT (cell_id, check_id, shard) DO UPDATE SET {_ADD_COUNTS}, "
    "aten_op = coalesce(excluded.aten_op, evidence_check.aten_op), "
    "last_failure = coalesce(excluded.last_failure, evidence_check.last_failure)"
)
_INSERT_CHECKS = (
    f'INSERT INTO evidence_check (cell_id, shard, check_id, "group", {", ".join(CHECK_STATUSES)}, '
    "aten_op, last_failure) "
)
_CHECK_UPSERT = {
    # The rows travel as ONE jsonb parameter (a list of lists, encoded in C by json.dumps): adapting them
    # as eleven PostgreSQL arrays runs psycopg's array dumper in Python over every element of every row.
    "postgresql": _INSERT_CHECKS
    + "SELECT :cell_id, :shard, "
    + ", ".join(
        f"CAST(e->>{i} AS integer)" if column in CHECK_STATUSES else f"e->>{i}"
        for i, column in enumerate(CHECK_COLUMNS)
    )
    + " FROM jsonb_array_elements(CAST(:rows AS jsonb)) AS e "
    + _CHECK_CONFLICT,
    # SQLite runs in-process: one prepared statement run per row (executemany, in C) costs less than
    # encoding the rows as JSON and taking them apart again with json_each / json_extract
    "sqlite": _INSERT_CHECKS + f"VALUES ({', '.join('?' * (2 + len(CHECK_COLUMNS)))}) " + _CHECK_CONFLICT,
}


class _Statements:
    """The ingest statements of one dialect, built once, so SQLAlchemy compiles and caches each once."""

    def __init__(self, dialect: str) -> None:
        insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        # RETURNING the id when this call created the cell (nothing when it existed)
        self.cell_insert = (
            insert(_CELL).on_conflict_do_nothing(index_elements=["key_hash"]).returning(_CELL.c.id)
        )
        self.cell_id = sa.select(_CELL.c.id).where(_CELL.c.key_hash == sa.bindparam("digest"))
        self.report_insert = (
            insert(_REPORT).on_conflict_do_nothing(index_elements=["report_id"]).returning(_REPORT.c.report_id)
        )
        self.stored_sha = sa.select(_REPORT.c.report_id, _REPORT.c.body_sha256).where(
            _REPORT.c.report_id.in_(sa.bindparam("rids", expanding=True))
        )
        # a token's stored reports and bytes: the upsert adds the batch's, and with a quota only while the sum
        # stays within it (no row RETURNed: over quota); a new row is checked in Python before (see _charge)
        storage = insert(_STORAGE)
        added = {
            "reports": _STORAGE.c.reports + storage.excluded.reports,
            "report_bytes": _STORAGE.c.report_bytes + storage.excluded.report_bytes,
        }
        self.storage_add = storage.on_conflict_do_update(index_elements=["token_id"], set_=added).returning(
            _STORAGE.c.token_id
        )
        self.storage_add_within = storage.on_conflict_do_update(
            index_elements=["token_id"], set_=added,
            where=_STORAGE.c.report_bytes + storage.excluded.report_bytes
            <= sa.bindparam("quota", type_=sa.BigInteger),
        ).returning(_STORAGE.c.token_id)
        self.storage_used = sa.select(_STORAGE.c.report_bytes).where(_STORAGE.c.token_id == sa.bindparam("tid"))
        self.host_upsert = _tally_upsert(insert(_HOST), "host_fingerprint")
        self.submitter_upsert = _tally_upsert(insert(_SUBMITTER), "submitter_id")
        # the submitting tokens, share-locked: a withdrawal (evidence_withdraw) revokes a token by updating
        # its row, so it waits for this transaction, or this one sees the token revoked
        live = sa.select(_TOKEN.c.id).where(
            _TOKEN.c.id.in_(sa.bindparam("tids", expanding=True)), _TOKEN.c.revoked_at.is_(None)
        )
        self.live_tokens = live.with_for_update(read=True) if dialect == "postgresql" else live
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
                **{
                    name: _CELL.c[name] + sa.bindparam(f"add_{name}")
                    for name in (
                        "reports", "hosts", "passing_hosts", "submitters", "passing_submitters",
                        "required_bad_reports", "other_bad_reports", "smoke_passed_reports",
                    )
                },
                last_seen=_later(_CELL.c.last_seen, sa.bindparam("now", type_=_CELL.c.last_seen.type)),
            )
        )


@functools.cache
def _statements(dialect: str) -> _Statements:
    return _Statements(dialect)


def _begin(session: Session) -> None:
    if session.get_bind().dialect.name == "sqlite":
        session.connection().exec_driver_sql("BEGIN IMMEDIATE")


def _revoked() -> AuthError:
    return AuthError(
        "the token was revoked (or its evidence withdrawn) while the report was being stored",
        hint="ask an admin for a new token (`accelenv token create --scope report`)",
    )


def _conflict(report_id: str) -> ReportConflictError:
    return ReportConflictError(
        f"report {report_id} is already stored with different content",
        hint="a report_id names one probe run; generate a new report_id (uuid4) for a new run",
    )


def ingest_report(session: Session, report: ProbeReport, *, now: dt.datetime | None = None) -> IngestResult:
    """Store ``report`` and update its cell's evidence; commit. Resubmitting the same report is a no-op.

    Raises ReportConflictError when the report_id is stored with different content.
    """
    now = as_utc(now) if now is not None else utcnow()
    (result,) = ingest_prepared(session, [prepare_report(report, now)], now=now)
    if isinstance(result, AccelenvError):
        raise result
    return result


def ingest_prepared(
    session: Session, prepared: list[PreparedReport], *, now: dt.datetime | None = None
) -> list[IngestResult | AccelenvError]:
    """Store the reports and update their cells' evidence in ONE transaction; commit. One result per report,
    in order: created, already stored (``created=False``), a ReportConflictError (the report_id is stored,
    or comes earlier in the batch, with different content), an AuthError (its token was revoked since it
    was authorized: nothing of it is stored) or a ReportStorageQuotaError (its token's new reports in the
    batch would take it past its storage quota: none of them is stored). A repeated report_id in the batch is
    stored once (its first occurrence); later ones compare against it, as if sent one after the other."""
    now = as_utc(now) if now is not None else utcnow()
    first: dict[str, PreparedReport] = {}
    for p in prepared:
        first.setdefault(p.report_id, p)
    batch = list(first.values())
    # the check rows, computed before the write lock is taken for the common case (every report is new)
    by_cell: dict[str, list[PreparedReport]] = {}
    for p in batch:
        by_cell.setdefault(p.digest, []).append(p)
    rows = {digest: _CellRows(len(cell), check_rows(cell)) for digest, cell in by_cell.items()}
    refused: set[str] = set()
    over_quota: dict[str, ReportStorageQuotaError] = {}
    with sqlite_write_gate(_engine_of(session)):
        stored = _store(session, batch, now, rows, refused, over_quota)
    return [_result(p, first, stored, refused, over_quota) for p in prepared]


def _result(
    p: PreparedReport,
    first: dict[str, PreparedReport],
    stored: dict[str, str],
    refused: set[str],
    over_quota: dict[str, ReportStorageQuotaError],
) -> IngestResult | AccelenvError:
    """What ``ingest_prepared`` answers for one report of the batch."""
    report_id = p.report_id
    if report_id in refused:
        return _revoked()
    if report_id in over_quota:
        return over_quota[report_id]
    if report_id not in stored and first[report_id] is p:
        return IngestResult(report_id=report_id, created=True, key=p.key)
    if stored.get(report_id, first[report_id].report_row["body_sha256"]) != p.report_row["body_sha256"]:
        return _conflict(report_id)
    return IngestResult(report_id=report_id, created=False, key=p.key)


_cell_ids: weakref.WeakKeyDictionary[Engine, dict[str, int]] = weakref.WeakKeyDictionary()
_cell_ids_lock = threading.Lock()


def _engine_of(session: Session) -> Engine:
    bind = session.get_bind()
    return bind if isinstance(bind, Engine) else bind.engine


def _known_cell_ids(engine: Engine) -> dict[str, int]:
    """Cell ids by key digest, per engine: cells are never deleted, so after a cell's first report its id
    saves two statements per report. An id gone stale (the database replaced under a running service) is
    caught by the cell update matching no row: that transaction is rolled back and redone uncached."""
    with _cell_ids_lock:
        return _cell_ids.setdefault(engine, {})


class _StaleCellId(Exception):
    pass


class _OverQuota(Exception):
    """Tokens of the batch past their storage quota: the transaction is rolled back and redone without
    their reports, which get ``errors``."""

    def __init__(self, errors: dict[str, ReportStorageQuotaError]) -> None:
        self.errors = errors


@dataclass
class _CellRows:
    """The check rows of a cell's reports in a batch, computed before they are known to be new."""

    reports: int
    rows: list[list[Any]]


def _store(
    session: Session, batch: list[PreparedReport], now: dt.datetime, check_rows: dict[str, _CellRows],
    refused: set[str], over_quota: dict[str, ReportStorageQuotaError],
) -> dict[str, str]:
    """Store the reports of ``batch`` (distinct report_ids); returns report_id -> stored body_sha256 for
    every report_id that was already stored before (the others were created by this call, except those
    added to ``refused``: their token is revoked, and to ``over_quota``: their token's storage is full).
    Each retry leaves out at least one more token, so this ends."""
    while True:
        try:
            return _store_cached(session, batch, now, check_rows, refused)
        except _OverQuota as exc:
            over_quota.update(exc.errors)
            batch = [p for p in batch if p.report_id not in exc.errors]
            refused.clear()
            if not batch:
                return {}


def _store_cached(
    session: Session, batch: list[PreparedReport], now: dt.datetime, check_rows: dict[str, _CellRows],
    refused: set[str],
) -> dict[str, str]:
    known = _known_cell_ids(_engine_of(session))
    cached = {p.digest: known[p.digest] for p in batch if p.digest in known}
    if not cached:
        return _store_once(session, batch, now, {}, known, check_rows, refused)
    try:
        return _store_once(session, batch, now, cached, known, check_rows, refused)
    except (_StaleCellId, sa.exc.IntegrityError):  # an id naming another cell, or no cell (foreign key)
        for digest in cached:
            known.pop(digest, None)
        refused.clear()
        return _store_once(session, batch, now, {}, known, check_rows, refused)


def _live_reports(
    conn: sa.Connection, sql: _Statements, batch: list[PreparedReport], refused: set[str]
) -> list[PreparedReport] | None:
    """The batch less the reports whose token is gone (their ids added to ``refused``); None when none is left."""
    submitters = sorted({p.submitter for p in batch} - {0})
    if not submitters:
        return batch
    live = set(conn.execute(sql.live_tokens, {"tids": submitters}).scalars())
    if len(live) < len(submitters):
        refused.update(p.report_id for p in batch if p.submitter and p.submitter not in live)
        batch = [p for p in batch if p.report_id not in refused]
        if not batch:
            return None
    return batch


def _insert_cells(
    conn: sa.Connection, sql: _Statements, batch: list[PreparedReport], now: dt.datetime, cell_ids: dict[str, int]
) -> set[int]:
    """Add each of the batch's cells not in ``cell_ids`` (in digest order) to it; the ids of the cells created."""
    new_cells: set[int] = set()
    for p in sorted({p.digest: p for p in batch}.values(), key=lambda p: p.digest):
        if p.digest in cell_ids:
            continue
        key = p.key.model_dump()
        cell_id = conn.execute(
            sql.cell_insert, {"key_hash": p.digest, "first_seen": now, "last_seen": now, **key}
        ).scalar()
        if cell_id is None:
            cell_id = conn.execute(sql.cell_id, {"digest": p.digest}).scalar_one()
        else:
            new_cells.add(cell_id)
        cell_ids[p.digest] = cell_id
    return new_cells


def _insert_reports(
    conn: sa.Connection, sql: _Statements, batch: list[PreparedReport], cell_ids: dict[str, int]
) -> tuple[list[PreparedReport], dict[str, str]]:
    """(the reports inserted, {report id: stored sha} of those stored already), in report id order."""
    # all reports in one multi-row INSERT (SQLAlchemy's insertmanyvalues), RETURNING those it inserted
    in_order = sorted(batch, key=lambda p: p.report_id)
    report_rows = [{**p.report_row, "cell_id": cell_ids[p.digest]} for p in in_order]
    inserted = set(conn.execute(sql.report_insert, report_rows).scalars())
    created = [p for p in in_order if p.report_id in inserted]
    already = [p.report_id for p in in_order if p.report_id not in inserted]
    stored: dict[str, str] = dict(conn.execute(sql.stored_sha, {"rids": already}).all()) if already else {}
    return created, stored


def _count_created(
    conn: sa.Connection,
    sql: _Statements,
    cell_ids: dict[str, int],
    created: list[PreparedReport],
    now: dt.datetime,
    check_rows: dict[str, _CellRows],
    new_cells: set[int],
) -> None:
    """Charge the created reports to their tokens, add them to the counters and observations, and drop the
    cells this batch created for none of them."""
    _charge(conn, sql, created)
    _add_evidence(conn, sql, cell_ids, created, now, check_rows)
    insert_observations(
        conn, [observation_row(p.observation, p.report_row["received_at"]) for p in created if p.observation]
    )
    # a cell this batch created for reports that were all stored already: drop it, as a rollback would
    for cell_id in new_cells - {cell_ids[p.digest] for p in created}:
        conn.execute(sa.delete(_CELL).where(_CELL.c.id == cell_id))


def _store_once(
    session: Session,
    batch: list[PreparedReport],
    now: dt.datetime,
    cell_ids: dict[str, int],
    known: dict[str, int],
    check_rows: dict[str, _CellRows],
    refused: set[str],
) -> dict[str, str]:
    """One transaction. Locks are taken class by class (tokens, cells, reports, hosts, submitters, checks,
    cell counters), each class in sorted key order, so concurrent batches cannot deadlock. Returns what
    ``_store`` does."""
    ids = ", ".join(p.report_id for p in batch[:3])
    try:
        _begin(session)
        # Core statements on the session's connection: plain INSERT/UPDATE semantics, no ORM bookkeeping.
        conn = session.connection()
        sql = _statements(conn.dialect.name)
        live = _live_reports(conn, sql, batch, refused)
        if live is None:
            session.rollback()
            return {}
        new_cells = _insert_cells(conn, sql, live, now, cell_ids)
        created, stored = _insert_reports(conn, sql, live, cell_ids)
        if not created:
            session.rollback()  # nothing new: leave no cell row behind either
            return stored
        _count_created(conn, sql, cell_ids, created, now, check_rows, new_cells)
        session.commit()
        for p in created:
            known[p.digest] = cell_ids[p.digest]
    except sa.exc.OperationalError as exc:
        session.rollback()
        raise DatabaseNotReadyError(
            f"could not store report(s) {ids}: {exc.orig}",
            hint="the database is unavailable or overloaded; retry the submission (it is idempotent)",
        ) from exc
    except BaseException:
        session.rollback()
        raise
    return stored


def _by_token(created: list[PreparedReport]) -> dict[int, list[PreparedReport]]:
    """The reports sent with a token, by the token's id."""
    by_token: dict[int, list[PreparedReport]] = {}
    for p in created:
        if p.submitter:
            by_token.setdefault(p.submitter, []).append(p)
    return by_token


def _charge(conn: sa.Connection, sql: _Statements, created: list[PreparedReport]) -> None:
    """Add the created reports to their tokens' storage, token by token in id order; raise _OverQuota
    naming every report of each token the batch would take past its quota."""
    by_token = _by_token(created)
    over: dict[str, ReportStorageQuotaError] = {}
    for token_id in sorted(by_token):
        reports = by_token[token_id]
        size = sum(len(p.report_row["body"].encode()) for p in reports)
        quota = reports[0].byte_quota
        row = {"token_id": token_id, "reports": len(reports), "report_bytes": size}
        if not quota:
            conn.execute(sql.storage_add, row)
        elif size > quota or conn.execute(sql.storage_add_within, {**row, "quota": quota}).scalar() is None:
            used = conn.execute(sql.storage_used, {"tid": token_id}).scalar() or 0
            error = _over_quota(len(reports), size, used, quota)
            over.update((p.report_id, error) for p in reports)
    if over:
        raise _OverQuota(over)


def _over_quota(reports: int, size: int, used: int, quota: int) -> ReportStorageQuotaError:
    return ReportStorageQuotaError(
        f"this token has stored {used} of its {quota} bytes of report data; the {reports} new report(s) "
        f"submitted need {size} more, so none of them was stored",
        hint="ask the service's admin to raise ACCELENV_QUOTA_TOKEN_REPORT_BYTES or for a new token; "
        "or submit fewer or smaller reports (`accelenv probe --checks ...` runs fewer checks)",
    )


def _add_evidence(
    conn: sa.Connection,
    sql: _Statements,
    cell_ids: dict[str, int],
    created: list[PreparedReport],
    now: dt.datetime,
    precomputed: dict[str, _CellRows],
) -> None:
    """Add the created reports to their host, check and cell counters, each counter row written once per
    batch; raises _StaleCellId if a cell id is not its cell's. ``precomputed`` holds each cell's check rows
    for all its reports in the batch: right unless some of them turned out to be stored already."""
    by_cell: dict[int, list[PreparedReport]] = {}
    for p in created:
        by_cell.setdefault(cell_ids[p.digest], []).append(p)
    by_submitter = [(cell_ids[p.digest], p.counted_submitter, p.verdict.passed) for p in created]
    new_submitters = _add_tally(conn, sql.submitter_upsert, "submitter_id", by_submitter, now)
    by_host = [(cell_ids[p.digest], p.report_row["host_fingerprint"], p.verdict.passed) for p in created]
    new_hosts = _add_tally(conn, sql.host_upsert, "host_fingerprint", by_host, now)
    for cell_id, reports in sorted(by_cell.items()):
        _add_checks(conn, sql, cell_id, reports, precomputed)
    for cell_id, reports in sorted(by_cell.items()):
        updated = conn.execute(
            sql.cell_update,
            {
                "cid": cell_id,
                "digest": reports[0].digest,
                "add_reports": len(reports),
                "add_hosts": new_hosts.get(cell_id, (0, 0))[0],
                "add_passing_hosts": new_hosts.get(cell_id, (0, 0))[1],
                "add_submitters": new_submitters.get(cell_id, (0, 0))[0],
                "add_passing_submitters": new_submitters.get(cell_id, (0, 0))[1],
                "add_required_bad_reports": sum(int(p.verdict.required_bad) for p in reports),
                "add_other_bad_reports": sum(int(p.verdict.other_bad) for p in reports),
                "add_smoke_passed_reports": sum(int(p.verdict.smoke_passed) for p in reports),
                "now": now,
            },
        )
        if updated.rowcount != 1:
            raise _StaleCellId
        _set_perf(conn, cell_id, reports)


def _add_checks(
    conn: sa.Connection, sql: _Statements, cell_id: int, reports: list[PreparedReport],
    precomputed: dict[str, _CellRows],
) -> None:
    """Add one cell's created reports to its check counters."""
    cell_rows = precomputed[reports[0].digest]
    rows = cell_rows.rows if cell_rows.reports == len(reports) else check_rows(reports)
    if not rows:
        return
    # one shard per cell and batch (the first report's): each (cell, check) row is written once
    shard = int(reports[0].report_id.replace("-", ""), 16) % CHECK_SHARDS
    if sql.check_upsert_many:
        conn.exec_driver_sql(sql.check_upsert, [(cell_id, shard, *row) for row in rows])
    else:
        conn.execute(sql.check_upsert, {"cell_id": cell_id, "shard": shard, "rows": json.dumps(rows)})


def _set_perf(conn: sa.Connection, cell_id: int, reports: list[PreparedReport]) -> None:
    """The cell's perf figures: the newest report's; an older one arriving later leaves them."""
    with_perf = [p for p in reports if p.perf is not None]
    if with_perf:
        newest = max(with_perf, key=lambda p: p.report_row["created_at"])
        at = newest.report_row["created_at"]
        conn.execute(
            sa.update(_CELL)
            .where(_CELL.c.id == cell_id, sa.or_(_CELL.c.perf_at.is_(None), _CELL.c.perf_at <= at))
            .values(perf=newest.perf, perf_at=at)
        )


def _add_tally(
    conn: sa.Connection, upsert: Any, who: str, added: list[tuple[int, Any, bool]], now: dt.datetime
) -> dict[int, tuple[int, int]]:
    """Add the created reports (``added``: cell, host fingerprint or submitter, passed; one per report) to
    their (cell, ``who``) rows in one multi-row upsert, rows in key order (the order their locks are
    taken); returns cell -> (new hosts or submitters, newly passing ones). The row lock makes exactly one
    writer see its own additions as the whole count: a count equal to what this batch added is new."""
    counts: dict[tuple[int, Any], list[int]] = {}
    for cell_id, key, passed in added:
        row = counts.setdefault((cell_id, key), [0, 0])
        row[0] += 1
        row[1] += int(passed)
    rows = [
        {"cell_id": cell_id, who: key, "reports": reports, "passing_reports": passing,
         "first_seen": now, "last_seen": now}
        for (cell_id, key), (reports, passing) in sorted(counts.items())
    ]
    new: dict[int, tuple[int, int]] = {}
    for cell_id, key, total, total_passing in conn.execute(upsert, rows):
        reports, passing = counts[(cell_id, key)]
        was = new.get(cell_id, (0, 0))
        new[cell_id] = (was[0] + int(total == reports), was[1] + int(passing > 0 and total_passing == passing))
    return new
