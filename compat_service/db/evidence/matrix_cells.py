"""The rows of `GET /v1/matrix` for one matrix load and one state of the evidence: built once, paged cheaply.

Assembling the rows (declared cells joined with their evidence cells, then the observed ones) is what a
matrix request used to spend its time on: the queries are sub-millisecond, but every request built every
row of its filter as a `MatrixCell` (thousands of pydantic models for a page of 100; benchmarks/bench_scale.md).
`MatrixRows` holds every row once, as a `MatrixRow` (a named tuple: read by attribute, as light as a plain
tuple), in the order the answer lists them; `select` filters them (memoized per filter) and `page` turns only
the rows of one page into the wire model, `MatrixCell`, with their failing checks. The heatmap counts the
same rows.
The answer is the same as assembling it afresh from the same data.

A `MatrixRows` describes the evidence as it was when it was read: the service keys it by the matrix load and
the evidence stamp (``EvidenceVersion``) read before it, so new evidence makes a new one. While reports
arrive that is every request, so a `MatrixRowsBuilder` (one per matrix load) makes a new one cheaply: it
reads the evidence cells as plain tuples and reuses what it derived from an unchanged one (its row, its
declared cell, its failing checks: an ingest or a withdrawal changes a cell's counters, and its checks, in
one transaction), so only the cells that changed cost more than a comparison.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

import sqlalchemy as sa
from cachetools import LRUCache
from sqlmodel import Session

from compat_service.db.engine import core_table
from compat_service.db.evidence.queries import MatrixFilter, cell_summary, failing_check_ids
from compat_service.db.evidence.tables import EvidenceCell
from compat_service.domain.evidence.cells import CellKey, DeclaredMatrix, MatrixCell
from compat_service.domain.evidence.status import CellStatus, Health

#: a row's fields: `MatrixCell`'s but its failing checks (read per page), in this order
FIELDS = tuple(name for name in MatrixCell.model_fields if name != "failing_checks")
#: one row of the matrix answer and the heatmap: `MatrixCell`'s fields but its failing checks, then the evidence
#: cell id (None for a declared cell without evidence). A named tuple, not a model: the heatmap counts every
#: row of its filter, and a `MatrixCell` per row made the first heatmap after 10 000 observed cells peak
#: ~50 MB above the worker's steady size (benchmarks/bench_memory_soak.md)
class MatrixRow(NamedTuple):
    # `MatrixCell`'s fields but failing_checks, in its order (tests/evidence/test_matrix_rows.py pins them)
    torch_version: str
    torch_build: str | None
    python: str
    os: str
    arch: str
    declared: bool
    status: CellStatus
    health: Health
    backend: str | None
    runtime_version: str | None
    driver_version: str | None
    device_arch: str | None
    reports: int
    hosts: int
    passing_hosts: int
    submitters: int
    passing_submitters: int
    first_seen: dt.datetime | None
    last_seen: dt.datetime | None
    perf: list[dict[str, Any]] | None
    family: str | None
    build_runtime: str | None
    evidence_cell_id: int | None


Row = MatrixRow
_KEY_FIELDS = tuple(CellKey.model_fields)
#: what is read of each evidence cell (its key, its counters, first and last seen)
_COLUMNS = list(core_table(EvidenceCell).columns)
_KEY_AT = [[c.name for c in _COLUMNS].index(f) for f in _KEY_FIELDS]
_ID_AT, _HASH_AT = ([c.name for c in _COLUMNS].index(f) for f in ("id", "key_hash"))
#: PostgreSQL's row version of an evidence cell
_XMIN = sa.cast(sa.literal_column("evidence_cell.xmin"), sa.Text).label("row_version")
#: filters whose selection a MatrixRows keeps
SELECTIONS = 128
_DEFAULTS = {name: MatrixCell.model_fields[name].get_default(call_default_factory=True) for name in FIELDS}


class _Cell:
    """What a builder derived from one state of one evidence cell."""

    __slots__ = ("owner", "key_hash", "row", "raw", "failing")

    def __init__(self, owner: int | None, key_hash: str, row: Row, raw: tuple[Any, ...]) -> None:
        #: the index of its declared cell in the matrix's list, None when observed
        self.owner = owner
        self.key_hash = key_hash
        self.row = row
        #: its values as read
        self.raw = raw
        #: its failing check ids, read when a page first shows it
        self.failing: list[str] | None = None


class MatrixRows:
    """Every row of the matrix answer for one matrix load and evidence state, unfiltered."""

    def __init__(
        self, declared: list[tuple[str, Row, list[Row]]], observed: list[Row], cells: dict[int, _Cell]
    ) -> None:
        #: per declared cell, in the matrix's order: its torch version, its row without evidence, and the
        #: rows of its evidence cells (by key hash)
        self._declared = declared
        self._observed = observed
        self._cells = cells
        self._lock = threading.Lock()
        self._selections: LRUCache[Hashable, list[Row]] = LRUCache(SELECTIONS)

    def select(self, flt: MatrixFilter) -> list[Row]:
        """The rows ``flt`` keeps, in the answer's order (the list is shared: do not change it)."""
        key = flt.cache_key()
        with self._lock:
            found = self._selections.get(key)
        if found is None:
            found = self._select(flt)
            with self._lock:
                self._selections[key] = found
        return found

    def _select(self, flt: MatrixFilter) -> list[Row]:
        def keeps(r: Row) -> bool:
            return flt.keeps_values(r.torch_version, r.torch_build, r.python, r.os, r.arch, r.backend, r.status)

        out: list[Row] = []
        for torch_version, bare, evidence in self._declared:
            if not flt.torch_matches(torch_version):
                continue
            taking_part = [
                r for r in evidence if flt.considers(r.torch_version, r.torch_build, r.python, r.os, r.backend)
            ]
            if taking_part:
                out.extend(r for r in taking_part if keeps(r))
            elif keeps(bare):
                out.append(bare)
        out.extend(r for r in self._observed if keeps(r))
        return out

    def page(self, session: Session, rows: list[Row]) -> list[MatrixCell]:
        """The rows as `MatrixCell` models, with their failing checks (read once per state of a cell)."""
        cells = [self._cells[r.evidence_cell_id] if r.evidence_cell_id is not None else None for r in rows]
        missing = [c for c in cells if c is not None and c.failing is None]
        if missing:
            found = failing_check_ids(session, [c.raw[_ID_AT] for c in missing])
            for c in missing:
                c.failing = found.get(c.raw[_ID_AT], [])
        return [cell_of(r, list(c.failing or ()) if c is not None else []) for r, c in zip(rows, cells)]


