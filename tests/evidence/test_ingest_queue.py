"""The worker's ingest queue (compat_service/db/evidence/queue.py) on SQLite and PostgreSQL: reports queued
while the writer is busy are stored together, each submitter gets its own result, and failures reach the
right submitters."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from compat_service.db.engine import make_engine
from compat_service.db.evidence.prepare import PreparedReport, prepare_report
from compat_service.db.evidence.queue import IngestQueue
from compat_service.db.evidence.write_gate import sqlite_write_gate
from compat_service.domain.errors import AccelenvError, DatabaseNotReadyError, ReportConflictError
from compat_service.domain.evidence.cells import IngestResult
from compat_service.domain.evidence.report import ProbeReport
from tests.evidence.conftest import variant


def _prepared(report: dict[str, Any]) -> PreparedReport:
    return prepare_report(ProbeReport.model_validate_json(json.dumps(report)))


@contextlib.contextmanager
def _writes_blocked(engine: Engine) -> Iterator[None]:
    """Hold off every report insert until the block ends (the writer waits, submissions queue up)."""
    if engine.dialect.name == "sqlite":
        with sqlite_write_gate(engine):
            yield
        return
    with engine.connect() as conn:
        conn.execute(sa.text("LOCK TABLE probe_report IN EXCLUSIVE MODE"))
        yield
        conn.commit()


def _stored_result(future: Future[IngestResult | AccelenvError], timeout: float) -> IngestResult:
    """The outcome of a submission that must have been stored (a refusal fails the test, naming itself)."""
    outcome = future.result(timeout=timeout)
    assert isinstance(outcome, IngestResult), outcome
    return outcome


def _stored(engine: Engine) -> int:
    with engine.connect() as conn:
        return conn.execute(sa.text("SELECT count(*) FROM probe_report")).scalar_one()


def test_reports_queued_while_the_writer_is_busy_share_a_transaction(engine: Engine, report_of) -> None:
    base = report_of("cpu")
    reports = [variant(base, host=str(i % 4)) for i in range(20)]
    queue = IngestQueue(engine, max_batch=64)
    with _writes_blocked(engine):
        futures = [queue.submit(_prepared(r)) for r in reports]
    outcomes = [_stored_result(f, 60) for f in futures]
    queue.close()
    assert [(o.report_id, o.created) for o in outcomes] == [(r["report_id"], True) for r in reports]
    # the first transaction took what had queued when the writer started; the rest waited and went together
    assert queue.reports == 20 and 1 <= queue.batches <= 2
    with engine.connect() as conn:
        cell = conn.execute(sa.text("SELECT reports, hosts FROM evidence_cell")).one()
    assert tuple(cell) == (20, 4) and _stored(engine) == 20


def test_each_submitter_gets_its_own_answer_within_one_batch(engine: Engine, report_of) -> None:
    report = variant(report_of("cpu"))
    tampered = variant(report)
    tampered["report_id"] = report["report_id"]
    tampered["checks"] = tampered["checks"][:1]
    tampered["summary"]["total"] = 1
    queue = IngestQueue(engine, max_batch=64)
    with _writes_blocked(engine):
        futures = [queue.submit(_prepared(r)) for r in (report, report, tampered)]
    first, again, conflict = (f.result(timeout=60) for f in futures)
    queue.close()
    assert isinstance(first, IngestResult) and first.created
    assert isinstance(again, IngestResult) and not again.created
    assert isinstance(conflict, ReportConflictError)
    assert _stored(engine) == 1


def test_an_unreachable_database_fails_each_submitter_with_the_reason(tmp_path, report_of) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/no/such/dir/accelenv.sqlite3")
    queue = IngestQueue(engine, max_batch=64)
    futures = [queue.submit(_prepared(variant(report_of("cpu")))) for _ in range(3)]
    for future in futures:
        with pytest.raises(DatabaseNotReadyError, match="could not store report"):
            future.result(timeout=60)
    queue.close()
    engine.dispose()


def test_a_report_that_breaks_its_batch_fails_alone(engine: Engine, report_of) -> None:
    good = [_prepared(variant(report_of("cpu"), host=str(i))) for i in range(3)]
    broken = _prepared(variant(report_of("cpu")))
    broken.report_row["created_at"] = "not a timestamp"  # what no parsed report can carry
    queue = IngestQueue(engine, max_batch=64)
    with _writes_blocked(engine):
        futures = [queue.submit(p) for p in (good[0], broken, good[1], good[2])]
    assert futures[1].exception(timeout=60) is not None
    assert all(_stored_result(f, 60).created for f in (futures[0], futures[2], futures[3]))
    queue.close()
    assert _stored(engine) == 3


def test_closing_stores_what_is_queued_then_refuses(engine: Engine, report_of) -> None:
    queue = IngestQueue(engine, max_batch=64)
    futures = [queue.submit(_prepared(variant(report_of("cpu")))) for _ in range(5)]
    queue.close()
    assert all(_stored_result(f, 0).created for f in futures)
    with pytest.raises(DatabaseNotReadyError, match="shutting down"):
        queue.submit(_prepared(variant(report_of("cpu"))))
    assert _stored(engine) == 5
