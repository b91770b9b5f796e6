"""The resolver's matrix, read from what is loaded in the database.

Each ``matrix_load`` row keeps the validated MatrixData document; the repository decodes the latest one into
the matrix's rows (``rows.MatrixTables.from_json``: no pydantic on the way) and builds the domain's in-memory
matrix over them, so the service resolves from exactly the rows the CLI would resolve from with the
same files. The built matrix is cached per process and rebuilt only when a newer load
appears (checked at most every ``refresh_s`` seconds), so a request costs no query in the steady state.

The matrix also carries the arch lists learned from agreeing probe reports (``observed_build``), below the
curated rows: the same check notices new observations and rebuilds the matrix (the data is reused).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from compat_service.db.matrix.tables import MatrixLoad
from compat_service.domain.errors import DatabaseNotReadyError
from compat_service.domain.matrix.interface import InMemoryMatrix
from compat_service.domain.matrix.model.rows import ArchList, MatrixTables


@dataclass(frozen=True)
class MatrixSnapshot:
    """One loaded matrix: its load id, content hash, its rows and the resolver's view of them."""

    load_id: int
    content_hash: str
    data: MatrixTables
    matrix: InMemoryMatrix
    #: (rows, newest received_at) of observed_build when the matrix was built; (0, None) = none
    observed: tuple[int, str | None] = (0, None)

    @property
    def version(self) -> str:
        """Short matrix version used in responses and cache keys (it changes with the observed facts too)."""
        if self.observed == (0, None):
            return self.content_hash[:16]
        return hashlib.sha256(f"{self.content_hash}|{self.observed}".encode()).hexdigest()[:16]


def build_matrix(data: MatrixTables, observed: Sequence[ArchList] = ()) -> InMemoryMatrix:
    """The domain's in-memory Matrix over ``data`` and the observed arch lists."""
    return InMemoryMatrix(data, observed)


def _observed_rows(engine: Engine) -> tuple[tuple[int, str | None], list[ArchList]]:
    from compat_service.db.evidence.build_facts import observed_facts, observed_state

    state = observed_state(engine)
    if state[0] == 0:
        return state, []
    return state, [build.as_arch_list() for build in observed_facts(engine).builds.values()]


def latest_load_ref(engine: Engine) -> tuple[int, str] | None:
    with Session(engine) as session:
        row = session.exec(
            select(MatrixLoad.id, MatrixLoad.content_hash).order_by(MatrixLoad.id.desc()).limit(1)  # type: ignore[union-attr]
        ).first()
    return (row[0], row[1]) if row else None


def read_snapshot(engine: Engine, load_id: int | None = None) -> MatrixSnapshot | None:
    with Session(engine) as session:
        query = select(MatrixLoad)
        query = query.where(MatrixLoad.id == load_id) if load_id is not None else query
        row = session.exec(query.order_by(MatrixLoad.id.desc()).limit(1)).first()  # type: ignore[union-attr]
    if row is None:
        return None
    data = MatrixTables.from_json(json.loads(row.data))  # validated when it was loaded (db/matrix/loader.py)
    state, observed = _observed_rows(engine)
    return MatrixSnapshot(row.id or 0, row.content_hash, data, build_matrix(data, observed), state)


class MatrixRepository:
    """Hands out the current MatrixSnapshot, following new loads in the database."""

    def __init__(self, engine: Engine, *, refresh_s: float = 5.0, resolver_memo_size: int = 4096) -> None:
        self._engine = engine
        self._refresh_s = refresh_s
        #: set on every matrix it builds (MemoStore.request_limit; Settings.resolver_memo_size)
        self._resolver_memo_size = resolver_memo_size
        self._lock = threading.Lock()
        self._snapshot: MatrixSnapshot | None = None
        self._checked_at = float("-inf")

    def is_fresh(self) -> bool:
        """True when `current()` will answer from memory without touching the database."""
        return self._snapshot is not None and time.monotonic() - self._checked_at < self._refresh_s

    def current(self, *, check_now: bool = False) -> MatrixSnapshot:
        """The snapshot of the newest load; ``check_now`` asks the database even within ``refresh_s``
        (for answers that also read the matrix tables, which always show the newest load)."""
        now = time.monotonic()
        if not check_now and self._snapshot is not None and now - self._checked_at < self._refresh_s:
            return self._snapshot
        with self._lock:
            if check_now or self._snapshot is None or now - self._checked_at >= self._refresh_s:
                self._refresh()
                self._checked_at = now
        if self._snapshot is None:
            raise DatabaseNotReadyError(
                "no matrix is loaded in the database",
                hint="run `accelenv db load` (or start with ACCELENV_LOAD_MATRIX_ON_START=true)",
            )
        return self._snapshot

    def _refresh(self) -> None:
        before = self._snapshot
        self._follow()
        if self._snapshot is not None and self._snapshot is not before:
            self._snapshot.matrix.memo.request_limit = self._resolver_memo_size

    def _follow(self) -> None:
        ref = latest_load_ref(self._engine)
        if ref is None:
            self._snapshot = None
        elif self._snapshot is None or self._snapshot.load_id != ref[0]:
            self._snapshot = read_snapshot(self._engine, ref[0])
        else:
            from compat_service.db.evidence.build_facts import observed_state

            if observed_state(self._engine) != self._snapshot.observed:
                old = self._snapshot
                state, observed = _observed_rows(self._engine)
                self._snapshot = MatrixSnapshot(
                    old.load_id, old.content_hash, old.data, build_matrix(old.data, observed), state
                )
