"""The rows of `GET /v1/matrix` for one matrix load and one state of the evidence: built once, paged cheaply.

Assembling the rows (declared cells joined with their evidence cells, then the observed ones) is what a
matrix request used to spend its time on: the queries are sub-millisecond, but every request built every
row of its filter as a `MatrixCell` (thousands of pydantic models for a page of 100; benchmarks/bench_scale.md).
`MatrixRows` holds every row once, as a plain tuple, in the order the answer lists them; `select` filters
them (memoized per filter) and `page` turns only the rows of one page into models, with their failing checks
(read from the database once per cell). The answer is the same as assembling it afresh from the same data.

A `MatrixRows` describes the evidence as it was when it was read: the service keys it by the matrix load and
the evidence stamp (``EvidenceVersion``) read before it, so new evidence makes a new one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import sqlalchemy as sa
from sqlmodel import Session

from compat_service.db.evidence_models import EvidenceCell
from compat_service.db.evidence_queries import MatrixFilter, cell_summary, failing_check_ids
from compat_service.domain.evidence.cells import CellKey, DeclaredCell, DeclaredMatrix, MatrixCell

#: a row: the values of `MatrixCell`'s fields but its failing checks, in this order, then the evidence
#: cell id (None for a declared cell without evidence)
FIELDS = tuple(name for name in MatrixCell.model_fields if name != "failing_checks")
Row = tuple[Any, ...]
_TORCH, _BUILD, _PYTHON, _OS, _ARCH, _STATUS, _BACKEND = (
    FIELDS.index(name) for name in ("torch_version", "torch_build", "python", "os", "arch", "status", "backend")
)
_KEY_FIELDS = tuple(CellKey.model_fields)
_COLUMNS = [c for c in EvidenceCell.__table__.columns]  # type: ignore[attr-defined]
#: filters whose selection a MatrixRows keeps
SELECTIONS = 256


class MatrixRows:
    """Every row of the matrix answer for one matrix load and evidence state, unfiltered."""

    def __init__(self, declared: list[tuple[str, Row, list[Row]]], observed: list[Row]) -> None:
        #: per declared cell, in the matrix's order: its torch version, its row without evidence, and the
        #: rows of its evidence cells (by key hash)
        self._declared = declared
        self._observed = observed
        self._lock = threading.Lock()
        self._selections: OrderedDict[Hashable, list[Row]] = OrderedDict()
        self._failing: dict[int, list[str]] = {}

    def select(self, flt: MatrixFilter) -> list[Row]:
        """The rows ``flt`` keeps, in the answer's order (the list is shared: do not change it)."""
        key = flt.cache_key()
        with self._lock:
            found = self._selections.get(key)
            if found is not None:
                self._selections.move_to_end(key)
                return found
        rows = self._select(flt)
        with self._lock:
            self._selections[key] = rows
            if len(self._selections) > SELECTIONS:
                self._selections.popitem(last=False)
        return rows

    def _select(self, flt: MatrixFilter) -> list[Row]:
        def keeps(r: Row) -> bool:
            return flt.keeps_values(r[_TORCH], r[_BUILD], r[_PYTHON], r[_OS], r[_ARCH], r[_BACKEND], r[_STATUS])

        out: list[Row] = []
        for torch_version, bare, evidence in self._declared:
            if not flt.torch_matches(torch_version):
                continue
            taking_part = [r for r in evidence if flt.considers(r[_TORCH], r[_BUILD], r[_PYTHON], r[_OS], r[_BACKEND])]
            if taking_part:
                out.extend(r for r in taking_part if keeps(r))
            elif keeps(bare):
                out.append(bare)
        out.extend(r for r in self._observed if keeps(r))
        return out

    def failing(self, session: Session, rows: list[Row]) -> dict[int, list[str]]:
        """The failing check ids of the rows' evidence cells, read once per cell."""
        with self._lock:
            missing = [r[-1] for r in rows if r[-1] is not None and r[-1] not in self._failing]
        if missing:
            found = failing_check_ids(session, missing)
            with self._lock:
                for cid in missing:
                    self._failing[cid] = found.get(cid, [])
        with self._lock:
            return {r[-1]: self._failing[r[-1]] for r in rows if r[-1] is not None}

    def page(self, session: Session, rows: list[Row]) -> list[MatrixCell]:
        """The rows as `MatrixCell` models, with their failing checks."""
        failing = self.failing(session, rows)
        return [
            MatrixCell(**dict(zip(FIELDS, r)), failing_checks=failing[r[-1]] if r[-1] is not None else [])
            for r in rows
        ]


def cell_of(row: Row) -> MatrixCell:
    """A row as a `MatrixCell` without its failing checks."""
    return MatrixCell(**dict(zip(FIELDS, row)))


