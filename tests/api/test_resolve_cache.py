"""The resolve caches: bounded, and cached errors do not accumulate tracebacks."""

from __future__ import annotations

import functools
import gc
import weakref

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


class _Marker:
    """Something a request's frame holds (weak-referenceable, unlike an exception)."""


@pytest.mark.parametrize("hits", [0, 1, 3], ids=["miss-only", "one-hit", "three-hits"])
def test_an_evicted_error_frees_its_frames_without_the_cyclic_collector(hits: int) -> None:
    """A cached error keeps the traceback of its last raise, whose frames hold the error again: the tuned
    collector (gc_tuning.py) almost never frees such a cycle, so memory crept under distinct failing
    resolves. Evicted, the error must let go of its frames with the collector off."""
    cache: LruCache[int] = LruCache(1)
    markers: list[weakref.ref[_Marker]] = []

    def fail() -> int:
        raise InvalidRequestError("bad", hint="fix it")

    def ask() -> None:
        marker = _Marker()  # a request's locals, in the traceback's frames
        markers.append(weakref.ref(marker))
        cache.get_or_compute("k", fail)

    gc.disable()
    try:
        for _ in range(1 + hits):
            with pytest.raises(InvalidRequestError):
                ask()
        assert cache.get_or_compute("other", lambda: 1) == 1  # evicts "k"
        assert [m() for m in markers] == [None] * len(markers)
    finally:
        gc.enable()


def test_the_cache_is_bounded_by_bytes_as_well_as_entries() -> None:
    cache: LruCache[bytes] = LruCache(100, max_bytes=1000, weigh=len)
    for n in range(20):
        cache.put(n, b"x" * 300)
    assert len(cache) == 3 and cache.bytes == 900
    assert cache.get(19) is not None and cache.get(16) is None
    cache.put("big", b"x" * 5000)  # heavier than the whole budget: kept alone, never more
    assert len(cache) <= 1 and cache.bytes <= 5000


def test_the_service_bounds_its_resolve_answers_by_bytes() -> None:
    from compat_service.api.resolve_cache import ResolveCache

    cache = ResolveCache(100, max_bytes=1000)
    for n in range(20):
        answer: dict[str, object] = {"answer": "x" * 290, "n": n}
        cache.body(("request", n), answer.copy)
    assert 0 < cache.bodies.bytes <= 1000 and len(cache.bodies) == 3
