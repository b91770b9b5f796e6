"""An admin withdraws a token's evidence: the token is revoked, its reports deleted, and everything they
added to the counters subtracted, in one transaction (docs/service.md, trust model).

The reports' contributions are recomputed from their stored bodies (``prepare_report``, the same reduction
ingest used), summed, then subtracted with ``SET n = n - k`` in ingest's lock order (tokens, reports,
hosts, submitters, checks, cells; each in sorted key order), so a concurrent ingest waits or goes first but
never deadlocks or double-counts. The token row is updated first: an ingest of that token share-locks it
(``evidence_ingest``), so either it committed before (and its report is withdrawn here) or it sees the token
revoked and stores nothing. A host or submitter whose count reaches 0 stops counting (its row stays at 0,
and a later report counts it again as new). The last failure text of a check the withdrawn reports failed is
cleared (the next failing report fills it again): it may be theirs.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import sqlalchemy as sa
from pydantic import BaseModel
from sqlalchemy.engine import Engine
from sqlmodel import Session

from compat_service.db.engine import core_table
from compat_service.db.evidence.build_facts import delete_observations
from compat_service.db.evidence.prepare import prepare_report
from compat_service.db.evidence.report_tables import StoredReport
from compat_service.db.evidence.tables import EvidenceCell, EvidenceCheck, EvidenceHost, EvidenceSubmitter
from compat_service.db.evidence.write_gate import sqlite_write_gate
from compat_service.db.matrix.tables import ApiToken, ApiTokenPublic
from compat_service.domain.errors import NotFoundError
from compat_service.domain.evidence.report import CHECK_STATUSES, ProbeReport

#: reports read (with their bodies) per round trip
_CHUNK = 500
_CELL_COUNTERS = (
    "reports", "hosts", "passing_hosts", "submitters", "passing_submitters", "required_bad_reports",
    "other_bad_reports", "smoke_passed_reports",
)


class WithdrawResult(BaseModel):
    token: ApiTokenPublic
    reports_withdrawn: int
    #: evidence cells whose counters changed
    cells: int


@dataclass
class _Sums:
    cells: dict[int, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    hosts: dict[tuple[int, str], list[int]] = field(default_factory=dict)
    checks: dict[tuple[int, str], Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    failed_checks: set[tuple[int, str]] = field(default_factory=set)
    submitter: dict[int, list[int]] = field(default_factory=dict)

    def add(self, cell_id: int, host: str, body: str) -> None:
        p = prepare_report(ProbeReport.model_validate_json(body))
        cell = self.cells[cell_id]
        cell["reports"] += 1
        cell["required_bad_reports"] += int(p.verdict.required_bad)
        cell["other_bad_reports"] += int(p.verdict.other_bad)
        cell["smoke_passed_reports"] += int(p.verdict.smoke_passed)
        for counts in (self.hosts.setdefault((cell_id, host), [0, 0]), self.submitter.setdefault(cell_id, [0, 0])):
            counts[0] += 1
            counts[1] += int(p.verdict.passed)
        for check_id, status in zip(p.check_ids, p.check_statuses):
            self.checks[(cell_id, check_id)][status] += 1
        self.failed_checks.update((cell_id, check_id) for check_id in p.failures)


def withdraw_submitter(engine: Engine, token_id: int, *, now: dt.datetime | None = None) -> WithdrawResult:
    """Revoke token ``token_id`` and withdraw every report it submitted; NotFoundError for no such token."""
    now = now or dt.datetime.now(dt.timezone.utc)
    token_table, report_table = core_table(ApiToken), core_table(StoredReport)
    with sqlite_write_gate(engine), Session(engine) as session:
        if engine.dialect.name == "sqlite":
            session.connection().exec_driver_sql("BEGIN IMMEDIATE")
        conn = session.connection()
        revoked = conn.execute(
            sa.update(token_table)
            .where(token_table.c.id == token_id)
            .values(revoked_at=sa.func.coalesce(token_table.c.revoked_at, now))
        )
        if revoked.rowcount != 1:
            session.rollback()
            raise NotFoundError(f"no token with id {token_id}", hint="`accelenv token list` shows the ids")
        sums = _Sums()
        withdrawn = _delete_reports(conn, report_table, token_id, sums)
        if withdrawn:
            # evidence counts the token's reports for its owner (revision 0009)
            owner_key = conn.execute(
                sa.select(token_table.c.owner_key).where(token_table.c.id == token_id)
            ).scalar_one_or_none()
            _subtract(conn, sums, owner_key or token_id)
        session.commit()
        row = session.get(ApiToken, token_id)
        token = ApiTokenPublic.model_validate(row, from_attributes=True)
    return WithdrawResult(token=token, reports_withdrawn=withdrawn, cells=len(sums.cells))


def _delete_reports(conn: sa.Connection, report_table: sa.Table, token_id: int, sums: _Sums) -> int:
    """Delete the token's reports (and their observations) chunk by chunk, adding each to ``sums``; how many."""
    withdrawn = 0
    after = ""
    while True:
        rows = conn.execute(
            sa.select(report_table.c.report_id, report_table.c.cell_id, report_table.c.host_fingerprint,
                      report_table.c.body)
            .where(report_table.c.submitter_id == token_id, report_table.c.report_id > after)
            .order_by(report_table.c.report_id)
            .limit(_CHUNK)
        ).all()
        if not rows:
            return withdrawn
        for _report_id, cell_id, host, body in rows:
            sums.add(cell_id, host, body)
        delete_observations(conn, [r[0] for r in rows])  # the build facts they stated go with them
        conn.execute(sa.delete(report_table).where(report_table.c.report_id.in_([r[0] for r in rows])))
        withdrawn += len(rows)
        after = rows[-1][0]