def cell_of(row: Row, failing_checks: list[str] | None = None) -> MatrixCell:
    """A row as the wire model, `MatrixCell` (without failing checks unless given)."""
    return MatrixCell(**dict(zip(FIELDS, row)), failing_checks=failing_checks or [])


class MatrixRowsBuilder:
    """Builds the `MatrixRows` of one matrix load, again after each change of the evidence."""

    def __init__(self, declared: DeclaredMatrix, *, min_hosts: int, min_submitters: int) -> None:
        self._declared = declared
        self._min_hosts = min_hosts
        self._min_submitters = min_submitters
        self._index = {dcell: i for i, dcell in enumerate(declared.cells)}
        self._bare = [
            _row_values(
                torch_version=d.torch_version, torch_build=d.torch_build, python=d.python, os=d.os, arch=d.arch,
                declared=True, status="declared", health="none", evidence_cell_id=None,
            )
            for d in declared.cells
        ]
        #: evidence cell key -> the index of its declared cell (None: observed); a key never changes its cell
        self._owners: dict[tuple[Any, ...], int | None] = {}
        #: the evidence cells of the last build by id, and (PostgreSQL) the row version each was read at
        self._cells: dict[int, _Cell] = {}
        self._versions: dict[int, str] = {}
        #: the last build's rows: per declared cell (torch version, bare row, evidence rows), and observed
        self._groups: list[tuple[str, Row, list[Row]]] = []
        self._observed: list[Row] = []
        self._lock = threading.Lock()

    def build(self, session: Session) -> MatrixRows:
        with self._lock:  # one at a time: each build starts from the one before
            conn = session.connection()
            before = self._cells
            cells = self._read_changed(conn) if conn.dialect.name == "postgresql" else self._read_all(conn)
            changed = [c for cid, c in cells.items() if before.get(cid) is not c]
            if cells.keys() != before.keys() or not self._groups:
                self._regroup(cells)
            elif changed:
                self._patch(cells, changed)
            self._cells = cells
            return MatrixRows(self._groups, self._observed, cells)

    def _regroup(self, cells: dict[int, _Cell]) -> None:
        by_declared: dict[int, list[_Cell]] = {}
        observed: list[_Cell] = []
        for cell in cells.values():
            if cell.owner is None:
                observed.append(cell)
            else:
                by_declared.setdefault(cell.owner, []).append(cell)
        self._groups = [
            (dcell.torch_version, self._bare[i], self._evidence_rows(by_declared.get(i, [])))
            for i, dcell in enumerate(self._declared.cells)
        ]
        self._observed = self._observed_rows(observed)

    def _patch(self, cells: dict[int, _Cell], changed: list[_Cell]) -> None:
        """The same evidence cells as the last build, some of them read anew: only their groups change."""
        owners = {c.owner for c in changed}
        groups = list(self._groups)
        for i in owners:
            if i is not None:
                torch_version, bare, rows = groups[i]
                groups[i] = (torch_version, bare, [cells[_cell_id(r)].row for r in rows])
        self._groups = groups
        if None in owners:
            self._observed = [cells[_cell_id(r)].row for r in self._observed]

    @staticmethod
    def _evidence_rows(cells: list[_Cell]) -> list[Row]:
        return [c.row for c in sorted(cells, key=lambda c: c.key_hash)]

    @staticmethod
    def _observed_rows(cells: list[_Cell]) -> list[Row]:
        return [c.row for c in sorted(cells, key=lambda c: (c.row.torch_version, c.row.backend, c.key_hash))]

    def _read_all(self, conn: sa.Connection) -> dict[int, _Cell]:
        """Every evidence cell, reusing what was derived from one read with the same values before."""
        cells = {}
        for raw in map(tuple, conn.execute(sa.select(*_COLUMNS)).all()):
            cell = self._cells.get(raw[_ID_AT])
            cells[raw[_ID_AT]] = cell if cell is not None and cell.raw == raw else self._derive(raw)
        return cells

    def _read_changed(self, conn: sa.Connection) -> dict[int, _Cell]:
        """PostgreSQL: the row version (``xmin``: every UPDATE writes a new one) of every evidence cell, then
        only the rows whose version is new to this builder, each with the version it was read at. A row
        changed between the two reads is read at its newer version; the next build sees that one again."""
        versions: dict[int, str] = {
            cid: version for cid, version in conn.execute(sa.select(core_table(EvidenceCell).c.id, _XMIN))
        }
        stale = [cid for cid, version in versions.items() if self._versions.get(cid) != version]
        cells = {cid: cell for cid, cell in self._cells.items() if cid in versions}
        known = {cid: v for cid, v in self._versions.items() if cid in versions}
        query = sa.select(_XMIN, *_COLUMNS)
        if len(stale) * 2 > len(versions):  # most of them: one scan
            chunks = [query]
        else:
            chunks = [
                query.where(EvidenceCell.id.in_(stale[i : i + 1000]))  # type: ignore[union-attr]
                for i in range(0, len(stale), 1000)
            ]
        for chunk in chunks if stale else ():
            for version, *values in conn.execute(chunk).all():
                raw = tuple(values)
                cid = raw[_ID_AT]
                cell = cells.get(cid)
                if cell is None or cell.raw != raw:
                    cells[cid] = self._derive(raw)
                known[cid] = version
        self._versions = known
        return cells

    def _derive(self, raw: tuple[Any, ...]) -> _Cell:
        key = tuple(raw[i] for i in _KEY_AT)
        if key in self._owners:
            owner = self._owners[key]
        else:
            dcell = self._declared.declared_cell_of(CellKey(**dict(zip(_KEY_FIELDS, key))))
            owner = self._owners[key] = None if dcell is None else self._index[dcell]
        values = dict(zip((c.name for c in _COLUMNS), raw))
        cell = _Values(values)
        row = _row_values(
            **{name: values[name] for name in _KEY_FIELDS},
            **cell_summary(cell, declared=owner is not None, min_hosts=self._min_hosts,  # type: ignore[arg-type]
                           min_submitters=self._min_submitters),
            evidence_cell_id=raw[_ID_AT],
        )
        return _Cell(owner, raw[_HASH_AT], row, raw)


