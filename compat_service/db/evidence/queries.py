"""Reading evidence: one cell's detail, the matrix filter, a stored report (matrix_rows.py: the matrix rows).

Reads only the counters the ingest maintains; nothing here scans the stored reports except the short
"recent report ids" list of one cell (an index range scan).
"""

from __future__ import annotations

import datetime as dt
import functools
import threading
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from cachetools import LRUCache
from packaging.specifiers import SpecifierSet
from pydantic import BaseModel
from sqlmodel import Session, col

from compat_service.db.evidence.report_tables import StoredReport
from compat_service.db.evidence.tables import EvidenceCell, EvidenceCheck
from compat_service.domain.backends import label_family, normalise_arch
from compat_service.domain.evidence.cells import (
    CellEvidence,
    CellKey,
    CheckCounts,
    CheckEvidence,
    DeclaredMatrix,
    FailingCheck,
    MatrixCell,
)
from compat_service.domain.evidence.perf import parse as parse_perf
from compat_service.domain.evidence.report import CHECK_STATUSES
from compat_service.domain.evidence.status import REQUIRED_GROUPS, UNSUPPORTED_FAILS, cell_health, cell_status
from compat_service.domain.matrix.model.rows import MatrixTables

RECENT_REPORTS = 20


class MatrixFilter(BaseModel):
    """Query of GET /v1/matrix; None = any. ``torch`` matches a patch ('2.3.1') or a minor ('2.3')."""

    torch: str | None = None
    build: str | None = None
    python: str | None = None
    backend: str | None = None
    os: str | None = None
    arch: str | None = None
    status: str | None = None
    #: the build's wheel family (cpu, cuda, rocm, xpu), by the label grammar; distinct from the evidence
    #: ``backend`` (the device a report ran on)
    family: str | None = None

    def torch_matches(self, version: str) -> bool:
        if self.torch is None:
            return True
        if self.torch[:1] in "<>=!~" or "," in self.torch:  # a PEP 440 range (the route validated it)
            return _specifier(self.torch).contains(version, prereleases=True)
        return version == self.torch or version.startswith(self.torch + ".")

    def family_matches(self, build: str | None) -> bool:
        return self.family is None or (build is not None and label_family(build) == self.family)

    def cache_key(self) -> tuple[str | None, ...]:
        return (self.torch, self.build, self.python, self.backend, self.os, self.arch, self.status, self.family)

    def _release_matches(self, torch_version: str, torch_build: str | None, python: str, os: str) -> bool:
        """The part both ``considers`` and ``keeps`` apply: torch, build, family, Python and OS."""
        return (
            self.torch_matches(torch_version)
            and self.build in (None, torch_build)
            and self.family_matches(torch_build)
            and self.python in (None, python)
            and self.os in (None, os)
        )

    def considers(self, torch_version: str, torch_build: str | None, python: str, os: str, backend: str | None) -> bool:
        """Whether an evidence cell takes part in the answer: a declared cell none of whose evidence cells
        takes part is listed as declared without evidence (which ``keeps`` may then drop). Arch and status
        do not take part here: an evidence cell's arch is its declared cell's, and a declared cell whose
        evidence has another status is not one without evidence."""
        return self._release_matches(torch_version, torch_build, python, os) and self.backend in (None, backend)

    def keeps_values(
        self, torch_version: str, torch_build: str | None, python: str, os: str, arch: str, backend: str | None,
        status: str,
    ) -> bool:
        """Whether a matrix row with these values is in the answer (``keeps`` on plain values)."""
        return (
            self._release_matches(torch_version, torch_build, python, os)
            and (self.arch is None or normalise_arch(os, self.arch) == arch)
            and (self.backend is None or backend in (None, self.backend))
            and self.status in (None, status)
        )

    def keeps(self, cell: MatrixCell) -> bool:
        return self.keeps_values(
            cell.torch_version, cell.torch_build, cell.python, cell.os, cell.arch, cell.backend, cell.status
        )


@functools.lru_cache(maxsize=256)
def _specifier(text: str) -> SpecifierSet:
    return SpecifierSet(text)


def _aware(value: dt.datetime | None) -> dt.datetime | None:
    return value.replace(tzinfo=dt.timezone.utc) if value is not None and value.tzinfo is None else value


def _counts(row: sa.Row) -> CheckCounts:
    return CheckCounts(**{s: int(getattr(row, s)) for s in CHECK_STATUSES})


def _failing_expr() -> sa.ColumnElement[int]:
    """How often a check was failing (evidence.status.is_failing, summed in SQL)."""
    bad = EvidenceCheck.failed + EvidenceCheck.timeout + EvidenceCheck.crashed + EvidenceCheck.error
    gaps = sa.case((EvidenceCheck.group.in_(sorted(UNSUPPORTED_FAILS)), EvidenceCheck.unsupported), else_=0)  # type: ignore[attr-defined]
    return bad + gaps


def _failing_count(group: str, counts: CheckCounts) -> int:
    return counts.bad + (counts.unsupported if group in UNSUPPORTED_FAILS else 0)


def get_report_json(session: Session, report_id: str) -> str | None:
    return session.execute(
        sa.select(col(StoredReport.body)).where(col(StoredReport.report_id) == report_id)
    ).scalar_one_or_none()


