"""Microseconds per request of the resolver in process, over `bench_service.py`'s rotations: what the uncached
service spends in the domain for each request it answers.

Reproduce (from the repository root, with the project's virtualenv):

    .venv/bin/python benchmarks/bench_resolver_requests.py
    .venv/bin/python benchmarks/bench_resolver_requests.py --profile 25

Each request is parsed (`ResolveRequest.from_query`) and resolved (`stages.resolve`, no evidence) against the
bundled matrix with the resolver's request-keyed error-path tables off, as `bench_service.py` runs the service
(ACCELENV_RESOLVER_MEMO_SIZE=0); the tables keyed by matrix facts stay warm, as in a running worker. Two
rotations of 640 distinct requests: ``uncached`` (all resolvable) and ``mixed`` (40 % unsatisfiable, each
failure explained with its nearest alternatives). The figure is the median over ``--rounds`` passes after one
warm-up pass, in CPU time of the process (`time.process_time`: other load on the machine counts less).
``--profile N`` prints cProfile's N most expensive functions (cumulative) over one pass of each.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _queries(paths: list[str]) -> list[dict[str, str | list[str] | None]]:
    return [dict(parse_qsl(urlsplit(path).query, keep_blank_values=True)) for path in paths]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", type=int, default=0, metavar="N")
    args = parser.parse_args()

    from bench_service import mixed_paths, rotation_paths

    from compat_service.domain.errors import AccelenvError
    from compat_service.domain.matrix.interface import InMemoryMatrix
    from compat_service.domain.matrix.loading.loader import load_matrix_rows
    from compat_service.domain.resolver.request import ResolveRequest
    from compat_service.domain.resolver.stages import resolve

    rotations = {"uncached": _queries(rotation_paths()), "mixed": _queries(mixed_paths())}
    matrix = InMemoryMatrix(load_matrix_rows())
    matrix.memo.request_limit = 0

    def one_pass(queries: list[dict[str, str | list[str] | None]]) -> None:
        for query in queries:
            try:
                resolve(ResolveRequest.from_query(query), matrix)
            except AccelenvError:
                pass

    out: dict[str, float] = {}
    for name, queries in rotations.items():
        one_pass(queries)  # warm-up: the tables keyed by matrix facts fill
        times = []
        for _ in range(args.rounds):
            start = time.process_time()
            one_pass(queries)
            times.append((time.process_time() - start) / len(queries) * 1e6)
        out[f"{name}_us_per_request"] = round(statistics.median(times), 1)
        if args.profile:
            profile = cProfile.Profile()
            profile.runcall(one_pass, queries)
            print(f"--- {name}", file=sys.stderr)
            pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(args.profile)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
