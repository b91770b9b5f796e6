"""Process-wide settings for a service worker: the garbage collector's, and the logging module's record fields.

Ingest turns each probe report (~65 KB, ~160 checks) into thousands of short-lived Python objects, and a
batch into hundreds of thousands. With CPython's default thresholds (700, 10, 10) that allocation rate runs
a collection every few hundred objects, and the full collections walk every object the worker holds — the
app, its routes, SQLAlchemy's and pydantic's caches — over and over: measured at ~40 % of a worker's CPU
under batch ingest (benchmarks/bench_ingest.py). Reference counting frees these objects anyway (they hold
no cycles); the cyclic collector only needs to run now and then.

So, once the worker has started: move everything built at start-up into the permanent generation
(``gc.freeze``: never scanned again) and run the young collection every ``GEN0_THRESHOLD`` allocations.

Every log record (an access-log line per request) also looks up the thread's name, the process id (a system
call) and the multiprocessing process name, which none of the service's formatters prints
(middleware/observability.py: `PlainFormatter`, `JsonFormatter`). The logging HOWTO's "Optimization" section
documents the module flags that skip them (``logThreads``, ``logProcesses``, ``logMultiprocessing``); a
worker owns its process, so it sets them off (the records' ``thread``, ``process``... are then None).
"""

from __future__ import annotations

import gc
import logging

#: net allocations between young collections (CPython's default is 700)
GEN0_THRESHOLD = 50_000
#: young collections per middle one, middle ones per full one (defaults 10, 10)
GEN1_THRESHOLD = 20
GEN2_THRESHOLD = 100


def tune_for_service() -> None:
    """Freeze what start-up built and raise the thresholds, and stop log records gathering the fields no
    formatter of ours prints; process-wide, so only a worker calls it."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(GEN0_THRESHOLD, GEN1_THRESHOLD, GEN2_THRESHOLD)
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
