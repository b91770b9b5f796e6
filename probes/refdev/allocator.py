"""A simulated CUDA-style caching allocator: size bookkeeping only, the bytes live in CPU storages.

It mirrors c10/cuda/CUDACachingAllocator.cpp closely enough that probes written against CUDA's
``memory_stats`` keys read sensible numbers: 512-byte rounding, a small pool (blocks <= 1 MiB carved from
2 MiB segments) and a large pool (20 MiB segments for 1-10 MiB, exact 2 MiB multiples above), best-fit
search, block splitting and merging, cached segments until ``empty_cache``, one retry after freeing the
cache, then an out-of-memory error.

Pure Python, no torch: the error class to raise is injected so the module stays importable anywhere.
"""

from __future__ import annotations

import threading
from typing import Callable, Dict, List, Optional

MIN_BLOCK_SIZE = 512
SMALL_SIZE = 1 << 20  # blocks up to this size come from the small pool
SMALL_BUFFER = 2 << 20  # segment size of the small pool
MIN_LARGE_ALLOC = 10 << 20  # below this, large blocks share 20 MiB segments
LARGE_BUFFER = 20 << 20
ROUND_LARGE = 2 << 20
DEFAULT_CAPACITY = 1 << 30

STAT_FAMILIES = (
    "allocation",
    "segment",
    "active",
    "inactive_split",
    "allocated_bytes",
    "reserved_bytes",
    "active_bytes",
    "inactive_split_bytes",
    "requested_bytes",
)
POOLS = ("all", "small_pool", "large_pool")
#: counted family -> the family reported with the same numbers (CUDA's "active" = allocated or awaiting a
#: stream; refdev has no streams)
ACTIVE_MIRRORS = {"allocation": "active", "allocated_bytes": "active_bytes"}
COUNTERS = ("current", "peak", "allocated", "freed")


class Block:
    __slots__ = ("segment", "offset", "size", "requested", "allocated", "prev", "next")

    def __init__(self, segment: "Segment", offset: int, size: int) -> None:
        self.segment = segment
        self.offset = offset
        self.size = size
        self.requested = 0
        self.allocated = False
        self.prev: Optional[Block] = None
        self.next: Optional[Block] = None

    @property
    def is_split(self) -> bool:
        return self.prev is not None or self.next is not None


class Segment:
    __slots__ = ("size", "pool", "head")

    def __init__(self, size: int, pool: str) -> None:
        self.size = size
        self.pool = pool
        self.head = Block(self, 0, size)


