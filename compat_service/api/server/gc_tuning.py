"""Garbage-collector settings for a service worker.

Ingest turns each probe report (~65 KB, ~160 checks) into thousands of short-lived Python objects, and a
batch into hundreds of thousands. With CPython's default thresholds (700, 10, 10) that allocation rate runs
a collection every few hundred objects, and the full collections walk every object the worker holds — the
app, its routes, SQLAlchemy's and pydantic's caches — over and over: measured at ~40 % of a worker's CPU
under batch ingest (benchmarks/bench_ingest.py). Reference counting frees these objects anyway (they hold
no cycles); the cyclic collector only needs to run now and then.

So, once the worker has started: move everything built at start-up into the permanent generation
(``gc.freeze``: never scanned again) and run the young collection every ``GEN0_THRESHOLD`` allocations.
"""

from __future__ import annotations

import gc

#: net allocations between young collections (CPython's default is 700)
GEN0_THRESHOLD = 50_000
#: young collections per middle one, middle ones per full one (defaults 10, 10)
GEN1_THRESHOLD = 20
GEN2_THRESHOLD = 100


def tune_for_service() -> None:
    """Freeze what start-up built and raise the thresholds; process-wide, so only a worker calls it."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(GEN0_THRESHOLD, GEN1_THRESHOLD, GEN2_THRESHOLD)