def build_matrix_rows(
    session: Session, declared: DeclaredMatrix, *, min_hosts: int, min_submitters: int,
    owners: dict[tuple[Any, ...], DeclaredCell | None] | None = None,
) -> MatrixRows:
    """Every row: each declared cell with its evidence cells (or alone, without evidence), then the observed
    cells. ``owners`` memoizes the declared cell of an evidence cell key across builds of the same matrix load
    (a pure function of the two)."""
    owners = {} if owners is None else owners
    by_declared: dict[DeclaredCell, list[tuple[str, Row]]] = {}
    observed: list[tuple[tuple[str, str, str], Row]] = []
    for cell in session.execute(sa.select(*_COLUMNS)).all():
        key = tuple(getattr(cell, f) for f in _KEY_FIELDS)
        if key in owners:
            owner = owners[key]
        else:
            owner = owners[key] = declared.declared_cell_of(CellKey(**dict(zip(_KEY_FIELDS, key))))
        row = _row(cell, declared=owner is not None, min_hosts=min_hosts, min_submitters=min_submitters)
        if owner is None:
            observed.append(((cell.torch_version, cell.backend, cell.key_hash), row))
        else:
            by_declared.setdefault(owner, []).append((cell.key_hash, row))
    groups = []
    for dcell in declared.cells:
        bare = _row_values(
            torch_version=dcell.torch_version, torch_build=dcell.torch_build, python=dcell.python, os=dcell.os,
            arch=dcell.arch, declared=True, status="declared", health="none",
        )
        groups.append((dcell.torch_version, bare + (None,), [r for _h, r in sorted(by_declared.get(dcell, ()))]))
    return MatrixRows(groups, [r for _k, r in sorted(observed, key=lambda o: o[0])])


_DEFAULTS = {name: MatrixCell.model_fields[name].get_default(call_default_factory=True) for name in FIELDS}


def _row_values(**values: Any) -> Row:
    return tuple(values[name] if name in values else _DEFAULTS[name] for name in FIELDS)


def _row(cell: Any, *, declared: bool, min_hosts: int, min_submitters: int) -> Row:
    """The row of one evidence cell (a row of ``evidence_cell``), then its id."""
    return _row_values(
        **{name: getattr(cell, name) for name in _KEY_FIELDS},
        **cell_summary(cell, declared=declared, min_hosts=min_hosts, min_submitters=min_submitters),
    ) + (cell.id,)


def matrix_cells(
    session: Session, declared: DeclaredMatrix, flt: MatrixFilter, *, min_hosts: int,
    min_submitters: int = 1,
) -> list[tuple[MatrixCell, int | None]]:
    """Every matrix row matching ``flt`` as a model, without its failing checks, with its evidence cell id
    (None for a declared cell with no report): for a caller that needs every row once (the CLI, the
    heatmap page), where ``GET /v1/matrix`` keeps a `MatrixRows` and pages it."""
    rows = build_matrix_rows(session, declared, min_hosts=min_hosts, min_submitters=min_submitters)
    return [(cell_of(r), r[-1]) for r in rows.select(flt)]


class MatrixRowsCache:
    """The `MatrixRows` of the newest (matrix load, evidence stamp) keys a worker was asked for.

    One build at a time: requests arriving while the rows of their key are being built wait for them
    instead of building them again. The last ``size`` keys are kept (two: a request that read the stamp just
    before new evidence does not throw away the rows of the newer stamp)."""

    def __init__(self, size: int = 2) -> None:
        self._size = size
        self._entries: OrderedDict[Hashable, MatrixRows] = OrderedDict()
        self._lock = threading.Lock()
        self._build_lock = threading.Lock()
        #: per matrix load: evidence cell key -> its declared cell (or None: observed)
        self.owners: dict[str, dict[tuple[Any, ...], DeclaredCell | None]] = {}

    def get(self, key: Hashable, build: Callable[[], MatrixRows]) -> MatrixRows:
        found = self._lookup(key)
        if found is not None:
            return found
        with self._build_lock:
            found = self._lookup(key)
            if found is None:
                found = build()
                with self._lock:
                    self._entries[key] = found
                    while len(self._entries) > self._size:
                        self._entries.popitem(last=False)
        return found

    def owners_of(self, content_hash: str) -> dict[tuple[Any, ...], DeclaredCell | None]:
        with self._lock:
            if content_hash not in self.owners:
                self.owners.clear()  # one load at a time is current: forget the others
                self.owners[content_hash] = {}
            return self.owners[content_hash]

    def _lookup(self, key: Hashable) -> MatrixRows | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found
