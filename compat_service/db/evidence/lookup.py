"""The resolver's EvidenceLookup over the evidence tables (``accelenv resolve --database``, the service).

A declared cell (torch patch, build, Python, platform) gathers the evidence cells of the device types that
build drives as an accelerator install (``evidence.accelerator_backends``), narrowed to the target's GPU
architecture when known; their health is combined by ``evidence.status.combine_health``.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from compat_service.db.evidence.queries import failing_check_ids
from compat_service.db.evidence.tables import EvidenceCell
from compat_service.domain.errors import Cause, DatabaseNotReadyError
from compat_service.domain.evidence.cells import accelerator_backends
from compat_service.domain.evidence.lookup import CellVerdict
from compat_service.domain.evidence.status import Health, cell_health, combine_health

if TYPE_CHECKING:
    from compat_service.config import Settings

#: failing checks named in a resolver message; the rest are counted
NAMED_FAILURES = 6
#: the groups whose failing checks are named first, in this order: a failed training step is why a cell is
#: broken, and it must not hide behind the dozens of checks that fail with it
NAMED_FIRST = ("smoke", "models", "detect")
_STATUS_OF: dict[Health, str] = {
    "verified": "verified", "partial": "partial", "broken": "broken", "unconfirmed": "declared", "none": "declared",
}


class DatabaseEvidence:
    """Implements ``compat_service.domain.evidence.lookup.EvidenceLookup``."""

    def __init__(
        self, engine: Engine, *, min_hosts: int, min_submitters: int = 1, gpu_arch: str | None = None
    ) -> None:
        self._engine = engine
        self._min_hosts = min_hosts
        self._min_submitters = min_submitters
        self._gpu_arch = gpu_arch

    @contextmanager
    def _session(self) -> Iterator[Session]:
        """A session whose database failing (gone, or a table missing) is `database-not-ready`, exit 9,
        as the service's error handler answers the same failure."""
        try:
            with Session(self._engine) as session:
                yield session
        except sa.exc.OperationalError as exc:
            raise DatabaseNotReadyError(
                "cannot read the evidence from the database",
                hint="check --database; a database of an older accelenv needs `accelenv db upgrade`",
                causes=[Cause(constraint="a reachable database at the current schema", origin="--database",
                              detail=str(exc.orig).splitlines()[0] if exc.orig is not None else None)],
            ) from None

    def _cells(self, session: Session, **where: str) -> list[EvidenceCell]:
        query = sa.select(EvidenceCell)
        for name, value in where.items():
            query = query.where(getattr(EvidenceCell, name) == value)
        if self._gpu_arch is not None:
            query = query.where(col(EvidenceCell.device_arch) == self._gpu_arch)
        return list(session.execute(query).scalars().all())

    def status_for(self, torch_version: str, build: str, python: str, os: str, arch: str) -> CellVerdict | None:
        backends = accelerator_backends(build)
        with self._session() as session:
            found = self._cells(
                session, torch_version=torch_version, torch_build=build, python=python, os=os, arch=arch
            )
            cells = [c for c in found if c.backend in backends]
            if not cells:
                return None
            combined, failing = self._health(session, cells)
        hosts = sum(c.passing_hosts if combined == "verified" else c.hosts for c in cells)
        return CellVerdict(status=_STATUS_OF[combined], hosts=hosts, detail=_describe(combined, failing, hosts))  # type: ignore[arg-type]

    def _health(self, session: Session, cells: list[EvidenceCell]) -> tuple[Health, list[str]]:
        """The cells' combined health, and the failing checks of the cells that have it."""
        healths = {
            c.id: cell_health(c, min_hosts=self._min_hosts, min_submitters=self._min_submitters) for c in cells
        }
        combined = combine_health(healths.values())
        worst = [cid for cid, h in healths.items() if h == combined and cid is not None]
        failing = list(dict.fromkeys(f for ids in failing_check_ids(session, worst).values() for f in ids))
        return combined, failing

    def verified_cells(self, os: str, arch: str) -> list[tuple[str, str, str]]:
        """(torch version, build, Python) of every verified declared-cell on a platform."""
        groups: dict[tuple[str, str, str], list[Health]] = defaultdict(list)
        with self._session() as session:
            for c in self._cells(session, os=os, arch=arch):
                if c.torch_build is not None and c.backend in accelerator_backends(c.torch_build):
                    groups[(c.torch_version, c.torch_build, c.python)].append(
                        cell_health(c, min_hosts=self._min_hosts, min_submitters=self._min_submitters)
                    )
        return sorted(key for key, healths in groups.items() if combine_health(healths) == "verified")


