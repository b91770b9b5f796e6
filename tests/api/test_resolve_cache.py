"""The resolve caches: bounded, and cached errors do not accumulate tracebacks."""

from __future__ import annotations

import functools

import pytest

from compat_service.api.resolve_cache import LruCache
from compat_service.domain.errors import InvalidRequestError


def test_least_recently_used_entry_goes_first() -> None:
    cache: LruCache[str] = LruCache(2)
    computed: list[str] = []

    def compute(key: str) -> str:
        computed.append(key)
        return key.upper()

    answers = [
        cache.get_or_compute(key, functools.partial(compute, key)) for key in ("a", "b", "a", "c", "a", "b")
    ]
    assert answers == ["A", "B", "A", "C", "A", "B"]
    assert computed == ["a", "b", "c", "b"]  # "b" was evicted by "c"; "a" stayed, being used
    assert len(cache) == 2


def test_a_cached_error_is_raised_again_with_a_fresh_traceback() -> None:
    cache: LruCache[int] = LruCache(4)

    def fail() -> int:
        raise InvalidRequestError("bad", hint="fix it")

    depths = []
    for _ in range(3):
        with pytest.raises(InvalidRequestError) as info:
            cache.get_or_compute("k", fail)
        tb, depth = info.value.__traceback__, 0
        while tb is not None:
            depth, tb = depth + 1, tb.tb_next
        depths.append(depth)
    assert depths[1] == depths[2] <= depths[0]
