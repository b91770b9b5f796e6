"""Concurrent single-report submissions of one service worker, stored together.

Stored alone, every report costs a transaction of its own: a commit (a synced write) and an update of each
counter row of its cell (one per check, ~160). Submitters arrive concurrently, so a worker queues their
reports and ONE writer thread stores whatever has queued up as one batch (``ingest_prepared``): under load a
transaction carries tens of reports and each counter row is written once for all of them; when the worker
is idle a report is stored at once, alone (nothing waits for company, no timer).

Every submitter gets its own result, exactly as if its report had been stored alone: a batch keeps
per-report results, duplicates and conflicts (see ``ingest_prepared``). A batch that fails on a database
error fails each of its submitters with that error (each may retry: ingest is idempotent); any other error
is retried report by report, so one report that breaks the store cannot fail the others.
"""

from __future__ import annotations

import logging
import queue
import threading
from concurrent.futures import Future

from sqlalchemy.engine import Engine
from sqlmodel import Session

from compat_service.db.evidence.ingest import ingest_prepared
from compat_service.db.evidence.prepare import PreparedReport
from compat_service.domain.errors import AccelenvError, DatabaseNotReadyError
from compat_service.domain.evidence.cells import IngestResult

log = logging.getLogger("accelenv.ingest")

#: an IngestResult, or why the report was refused (ReportConflictError, AuthError)
Outcome = IngestResult | AccelenvError
_Item = tuple[PreparedReport, "Future[Outcome]"]
_STOP = object()


class IngestQueue:
    """Queue reports for this process's writer thread (started on first use); see the module docstring."""

    def __init__(self, engine: Engine, *, max_batch: int) -> None:
        self._engine = engine
        self._max_batch = max(1, max_batch)
        self._queue: queue.SimpleQueue[_Item | object] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._writer: threading.Thread | None = None
        self._closed = False
        #: transactions and reports stored so far: what the coalescing achieves
        self.batches = 0
        self.reports = 0

    @property
    def depth(self) -> int:
        """Reports waiting for the writer (approximate: the queue changes while it is read)."""
        return self._queue.qsize()

    def submit(self, report: PreparedReport) -> Future[Outcome]:
        """Queue ``report``; the future gets its IngestResult or refusal (see ``Outcome``), or the store's error."""
        future: Future[Outcome] = Future()
        with self._lock:
            if self._closed:
                raise DatabaseNotReadyError(
                    "the service is shutting down and stores no more reports",
                    hint="resend the report to a running service (ingest is idempotent)",
                )
            if self._writer is None or not self._writer.is_alive():
                self._writer = threading.Thread(target=self._run, name="accelenv-ingest", daemon=True)
                self._writer.start()
            self._queue.put((report, future))
        return future

    def close(self, timeout_s: float = 30.0) -> None:
        """Store what is queued, then stop the writer; later submissions are refused."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            writer = self._writer
            if writer is None:
                return
            self._queue.put(_STOP)
        writer.join(timeout_s)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            batch: list[_Item] = [item]  # type: ignore[list-item]
            stop = self._fill(batch)
            # a submitter that gave up (its request was cancelled) before the write began is left out
            live = [(r, f) for r, f in batch if f.set_running_or_notify_cancel()]
            try:
                self._store(live)
            except BaseException as exc:  # never leave a submitter waiting; the next submit starts a writer
                for _, future in live:
                    if not future.done():
                        future.set_exception(exc)
                raise
            if stop:
                return

    def _fill(self, batch: list[_Item]) -> bool:
        """Add what is waiting to ``batch``, up to the batch size; True when the stop sign was among it."""
        while len(batch) < self._max_batch:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return False
            if item is _STOP:
                return True
            batch.append(item)  # type: ignore[arg-type]
        return False

    def _store(self, batch: list[_Item]) -> None:
        if not batch:
            return
        try:
            with Session(self._engine) as session:
                outcomes = ingest_prepared(session, [report for report, _ in batch])
        except DatabaseNotReadyError as exc:
            for _, future in batch:
                future.set_exception(exc)
            return
        except Exception as exc:
            if len(batch) == 1:
                batch[0][1].set_exception(exc)
                return
            log.warning("a batch of %d reports failed (%s); storing them one by one", len(batch), exc)
            for one in batch:
                self._store([one])
            return
        self.batches += 1
        self.reports += len(batch)
        for (_, future), outcome in zip(batch, outcomes, strict=True):
            future.set_result(outcome)