def round_size(nbytes: int) -> int:
    if nbytes < MIN_BLOCK_SIZE:
        return MIN_BLOCK_SIZE
    return MIN_BLOCK_SIZE * ((nbytes + MIN_BLOCK_SIZE - 1) // MIN_BLOCK_SIZE)


def segment_size(size: int) -> int:
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return ROUND_LARGE * ((size + ROUND_LARGE - 1) // ROUND_LARGE)


def format_size(nbytes: int) -> str:
    """Like CUDA's OOM message: '80.00 MiB'."""
    value = float(nbytes)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return "%d bytes" % nbytes if unit == "bytes" else "%.2f %s" % (value, unit)
        value /= 1024
    return "%.2f GiB" % value  # pragma: no cover - loop always returns


class CachingAllocator:
    """One device's allocator. Thread-safe: backward runs kernels on the autograd engine's thread."""

    def __init__(self, capacity: int, oom_error: Callable[[str], BaseException], device_name: str) -> None:
        self._lock = threading.RLock()
        self._oom_error = oom_error
        self._device_name = device_name
        self.capacity = capacity
        #: leak fault: freed blocks are never returned, so allocated and reserved never shrink
        self.leak = False
        self._free: Dict[str, List[Block]] = {"small_pool": [], "large_pool": []}
        self._segments: List[Segment] = []
        self.reset_accumulated_stats()

    # -- statistics ---------------------------------------------------------------------------
    # family -> pool -> [current, peak, allocated, freed]; the CUDA-style flat keys are built on demand.
    def _bump(self, family: str, pool: str, delta: int) -> None:
        pools = self._counters[family]
        for counter in (pools["all"], pools[pool]):
            counter[0] += delta
            if delta > 0:
                counter[2] += delta
                if counter[0] > counter[1]:
                    counter[1] = counter[0]
            elif delta < 0:
                counter[3] -= delta

    def _inactive_split(self, block: Block, sign: int) -> None:
        if not block.allocated and block.is_split:
            self._bump("inactive_split", block.segment.pool, sign)
            self._bump("inactive_split_bytes", block.segment.pool, sign * block.size)

    def reset_accumulated_stats(self) -> None:
        with self._lock:
            old = getattr(self, "_counters", None)
            self._counters = {
                family: {
                    pool: ([old[family][pool][0], old[family][pool][1], 0, 0] if old else [0, 0, 0, 0])
                    for pool in POOLS
                }
                for family in STAT_FAMILIES
                if family not in ACTIVE_MIRRORS.values()
            }
            self._events: Dict[str, int] = {
                key: 0
                for key in ("num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc",
                            "num_device_free")
            }

    def reset_peak_stats(self) -> None:
        with self._lock:
            for pools in self._counters.values():
                for counter in pools.values():
                    counter[1] = counter[0]

    def memory_stats(self) -> Dict[str, int]:
        with self._lock:
            stats = dict(self._events)
            for family, pools in self._counters.items():
                for pool, counter in pools.items():
                    for name, value in zip(COUNTERS, counter):
                        stats["%s.%s.%s" % (family, pool, name)] = value
                        # No streams: a block is active exactly while it is allocated.
                        mirror = ACTIVE_MIRRORS.get(family)
                        if mirror:
                            stats["%s.%s.%s" % (mirror, pool, name)] = value
        stats["max_split_size"] = -1  # CUDA's value when max_split_size_mb is unset
        return dict(sorted(stats.items()))

    def stat(self, key: str) -> int:
        """One CUDA-style key: 'allocated_bytes.all.current', 'num_ooms', ..."""
        with self._lock:
            if key in self._events:
                return self._events[key]
            family, pool, name = key.split(".")
            family = {v: k for k, v in ACTIVE_MIRRORS.items()}.get(family, family)
            return self._counters[family][pool][COUNTERS.index(name)]

    # -- allocation -----------------------------------------------------------------------------
    def malloc(self, nbytes: int) -> Block:
        """Account ``nbytes``; raise the injected out-of-memory error past the capacity."""
        size = round_size(nbytes)
        pool = "small_pool" if size <= SMALL_SIZE else "large_pool"
        with self._lock:
            block = self._best_fit(pool, size)
            if block is None:
                block = self._new_segment(pool, size)
            if block is None:
                self._events["num_alloc_retries"] += 1
                self._release_cached()
                block = self._new_segment(pool, size)
            if block is None:
                self._events["num_ooms"] += 1
                raise self._oom_error(self._oom_message(size))
            self._take(block, size, nbytes)
            return block

    def free(self, block: Block) -> None:
        if self.leak:
            return
        with self._lock:
            if not block.allocated:
                return
            pool = block.segment.pool
            self._bump("allocation", pool, -1)
            self._bump("allocated_bytes", pool, -block.size)
            self._bump("requested_bytes", pool, -block.requested)
            block.allocated = False
            block.requested = 0
            for neighbour in (block.prev, block.next):
                if neighbour is not None and not neighbour.allocated:
                    self._inactive_split(neighbour, -1)
                    self._free[pool].remove(neighbour)
                    self._merge(block, neighbour)
            self._inactive_split(block, +1)
            self._free[pool].append(block)

    def empty_cache(self) -> None:
        with self._lock:
            self._release_cached()

    def reserved(self) -> int:
        return self._counters["reserved_bytes"]["all"][0]

    def allocated(self) -> int:
        return self._counters["allocated_bytes"]["all"][0]

    def _best_fit(self, pool: str, size: int) -> Optional[Block]:
        fits = [b for b in self._free[pool] if b.size >= size]
        if not fits:
            return None
        return min(fits, key=lambda b: (b.size, id(b.segment), b.offset))

    def _new_segment(self, pool: str, size: int) -> Optional[Block]:
        seg_size = segment_size(size)
        if self.reserved() + seg_size > self.capacity:
            # Unlike CUDA (whose device is never this small), fall back to an exact-size segment so a
            # deliberately tiny capacity (the oom fault) still lets small tensors live.
            seg_size = size
        if self.reserved() + seg_size > self.capacity:
            return None
        segment = Segment(seg_size, pool)
        self._segments.append(segment)
        self._events["num_device_alloc"] += 1
        self._bump("segment", pool, 1)
        self._bump("reserved_bytes", pool, seg_size)
        self._free[pool].append(segment.head)
        return segment.head

    def _take(self, block: Block, size: int, requested: int) -> None:
        pool = block.segment.pool
        self._free[pool].remove(block)
        self._inactive_split(block, -1)
        remaining = block.size - size
        should_split = remaining >= MIN_BLOCK_SIZE if pool == "small_pool" else remaining > SMALL_SIZE
        if should_split:
            rest = Block(block.segment, block.offset + size, remaining)
            rest.prev, rest.next = block, block.next
            if block.next is not None:
                block.next.prev = rest
            block.next = rest
            block.size = size
            self._free[pool].append(rest)
            self._inactive_split(rest, +1)
        block.allocated = True
        block.requested = requested
        self._bump("allocation", pool, 1)
        self._bump("allocated_bytes", pool, block.size)
        self._bump("requested_bytes", pool, requested)

    def _merge(self, block: Block, neighbour: Block) -> None:
        if neighbour is block.next:
            block.size += neighbour.size
            block.next = neighbour.next
            if neighbour.next is not None:
                neighbour.next.prev = block
        else:
            block.offset = neighbour.offset
            block.size += neighbour.size
            block.prev = neighbour.prev
            if neighbour.prev is not None:
                neighbour.prev.next = block
            if block.segment.head is neighbour:
                block.segment.head = block

    def _release_cached(self) -> None:
        for segment in list(self._segments):
            head = segment.head
            if head.allocated or head.next is not None:
                continue
            self._free[segment.pool].remove(head)
            self._segments.remove(segment)
            self._events["num_device_free"] += 1
            self._bump("segment", segment.pool, -1)
            self._bump("reserved_bytes", segment.pool, -segment.size)

    def _oom_message(self, size: int) -> str:
        reserved = self.reserved()
        allocated = self.allocated()
        return (
            "%s out of memory. Tried to allocate %s. Device 0 has a total capacity of %s of which %s is "
            "free. Of the allocated memory %s is allocated by PyTorch, and %s is reserved by PyTorch but "
            "unallocated."
            % (
                self._device_name,
                format_size(size),
                format_size(self.capacity),
                format_size(max(self.capacity - reserved, 0)),
                format_size(allocated),
                format_size(reserved - allocated),
            )
        )
