"""Per-worker LRU of resolutions, keyed by the matrix version and the normalized request.

The matrix is immutable between loads, so a resolution (or its error) is a pure function of the two; a new
load changes the version and so misses the cache. Errors are cached too: an unsatisfiable request costs
the resolver as much as a satisfiable one.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from compat_service.domain.errors import AccelenvError


class ResolveCache:
    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[tuple[str, Any], bytes | AccelenvError] = OrderedDict()

    def get_or_compute(self, key: tuple[str, Any], compute: Callable[[], Any]) -> bytes:
        """The JSON body for ``key``; raises the cached AccelenvError for a request that fails."""
        entry = self._entries.get(key)
        if entry is None:
            try:
                entry = json.dumps(compute(), separators=(",", ":")).encode()
            except AccelenvError as err:
                entry = err
            self._entries[key] = entry
            if len(self._entries) > self._size:
                self._entries.popitem(last=False)
        else:
            self._entries.move_to_end(key)
        if isinstance(entry, AccelenvError):
            raise entry
        return entry

    def __len__(self) -> int:
        return len(self._entries)