class _Values:
    """An evidence cell's values by attribute, as `cell_summary` reads them."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)


def _cell_id(row: Row) -> int:
    """The evidence cell id of a row with evidence (every row but a declared cell's bare one)."""
    assert row.evidence_cell_id is not None
    return row.evidence_cell_id


def _row_values(*, evidence_cell_id: int | None, **values: Any) -> Row:
    given = (values[name] if name in values else _DEFAULTS[name] for name in FIELDS)
    return MatrixRow._make((*given, evidence_cell_id))


def matrix_cells(
    session: Session, declared: DeclaredMatrix, flt: MatrixFilter, *, min_hosts: int,
    min_submitters: int = 1,
) -> list[tuple[MatrixCell, int | None]]:
    """Every matrix row matching ``flt`` as a model, without its failing checks, with its evidence cell id
    (None for a declared cell with no report): for a caller that needs every row once (the CLI, the
    heatmap page), where ``GET /v1/matrix`` keeps a `MatrixRows` and pages it."""
    rows = MatrixRowsBuilder(declared, min_hosts=min_hosts, min_submitters=min_submitters).build(session)
    return [(cell_of(r), r.evidence_cell_id) for r in rows.select(flt)]


class MatrixRowsCache:
    """A worker's `MatrixRows` of the newest (matrix load, evidence stamp) keys it was asked for, and the
    builder of the current matrix load.

    One build at a time: requests arriving while the rows of their key are being built wait for them
    instead of building them again. The last ``size`` keys are kept (two: a request that read the stamp just
    before new evidence does not throw away the rows of the newer stamp)."""

    def __init__(self, size: int = 2) -> None:
        self._entries: LRUCache[Hashable, MatrixRows] = LRUCache(size)
        self._lock = threading.Lock()
        self._build_lock = threading.Lock()
        self._builder: tuple[str, MatrixRowsBuilder] | None = None

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
        return found

    def builder(self, content_hash: str, make: Callable[[], MatrixRowsBuilder]) -> MatrixRowsBuilder:
        """The builder of matrix load ``content_hash`` (made by ``make`` when the load is new to this worker)."""
        with self._lock:
            if self._builder is None or self._builder[0] != content_hash:
                self._builder = (content_hash, make())
            return self._builder[1]

    def _lookup(self, key: Hashable) -> MatrixRows | None:
        with self._lock:
            return self._entries.get(key)
