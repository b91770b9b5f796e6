"""What ingest needs from a probe report, computed before any transaction: a ``PreparedReport``.

A parsed report is ~160 check models with their dicts: thousands of Python objects. Ingest keeps only what
it stores and counts (the row, the canonical body, the cell key, the verdict, the checks as three tuples of
shared strings), so the parsed model can be dropped at once: a batch then holds 50 compact records instead
of 50 object trees, which measured ~2x cheaper to validate and store (benchmarks/bench_ingest.py).
"""

from __future__ import annotations

import collections
import datetime as dt
import hashlib
import operator
import threading
from dataclasses import dataclass
from typing import Any

from cachetools import LRUCache

from compat_service.domain.evidence.cells import CellKey, cell_key_of
from compat_service.domain.evidence.observed_builds import BuildObservation, observation_of
from compat_service.domain.evidence.perf import headline_json
from compat_service.domain.evidence.report import CHECK_STATUSES, MAX_TEXT, CheckResult, ProbeReport, Summary
from compat_service.domain.evidence.status import ReportVerdict, classify_report, is_bad, is_failing

#: columns of a check counter row, in order (``evidence_check`` minus cell_id and shard)
CHECK_COLUMNS = ("check_id", "group", *CHECK_STATUSES, "aten_op", "last_failure")
_STATUS_COLUMN = {status: 2 + i for i, status in enumerate(CHECK_STATUSES)}
_NO_COUNTS = (0,) * len(CHECK_STATUSES)

# C-level accessors: a batch of 50 reports holds ~8000 checks, so per-check work happens in map/zip/Counter
_ID = operator.attrgetter("id")
_GROUP = operator.attrgetter("group")
_STATUS = operator.attrgetter("status")


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def as_utc(value: dt.datetime) -> dt.datetime:
    """A timestamp in UTC; one without an offset is taken as UTC."""
    return value.astimezone(dt.timezone.utc) if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)


@dataclass(slots=True)
class PreparedReport:
    key: CellKey
    digest: str
    #: the ``probe_report`` row without cell_id: report_id, host, times, ok, body (canonical JSON) and its sha256
    report_row: dict[str, Any]
    verdict: ReportVerdict
    check_ids: tuple[str, ...]
    check_groups: tuple[str, ...]
    check_statuses: tuple[str, ...]
    #: the aten op each check exercises (aligned with check_ids), or None
    aten_ops: tuple[str | None, ...]
    #: check id -> what went wrong, for the failing checks
    failures: dict[str, str]
    #: the report's perf headline as JSON text (``domain.evidence.perf``), None when it has no perf block
    perf: str | None = None
    #: the build facts the report states (compiled arch list, runtimes), None when it states none
    observation: BuildObservation | None = None
    #: the submitter evidence counts the report as: its token's owner (``ApiTokenPublic.counted_as``); None:
    #: the token itself
    owner_key: int | None = None
    #: bytes of report bodies its token may store in all (ACCELENV_QUOTA_TOKEN_REPORT_BYTES); 0: no quota
    byte_quota: int = 0

    @property
    def report_id(self) -> str:
        return self.report_row["report_id"]

    @property
    def submitter(self) -> int:
        """The token that sent this report, 0 when unknown."""
        return self.report_row["submitter_id"] or 0

    @property
    def counted_submitter(self) -> int:
        """Who this report counts for among a cell's distinct submitters: its token's owner (two tokens of
        one owner are one submitter), 0 when unknown."""
        return self.owner_key or self.submitter


def summary_of(checks: list[CheckResult]) -> Summary:
    """The summary ``checks`` add up to; stored in place of the one the report was sent with."""
    counts = collections.Counter(map(_STATUS, checks))
    return Summary(total=len(checks), counts=dict(counts), ok=not any(is_bad(c.group, c.status) for c in checks))