def _describe(health: Health, failing: list[str], hosts: int) -> str:
    if health == "verified":
        return f"required checks passed on {hosts} distinct host(s)"
    if health in ("unconfirmed", "none"):
        return f"reports from {hosts} host(s), not enough to verify"
    rank = {group: n for n, group in enumerate(NAMED_FIRST)}
    failing = sorted(failing, key=lambda check_id: rank.get(check_id.split(".", 1)[0], len(rank)))
    named = ", ".join(failing[:NAMED_FAILURES])
    more = f" and {len(failing) - NAMED_FAILURES} more" if len(failing) > NAMED_FAILURES else ""
    return f"failing checks: {named}{more}" if failing else "failing checks"


def open_evidence_database(database_url: str) -> tuple[Engine, Settings]:
    """A local evidence database (``resolve``/``doctor``/``matrix show --database``), checked to be migrated,
    and its settings (the verified thresholds): the one opener the CLI's ``--database`` flags use."""
    from compat_service.config import load_settings
    from compat_service.db.engine import make_engine
    from compat_service.db.migrate import require_head

    engine = make_engine(database_url)
    try:
        require_head(engine)
    except BaseException:
        engine.dispose()
        raise
    return engine, load_settings(database_url=database_url)


def open_database_evidence(database_url: str, *, gpu_arch: str | None = None) -> DatabaseEvidence:
    """The resolver's evidence lookup over a local database (``accelenv resolve --database``)."""
    engine, settings = open_evidence_database(database_url)
    return DatabaseEvidence(
        engine, min_hosts=settings.verified_min_hosts, min_submitters=settings.verified_min_submitters,
        gpu_arch=gpu_arch,
    )


class EvidenceVersion:
    """A stamp that changes when evidence changes, re-read at most every ``refresh_s`` seconds per process:
    part of the service's resolve-cache key, so cached resolutions follow new reports within that delay
    (``current(check_now=True)`` reads it now: the matrix rows follow at once).

    The stamp is (evidence cells, reports, newest last_seen) over ``evidence_cell``: an ingest adds a report
    and moves a last_seen to its time, a withdrawal removes reports; each changes it. Every worker reads it
    from the database, so it sees what the others stored."""

    def __init__(self, engine: Engine, *, refresh_s: float) -> None:
        self._engine = engine
        self._refresh_s = refresh_s
        self._lock = threading.Lock()
        self._stamp = ""
        self._cells = 0
        self._read_at = float("-inf")

    @property
    def has_evidence(self) -> bool:
        """Whether any report was stored (as of the last read of :meth:`current`)."""
        return self._cells > 0

    def current(self, *, check_now: bool = False, connection: sa.Connection | None = None) -> str:
        """The stamp; ``check_now``: read now (on ``connection`` when given), not at most every ``refresh_s``."""
        now = time.monotonic()
        if check_now:
            stamp = self._read(connection)
            with self._lock:
                self._read_at = now
            return stamp
        if now - self._read_at < self._refresh_s:
            return self._stamp
        with self._lock:
            if now - self._read_at >= self._refresh_s:
                self._read(None)
                self._read_at = now
        return self._stamp

    def _read(self, connection: sa.Connection | None) -> str:
        query = sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(EvidenceCell.reports), 0),
                          sa.func.max(EvidenceCell.last_seen))
        if connection is not None:
            cells, reports, last = connection.execute(query).one()
        else:
            with self._engine.connect() as conn:
                cells, reports, last = conn.execute(query).one()
        stamp = f"{cells}:{reports}:{last}"
        self._stamp, self._cells = stamp, cells
        return stamp
