"""Per-worker LRU caches behind `GET /v1/resolve`.

- ``requests``: raw query string → parsed `ResolveRequest` (or its InvalidRequestError). Parsing is a pure
  function of the query string, so a repeated query skips it.
- ``bodies``: (matrix version, evidence stamp, normalized request) → the JSON body (or the error). The
  matrix is immutable between loads, so a resolution is a pure function of the key; a new load or new
  evidence changes the key and so misses. Errors are cached too: an unsatisfiable request costs the
  resolver as much as a satisfiable one.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

import orjson
from cachetools import LRUCache

from compat_service.domain.errors import AccelenvError

V = TypeVar("V")


def _without_frames(err: AccelenvError) -> AccelenvError:
    """``err`` holding no traceback (nor a chained exception's): a traceback keeps the frames it passed
    through, and one of them (``get_or_compute``'s) holds ``err`` itself, a reference cycle that only the
    cyclic garbage collector frees, which the service's GC tuning runs rarely (issue 24, item 4)."""
    err.__traceback__ = None
    err.__context__ = None
    err.__cause__ = None
    return err


class _Entries(LRUCache[Hashable, Any]):
    """cachetools' LRU cache, bounded by weight (when weighed) and by entry count; an evicted error drops
    its frames."""

    def __init__(self, size: int, max_bytes: int | None, weigh: Callable[[Any], int] | None) -> None:
        self.weighed = max_bytes is not None and weigh is not None
        if max_bytes is not None and weigh is not None:
            super().__init__(maxsize=max_bytes, getsizeof=lambda e: 0 if isinstance(e, AccelenvError) else weigh(e))
        else:
            super().__init__(maxsize=size)
        self._count = size

    def __setitem__(self, key: Hashable, value: Any) -> None:
        try:
            super().__setitem__(key, value)
        except ValueError:  # heavier than the whole budget: kept never, and nothing else beside it
            while self:
                self.popitem()
            return
        while len(self) > self._count:
            self.popitem()

    def popitem(self) -> tuple[Hashable, Any]:
        key, old = super().popitem()
        if isinstance(old, AccelenvError):
            _without_frames(old)  # the last raise's frames, which hold the error again
        return key, old


class LruCache(Generic[V]):
    """At most ``size`` entries and, when ``max_bytes`` is given, at most that many bytes by ``weigh``
    (cachetools' LRU cache). ``size`` 0 (the settings allow it) turns caching off: every call computes."""

    def __init__(
        self, size: int, *, max_bytes: int | None = None, weigh: Callable[[V], int] | None = None
    ) -> None:
        # cachetools refuses to store anything with maxsize 0: "off" is said here, not left to it
        self._entries: _Entries | None = _Entries(size, max_bytes, weigh) if size > 0 else None

    def get_or_compute(self, key: Hashable, compute: Callable[[], V]) -> V:
        """The value for ``key``; raises the cached AccelenvError when computing it failed."""
        entries = self._entries
        if entries is None:
            return compute()
        try:
            entry = entries[key]
        except KeyError:
            try:
                entry = compute()
            except AccelenvError as err:
                entry = _without_frames(err)
            entries[key] = entry
        if isinstance(entry, AccelenvError):
            # Drop the last raise's traceback: re-raising would otherwise grow it on every hit.
            raise entry.with_traceback(None)
        return entry

    def get(self, key: Hashable) -> V | None:
        """The cached value for ``key`` (None on a miss), for callers that compute off the event loop."""
        if self._entries is None:
            return None
        entry = self._entries.get(key)
        return None if isinstance(entry, AccelenvError) else entry

    def put(self, key: Hashable, value: V) -> None:
        if self._entries is not None:
            self._entries[key] = value

    @property
    def bytes(self) -> int:
        """The weight of what is held (0 without ``weigh``)."""
        entries = self._entries
        return int(entries.currsize) if entries is not None and entries.weighed else 0

    def __len__(self) -> int:
        return len(self._entries) if self._entries is not None else 0


#: bytes of parsed resolve requests a worker keeps, weighed by `_request_weight`
REQUEST_CACHE_BYTES = 4 * 1024 * 1024


def _request_weight(entry: Any) -> int:
    return 2048 + len(repr(entry))


class ResolveCache:
    """``size`` entries each; the bodies also ``max_bytes`` bytes at most (None: no byte bound)."""

    def __init__(self, size: int, *, max_bytes: int | None = None) -> None:
        # parsed requests are small but their queries are the client's (a long with= stack): bounded in bytes
        # too, by the query's length plus what a parsed request holds (~2 KB)
        self.requests: LruCache[Any] = LruCache(size, max_bytes=REQUEST_CACHE_BYTES, weigh=_request_weight)
        self.bodies: LruCache[bytes] = LruCache(size, max_bytes=max_bytes, weigh=len)
        #: False when the settings turned the cache off (size 0): callers then compute directly
        self.enabled = size > 0

    def body(self, key: Hashable, resolve: Callable[[], Any]) -> bytes:
        """The JSON body for ``key``, computing ``resolve()`` (a JSON-able object) on a miss."""
        # orjson: the same compact JSON (UTF-8 rather than \u escapes) in a tenth of the stdlib's time
        return self.bodies.get_or_compute(key, lambda: orjson.dumps(resolve()))
