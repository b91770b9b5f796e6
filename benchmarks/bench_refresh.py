"""Wall time of a full `matrix refresh` (all five projects), cold cache and warm cache.

Reproduce (reads the index pip is configured with, or --index-url; writes nothing: ``write=False``):

    .venv/bin/python benchmarks/bench_refresh.py --no-variants

Cold: an empty cache directory, so every project page is fetched and every chosen wheel's METADATA is read
(PEP 658 file or range reads of the zip directory). Warm: the same cache again, so pages are revalidated
(304 where the index sends ETag/Last-Modified, a full page otherwise) and no metadata is read. Prints
both times with request counts, bytes read and metadata reads by kind. ``--loopback`` runs the same
against the recorded fixtures on a loopback server (tests/index/loopback_index.py) for an offline figure.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from compat_service.index.client import IndexClient
from compat_service.index.location import IndexLocation, resolve_index
from compat_service.index.page_cache import IndexCache
from compat_service.index.refresh import run_refresh
from matrix_data import DATA_DIR


def _one(index: IndexLocation, cache: Path, variants: bool, concurrency: int) -> tuple[float, dict]:
    start = time.perf_counter()
    with IndexClient(cache=IndexCache(cache)) as client:
        result = run_refresh(client, index, DATA_DIR, write=False, variants=variants, concurrency=concurrency)
    seconds = time.perf_counter() - start
    return seconds, {**result.stats, "metadata": result.metadata_reads, "facts_diff": result.counts()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index-url")
    parser.add_argument("--no-variants", action="store_true", help="skip the /whl/<label> indexes")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--loopback", action="store_true", help="the recorded fixtures on a loopback server")
    args = parser.parse_args()
    import stamina.instrumentation

    stamina.instrumentation.set_on_retry_hooks([])
    if args.loopback:
        from tests.index.loopback_index import loopback_index

        with loopback_index() as served:
            _run(IndexLocation(served.simple, served.simple, "--index-url"), args)
    else:
        _run(resolve_index(args.index_url), args)


def _run(index: IndexLocation, args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        for label in ("cold", "warm"):
            seconds, stats = _one(index, cache, not args.no_variants, args.concurrency)
            print(f"{label}: {seconds:.2f} s  {stats}")


if __name__ == "__main__":
    main()