def find_cell(session: Session, key: CellKey) -> EvidenceCell | None:
    return session.execute(
        sa.select(EvidenceCell).where(col(EvidenceCell.key_hash) == key.digest())
    ).scalar_one_or_none()


def cell_evidence(
    session: Session, key: CellKey, *, declared: DeclaredMatrix | None, min_hosts: int,
    min_submitters: int = 1,
) -> CellEvidence | None:
    """The detail of one cell, or None when no report was ever stored for it."""
    cell = find_cell(session, key)
    if cell is None:
        return None
    # the shards of each check, added up
    checks = session.execute(
        sa.select(
            col(EvidenceCheck.check_id),
            sa.func.min(EvidenceCheck.group).label("group"),
            *(sa.func.sum(getattr(EvidenceCheck, s)).label(s) for s in CHECK_STATUSES),
            sa.func.max(EvidenceCheck.aten_op).label("aten_op"),
            sa.func.max(EvidenceCheck.last_failure).label("last_failure"),
        )
        .where(col(EvidenceCheck.cell_id) == cell.id)
        .group_by(EvidenceCheck.check_id)
        .order_by(EvidenceCheck.check_id)
    ).all()
    recent = session.execute(
        sa.select(col(StoredReport.report_id))
        .where(col(StoredReport.cell_id) == cell.id)
        .order_by(col(StoredReport.received_at).desc(), StoredReport.report_id)
        .limit(RECENT_REPORTS)
    ).scalars().all()
    total = CheckCounts()
    evidence: list[CheckEvidence] = []
    for row in checks:
        counts = _counts(row)
        total = total.add(counts)
        evidence.append(
            CheckEvidence(
                id=row.check_id, group=row.group, counts=counts, aten_op=row.aten_op,
                last_failure=row.last_failure,
            )
        )
    is_declared = declared is not None and declared.declared_cell_of(key) is not None
    return CellEvidence(
        key=key,
        **cell_summary(cell, declared=is_declared, min_hosts=min_hosts, min_submitters=min_submitters),
        counts=total,
        failing_checks=[
            FailingCheck(
                id=c.id, group=c.group, aten_op=c.aten_op, bad=_failing_count(c.group, c.counts),
                last_failure=c.last_failure,
            )
            for c in evidence
            if _failing_count(c.group, c.counts) > 0
        ],
        checks=evidence,
        recent_report_ids=list(recent),
    )


def failing_check_ids(session: Session, cell_ids: Sequence[int]) -> dict[int, list[str]]:
    """Failing check ids per cell (required groups first), for a page of cells, in one query."""
    out: dict[int, list[str]] = {}
    if not cell_ids:
        return out
    rows = session.execute(
        sa.select(col(EvidenceCheck.cell_id), col(EvidenceCheck.check_id))
        .where(col(EvidenceCheck.cell_id).in_(list(cell_ids)), _failing_expr() > 0)
        # detect/smoke failures first: they are what makes a cell broken
        .order_by(
            col(EvidenceCheck.cell_id),
            sa.case((col(EvidenceCheck.group).in_(sorted(REQUIRED_GROUPS)), 0), else_=1),
            EvidenceCheck.check_id,
        )
    ).all()
    for cell_id, check_id in rows:
        ids = out.setdefault(cell_id, [])
        if not ids or ids[-1] != check_id:  # one row per shard: the same id comes in a run
            ids.append(check_id)
    return out


def cell_summary(
    cell: EvidenceCell, *, declared: bool, min_hosts: int, min_submitters: int
) -> dict[str, Any]:
    """The status and counters a cell row contributes to both CellEvidence and MatrixCell (``cell``: an
    `EvidenceCell`, or a row of its table with the same attributes)."""
    health = cell_health(cell, min_hosts=min_hosts, min_submitters=min_submitters)
    return {
        "declared": declared,
        "status": cell_status(health, declared=declared),
        "health": health,
        "reports": cell.reports,
        "hosts": cell.hosts,
        "passing_hosts": cell.passing_hosts,
        "submitters": cell.submitters,
        "passing_submitters": cell.passing_submitters,
        "first_seen": _aware(cell.first_seen),
        "last_seen": _aware(cell.last_seen),
        "perf": parse_perf(getattr(cell, "perf", None)),
    }


def with_failing_checks(session: Session, page: list[tuple[MatrixCell, int | None]]) -> list[MatrixCell]:
    failing = failing_check_ids(session, [cid for _, cid in page if cid is not None])
    return [
        row.model_copy(update={"failing_checks": failing.get(cid, [])}) if cid is not None else row
        for row, cid in page
    ]


_declared_lock = threading.Lock()
#: a few loads (a reload keeps the previous one in use for a moment); the least recently used goes first
_declared: LRUCache[str, DeclaredMatrix] = LRUCache(maxsize=4)


def declared_for(content_hash: str, data: MatrixTables) -> DeclaredMatrix:
    """The declared cells of one matrix load, built once per process per load."""
    with _declared_lock:
        found = _declared.get(content_hash)
        if found is None:
            found = _declared[content_hash] = DeclaredMatrix(data)
        return found
