"""Caches kept per matrix, each declared beside the computation that fills it.

The matrix holds one opaque `MemoStore`; it does not know the questions asked of it. A module that derives
something from a matrix declares a typed `MatrixMemo` (keyed only by facts drawn from the matrix: versions,
labels, platforms, OSes, never free text from a request, which would grow it without bound) or a
`RequestMemo` (keyed by requests: the error path's alternatives search, bounded by cachetools' FIFO cache)
next to the function that fills it, as pip's resolvelib factory keeps its typed caches beside their code::

    _DRIVER_FLOORS: MatrixMemo[tuple[str | None, str | None, str], DriverFloor] = MatrixMemo("driver_floors")

    def driver_floor(matrix, runtime, runtime_full, os):
        memo = _DRIVER_FLOORS.table(matrix)
        ...

Deliberately no pydantic import here: this module is on the fast path of `accelenv resolve`.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Hashable, MutableMapping
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar, cast

if TYPE_CHECKING:
    from cachetools import FIFOCache

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: the most entries each request-keyed memo keeps unless the matrix's owner says otherwise
DEFAULT_REQUEST_LIMIT = 4096


class MemoStore:
    """The caches of one matrix, by memo name: opaque to the matrix, typed by the memos that fill them."""

    __slots__ = ("_tables", "_bounded", "_limit", "_lock")

    def __init__(self, request_limit: int = DEFAULT_REQUEST_LIMIT) -> None:
        self._tables: dict[str, dict[object, object]] = {}
        self._bounded: dict[str, MutableMapping[object, object]] = {}
        self._limit = request_limit
        # cachetools' caches are not thread-safe (the service resolves in worker threads)
        self._lock = threading.Lock()

    @property
    def request_limit(self) -> int:
        """The most entries each request-keyed memo keeps (0 = none kept: every failing request is searched
        afresh); the service sets it from ACCELENV_RESOLVER_MEMO_SIZE, the CLI keeps the default."""
        return self._limit

    @request_limit.setter
    def request_limit(self, limit: int) -> None:
        with self._lock:
            self._limit = limit
            self._bounded.clear()

    def size(self) -> int:
        """Entries held by the memos keyed by matrix facts (tests check distinct requests do not grow it; the
        request-keyed memos are bounded instead)."""
        return sum(len(table) for table in self._tables.values())

    def request_entries(self) -> dict[str, int]:
        """Entries held by each request-keyed memo used so far, by name (tests check the bound)."""
        return {name: len(table) for name, table in self._bounded.items()}

    def table(self, name: str) -> dict[object, object]:
        """The table of the matrix-keyed memo ``name`` (made empty on first use)."""
        found = self._tables.get(name)
        if found is None:  # (setdefault: two threads asking first get the same table)
            found = self._tables.setdefault(name, {})
        return found

    def bounded(self, name: str) -> MutableMapping[object, object]:
        """The table of the request-keyed memo ``name``: a FIFO cache of `request_limit` entries."""
        found = self._bounded.get(name)
        if found is None:
            found = self._bounded.setdefault(name, _fifo_class()(maxsize=max(self._limit, 1)))
        return found

    def keep(self, table: MutableMapping[object, object], key: object, value: object) -> None:
        """Store ``value`` in a request-keyed table (its oldest entry goes when it is full); nothing is kept when
        `request_limit` is 0."""
        if self._limit > 0:
            with self._lock:
                table[key] = value



@functools.cache
def _fifo_class() -> type[FIFOCache[object, object]]:
    """cachetools' FIFO cache, whose ``get`` a concurrent eviction cannot turn into a KeyError (its own tests
    ``in`` and then reads; reads take no lock, writes do: `MemoStore.keep`). Imported on first use: only the
    error path's alternatives search gets here."""
    from cachetools import FIFOCache

    class BoundedFIFO(FIFOCache[object, object]):
        def get(self, key: object, default: object = None) -> object:
            try:
                return self[key]
            except KeyError:
                return default

    return BoundedFIFO


class _HasMemo(Protocol):
    @property
    def memo(self) -> MemoStore: ...


class MatrixMemo(Generic[K, V]):
    """One cache per matrix keyed by facts the matrix holds; declare it beside the function that fills it."""

    __slots__ = ("name", "_last")

    def __init__(self, name: str) -> None:
        self.name = name
        #: the store asked last and this memo's table in it: the stages ask every memo several times per request,
        #: nearly always of the same matrix (one assignment, so a thread never reads a store with another's table)
        self._last: tuple[MemoStore, dict[K, V]] | None = None

    def table(self, matrix: _HasMemo) -> dict[K, V]:
        """This memo's table in ``matrix``'s store."""
        store = matrix.memo
        last = self._last
        if last is not None and last[0] is store:
            return last[1]
        table = cast("dict[K, V]", store.table(self.name))
        self._last = (store, table)
        return table

    def held(self, matrix: _HasMemo) -> int:
        """How many entries ``matrix`` holds for this memo."""
        return len(self.table(matrix))


class RequestMemo(Generic[K, V]):
    """One cache per matrix keyed by requests (the error path's alternatives search), bounded to the store's
    `MemoStore.request_limit` entries, the oldest dropped first."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def table(self, matrix: _HasMemo) -> FIFOCache[K, V]:
        """This memo's table in ``matrix``'s store (filled through `recall`)."""
        return cast("FIFOCache[K, V]", matrix.memo.bounded(self.name))

    def recall(self, matrix: _HasMemo, key: Callable[[], K], compute: Callable[[], V]) -> V:
        """The value kept under ``key()``, else ``compute()``, kept. A store that keeps no requests
        (`MemoStore.request_limit` 0) is not asked: no key is built, ``compute()`` is the answer. A key that cannot
        be hashed is computed, not kept."""
        store = matrix.memo
        if store.request_limit <= 0:
            return compute()
        table = store.bounded(self.name)
        wanted = key()
        try:
            found = table.get(wanted, _MISSING)
        except TypeError:
            return compute()
        if found is _MISSING:
            found = compute()
            store.keep(table, wanted, found)
        return cast("V", found)

    def held(self, matrix: _HasMemo) -> int:
        """How many entries ``matrix`` holds for this memo."""
        return len(self.table(matrix))


#: `RequestMemo.recall`'s "not kept" (None is a value some memos keep)
_MISSING = object()
