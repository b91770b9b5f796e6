"""Per-worker LRU caches behind `GET /v1/resolve`.

- ``requests``: raw query string → parsed `ResolveRequest` (or its InvalidRequestError). Parsing is a pure
  function of the query string, so a repeated query skips it.
- ``bodies``: (matrix version, evidence stamp, normalized request) → the JSON body (or the error). The
  matrix is immutable between loads, so a resolution is a pure function of the key; a new load or new
  evidence changes the key and so misses. Errors are cached too: an unsatisfiable request costs the
  resolver as much as a satisfiable one.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

import orjson

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


class LruCache(Generic[V]):
    """At most ``size`` entries and, when ``max_bytes`` is given, at most that many bytes by ``weigh``."""

    def __init__(
        self, size: int, *, max_bytes: int | None = None, weigh: Callable[[V], int] | None = None
    ) -> None:
        self._size = size
        self._max_bytes = max_bytes
        self._weigh = weigh
        self._bytes = 0
        self._weights: dict[Hashable, int] = {}
        self._entries: OrderedDict[Hashable, V | AccelenvError] = OrderedDict()

    def _store(self, key: Hashable, entry: V | AccelenvError) -> None:
        if key in self._entries:
            self._bytes -= self._weights.pop(key, 0)
        self._entries[key] = entry
        self._entries.move_to_end(key)
        if self._weigh is not None and not isinstance(entry, AccelenvError):
            weight = self._weigh(entry)
            self._weights[key] = weight
            self._bytes += weight
        while self._entries and (
            len(self._entries) > self._size
            or (self._max_bytes is not None and self._bytes > self._max_bytes)
        ):
            old_key, old = self._entries.popitem(last=False)
            self._bytes -= self._weights.pop(old_key, 0)
            if isinstance(old, AccelenvError):
                _without_frames(old)  # the last raise's frames, which hold the error again

    def get_or_compute(self, key: Hashable, compute: Callable[[], V]) -> V:
        """The value for ``key``; raises the cached AccelenvError when computing it failed."""
        entry = self._entries.get(key)
        if entry is None:
            try:
                entry = compute()
            except AccelenvError as err:
                entry = _without_frames(err)
            self._store(key, entry)
        else:
            self._entries.move_to_end(key)
        if isinstance(entry, AccelenvError):
            # Drop the last raise's traceback: re-raising would otherwise grow it on every hit.
            raise entry.with_traceback(None)
        return entry

    def get(self, key: Hashable) -> V | None:
        """The cached value for ``key`` (None on a miss), for callers that compute off the event loop."""
        entry = self._entries.get(key)
        if entry is None or isinstance(entry, AccelenvError):
            return None
        self._entries.move_to_end(key)
        return entry

    def put(self, key: Hashable, value: V) -> None:
        self._store(key, value)

    @property
    def bytes(self) -> int:
        """The weight of what is held (0 without ``weigh``)."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)


class ResolveCache:
    def __init__(self, size: int) -> None:
        self.requests: LruCache[Any] = LruCache(size)
        self.bodies: LruCache[bytes] = LruCache(size)

    def body(self, key: Hashable, resolve: Callable[[], Any]) -> bytes:
        """The JSON body for ``key``, computing ``resolve()`` (a JSON-able object) on a miss."""
        # orjson: the same compact JSON (UTF-8 rather than \u escapes) in a tenth of the stdlib's time
        return self.bodies.get_or_compute(key, lambda: orjson.dumps(resolve()))