def prepare_report(
    report: ProbeReport, now: dt.datetime | None = None, *, submitter_id: int | None = None,
    owner_key: int | None = None, byte_quota: int = 0,
) -> PreparedReport:
    """``report`` reduced to what ingest stores and counts; ``now`` is when it was received,
    ``submitter_id`` the token that sent it (None only for reports stored outside the API), ``owner_key``
    whom it counts for (the token's owner), ``byte_quota`` what that token may store in all. The stored
    body carries the summary derived from its checks. Raises ReportInvalidError when the cell key is not
    storable (see ``cell_key_of``)."""
    key = cell_key_of(report.environment)
    checks = report.checks
    summary = summary_of(checks)
    if summary != report.summary:
        report = report.model_copy(update={"summary": summary})
    # the optional parts a report did not carry stay out of the stored body (bodies stored before them are alike)
    absent: dict[str, Any] = {"summary": {"groups"}} if report.summary.groups is None else {}
    if report.perf is None:
        absent["perf"] = True
    body = report.model_dump_json(exclude=absent or None)
    ids = tuple(map(_ID, checks))
    return PreparedReport(
        key=key,
        digest=key.digest(),
        report_row={
            "report_id": str(report.report_id),
            "host_fingerprint": report.environment.host_fingerprint,
            "submitter_id": submitter_id,
            "created_at": as_utc(report.created_at),
            "received_at": as_utc(now) if now is not None else utcnow(),
            "ok": summary.ok,
            "body_sha256": hashlib.sha256(body.encode()).hexdigest(),
            "body": body,
        },
        verdict=classify_report(checks),
        check_ids=ids,
        check_groups=tuple(map(_GROUP, checks)),
        check_statuses=tuple(map(_STATUS, checks)),
        aten_ops=_aten_ops(ids, checks),
        failures={
            c.id: (c.detail or c.status)[:MAX_TEXT]
            for c in checks
            if c.status != "passed" and is_failing(c.group, c.status)
        },
        perf=headline_json(report),
        observation=observation_of(report),
        owner_key=owner_key,
        byte_quota=byte_quota,
    )


def _aten_op(check: CheckResult) -> str | None:
    op = check.data.get("aten_op") or check.data.get("aten") if check.data else None
    return op[:200] if isinstance(op, str) else None


# A check id names one op variant and dtype, so the aten op it exercises is the same in every report: it is
# read from the first report showing each distinct list of check ids (a fleet runs a few probe versions).
_ATEN_CACHE_SIZE = 256
_ATEN_BY_ID_LIST: LRUCache[tuple[str, ...], tuple[str | None, ...]] = LRUCache(maxsize=_ATEN_CACHE_SIZE)
_aten_lock = threading.Lock()  # cachetools' caches are not thread-safe (a read reorders them)


def _aten_ops(ids: tuple[str, ...], checks: list[CheckResult]) -> tuple[str | None, ...]:
    with _aten_lock:
        known = _ATEN_BY_ID_LIST.get(ids)
    if known is not None:
        return known
    ops = tuple(map(_aten_op, checks))
    with _aten_lock:
        _ATEN_BY_ID_LIST[ids] = ops
    return ops


def check_rows(reports: list[PreparedReport]) -> list[list[Any]]:
    """The checks of ``reports`` (all of one cell) summed per check id: one row per id in ``CHECK_COLUMNS``
    order, sorted by id (one upsert must not touch a row twice). The last failure is the latest report's,
    as if their upserts ran one after the other."""
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    groups: dict[str, str] = {}
    aten_ops: dict[str, str | None] = {}
    last_failure: dict[str, str] = {}
    seen_aten: set[int] = set()  # reports with one list of check ids share one aten tuple: read it once
    for p in reports:
        counts.update(zip(p.check_ids, p.check_statuses))
        groups.update(zip(p.check_ids, p.check_groups))
        if id(p.aten_ops) not in seen_aten:
            seen_aten.add(id(p.aten_ops))
            aten_ops.update((i, op) for i, op in zip(p.check_ids, p.aten_ops) if op is not None)
        last_failure.update(p.failures)
    rows: dict[str, list[Any]] = {
        check_id: [check_id, group, *_NO_COUNTS, aten_ops.get(check_id), last_failure.get(check_id)]
        for check_id, group in groups.items()
    }
    for (check_id, status), n in counts.items():
        rows[check_id][_STATUS_COLUMN[status]] += n
    return [rows[check_id] for check_id in sorted(rows)]