def _take_tally(
    conn: sa.Connection, table: sa.Table, who: sa.ColumnElement[bool], cell_id: int, taken: list[int],
    cell: Counter[str], distinct: str,
) -> None:
    """Take ``taken`` (reports, passing reports) off the evidence_host or evidence_submitter row ``who``
    names in ``cell_id``; a row left at 0 (or at 0 passing) no longer counts among the cell's distinct
    ``hosts`` / ``submitters`` (or their passing ones)."""
    reports, passing = taken
    left, left_passing = conn.execute(
        sa.update(table)
        .where(table.c.cell_id == cell_id, who)
        .values(reports=table.c.reports - reports, passing_reports=table.c.passing_reports - passing)
        .returning(table.c.reports, table.c.passing_reports)
    ).one()
    cell[distinct] += int(left == 0)
    cell[f"passing_{distinct}"] += int(passing > 0 and left_passing == 0)


def _take_checks(
    conn: sa.Connection, check_t: sa.Table, cell_id: int, check_id: str, take: Counter[str], failed: bool
) -> None:
    """Take ``take`` (per status) off one check's counts in ``cell_id``; ``failed``: clear its last failure."""
    # the counts live in shards (evidence_models.CHECK_SHARDS): take them from whichever shard holds them
    shards = conn.execute(
        sa.select(check_t.c.shard, *(check_t.c[s] for s in CHECK_STATUSES))
        .where(check_t.c.cell_id == cell_id, check_t.c.check_id == check_id)
        .order_by(check_t.c.shard)
        .with_for_update()
    ).all()
    remaining = Counter(take)
    for shard, *counts in shards:
        values: dict[str, object] = {}
        for status, have in zip(CHECK_STATUSES, counts):
            n = min(have, remaining[status])
            if n:
                values[status] = check_t.c[status] - n
                remaining[status] -= n
        if failed:
            values["last_failure"] = None
        if values:
            conn.execute(
                sa.update(check_t)
                .where(check_t.c.cell_id == cell_id, check_t.c.check_id == check_id, check_t.c.shard == shard)
                .values(**values)
            )


def _subtract(conn: sa.Connection, sums: _Sums, counted_as: int) -> None:
    host_t, sub_t, check_t, cell_t = (
        core_table(EvidenceHost), core_table(EvidenceSubmitter), core_table(EvidenceCheck), core_table(EvidenceCell),
    )
    for (cell_id, host), taken in sorted(sums.hosts.items()):
        _take_tally(conn, host_t, host_t.c.host_fingerprint == host, cell_id, taken, sums.cells[cell_id], "hosts")
    for cell_id, taken in sorted(sums.submitter.items()):
        who = sub_t.c.submitter_id == counted_as
        _take_tally(conn, sub_t, who, cell_id, taken, sums.cells[cell_id], "submitters")
    for (cell_id, check_id), take in sorted(sums.checks.items()):
        _take_checks(conn, check_t, cell_id, check_id, take, (cell_id, check_id) in sums.failed_checks)
    for cell_id, cell_counts in sorted(sums.cells.items()):
        conn.execute(
            sa.update(cell_t)
            .where(cell_t.c.id == cell_id)
            .values(**{name: cell_t.c[name] - cell_counts[name] for name in _CELL_COUNTERS if cell_counts[name]})
        )
