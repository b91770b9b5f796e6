"""Ingest remembers cell ids per engine; an id gone stale must never put a report in the wrong cell."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Session

from compat_service.db.evidence.ingest import ingest_report
from compat_service.db.evidence.queries import find_cell
from compat_service.domain.evidence.cells import cell_key_of
from compat_service.domain.evidence.report import ProbeReport
from tests.evidence.conftest import variant


def _ingest(engine: Engine, report: dict[str, Any]) -> ProbeReport:
    parsed = ProbeReport.model_validate(report)
    with Session(engine) as session:
        assert ingest_report(session, parsed).created
    return parsed


def test_a_cached_cell_id_that_went_stale_is_not_trusted(
    engine: Engine, report_of: Callable[[str], dict[str, Any]]
) -> None:
    cpu, refdev = report_of("cpu"), report_of("refdev")
    first = _ingest(engine, variant(cpu))
    # The database is emptied under the running engine. SQLite hands the next cell the old id (the cached
    # id now names another cell); PostgreSQL's sequence moves on (the cached id names no cell at all).
    with engine.begin() as conn:
        for table in ("probe_report", "evidence_check", "evidence_host", "evidence_submitter", "evidence_cell"):
            conn.execute(sa.text(f"DELETE FROM {table}"))
    other = _ingest(engine, variant(refdev))
    again = _ingest(engine, variant(cpu))

    with Session(engine) as session:
        cpu_cell = find_cell(session, cell_key_of(again.environment))
        refdev_cell = find_cell(session, cell_key_of(other.environment))
        assert cpu_cell is not None and refdev_cell is not None
        assert (cpu_cell.reports, refdev_cell.reports) == (1, 1)
        stored = session.execute(
            sa.text("SELECT cell_id FROM probe_report WHERE report_id = :rid"), {"rid": str(again.report_id)}
        ).scalar_one()
    assert stored == cpu_cell.id
    assert cell_key_of(first.environment) == cell_key_of(again.environment)
