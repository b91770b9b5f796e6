"""The simulated caching allocator, in-process: it is pure Python and needs no torch."""

from __future__ import annotations

import pytest

from probes.refdev.allocator import (
    LARGE_BUFFER,
    SMALL_BUFFER,
    CachingAllocator,
    format_size,
    round_size,
    segment_size,
)

MIB = 1 << 20


class FakeOOM(RuntimeError):
    pass


def make(capacity: int = 1 << 30) -> CachingAllocator:
    return CachingAllocator(capacity, FakeOOM, "refdev")


@pytest.mark.parametrize(
    ("nbytes", "rounded"), [(1, 512), (512, 512), (513, 1024), (MIB + 1, MIB + 512)], ids=str
)
def test_round_size_is_512_byte_granular(nbytes: int, rounded: int) -> None:
    assert round_size(nbytes) == rounded


@pytest.mark.parametrize(
    ("size", "segment"),
    [(512, SMALL_BUFFER), (MIB, SMALL_BUFFER), (MIB + 512, LARGE_BUFFER), (10 * MIB, 10 * MIB),
     (11 * MIB, 12 * MIB)],
    ids=["tiny", "small-max", "large-min", "huge-exact", "huge-rounded"],
)
def test_segment_sizes_follow_cuda(size: int, segment: int) -> None:
    assert segment_size(size) == segment


def test_small_blocks_share_one_cached_segment_until_empty_cache() -> None:
    alloc = make()
    a, b = alloc.malloc(100), alloc.malloc(2000)
    assert alloc.stat("segment.all.current") == 1
    assert alloc.allocated() == 512 + 2048
    assert alloc.reserved() == SMALL_BUFFER
    alloc.free(a)
    alloc.free(b)
    assert alloc.allocated() == 0
    assert alloc.reserved() == SMALL_BUFFER  # cached, as CUDA's allocator does
    assert alloc.stat("inactive_split.all.current") == 0  # freed blocks merged back into one
    alloc.empty_cache()
    assert alloc.reserved() == 0
    assert alloc.stat("num_device_free") == 1


def test_freed_block_is_reused_without_a_new_segment() -> None:
    alloc = make()
    alloc.free(alloc.malloc(4 * MIB))
    alloc.malloc(4 * MIB)
    assert alloc.stat("num_device_alloc") == 1
    assert alloc.stat("reserved_bytes.large_pool.current") == LARGE_BUFFER


def test_peak_and_reset_peak() -> None:
    alloc = make()
    block = alloc.malloc(3 * MIB)
    alloc.free(block)
    assert alloc.stat("allocated_bytes.all.peak") == 3 * MIB
    alloc.reset_peak_stats()
    assert alloc.stat("allocated_bytes.all.peak") == 0
    assert alloc.stat("allocated_bytes.all.allocated") == 3 * MIB
    alloc.reset_accumulated_stats()
    assert alloc.stat("allocated_bytes.all.allocated") == 0


def test_out_of_memory_retries_after_freeing_the_cache_then_raises() -> None:
    alloc = make(capacity=12 * MIB)
    alloc.free(alloc.malloc(100))  # leaves a 2 MiB cached small-pool segment
    big = alloc.malloc(11 * MIB)  # a 12 MiB segment: fits only after the cache is released
    assert alloc.stat("num_alloc_retries") == 1
    with pytest.raises(FakeOOM, match=r"refdev out of memory\. Tried to allocate 20\.00 MiB"):
        alloc.malloc(20 * MIB)
    assert alloc.stat("num_ooms") == 1
    alloc.free(big)
    alloc.malloc(10 * MIB)  # recovered: served from the cached 12 MiB segment
    assert alloc.stat("num_ooms") == 1


def test_tiny_capacity_still_holds_small_tensors() -> None:
    alloc = make(capacity=64 * 1024)
    blocks = [alloc.malloc(4096) for _ in range(16)]
    assert alloc.reserved() == 64 * 1024
    with pytest.raises(FakeOOM):
        alloc.malloc(4096)
    assert len(blocks) == 16


def test_leak_keeps_allocated_and_reserved_from_shrinking() -> None:
    alloc = make()
    alloc.leak = True
    for _ in range(3):
        alloc.free(alloc.malloc(MIB))
    alloc.empty_cache()
    assert alloc.allocated() == 3 * MIB
    assert alloc.reserved() == 2 * SMALL_BUFFER


def test_stats_have_cuda_keys() -> None:
    stats = make().memory_stats()
    for key in ("allocation.all.current", "allocated_bytes.all.peak", "reserved_bytes.small_pool.freed",
                "inactive_split_bytes.large_pool.current", "requested_bytes.all.allocated",
                "num_alloc_retries", "num_ooms", "num_device_alloc", "max_split_size"):
        assert key in stats


@pytest.mark.parametrize(("n", "text"), [(100, "100 bytes"), (80 * MIB, "80.00 MiB"), (3 << 30, "3.00 GiB")])
def test_format_size(n: int, text: str) -> None:
    assert format_size(n) == text
