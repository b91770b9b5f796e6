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

``--app`` measures instead the whole service in process: each request of the rotations sent as one ASGI call
to the app `bench_service.py` runs (cache off, memos off, access log off: it writes to stderr), beside
`bench_service.bare_app`'s route driven the same way in the same process, so the HTTP server and the
client, which `bench_service.py` measures as well, are left out; the ratio is bare µs ÷ service µs.
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
    parser.add_argument("--app", action="store_true", help="the whole service in process, beside a bare route")
    args = parser.parse_args()
    if args.app:
        return _app_main(args)

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


def _app_main(args: argparse.Namespace) -> None:
    import tempfile

    from bench_service import bare_app, mixed_paths, rotation_paths
    from fastapi.testclient import TestClient

    from compat_service.api.app import create_app
    from compat_service.config import Settings

    def asgi_pass(app, paths: list[tuple[bytes, bytes]], profile: cProfile.Profile | None = None):
        sent: list[dict] = []

        async def receive() -> dict:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict) -> None:
            sent.append(message)

        async def run() -> float:
            if profile is not None:  # the event loop runs in the portal's thread
                profile.enable()
            start = time.process_time()
            for raw_path, raw_query in paths:
                scope = {
                    "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
                    "scheme": "http", "path": raw_path.decode(), "raw_path": raw_path, "query_string": raw_query,
                    "root_path": "", "headers": [(b"host", b"127.0.0.1")], "client": ("127.0.0.1", 40000),
                    "server": ("127.0.0.1", 8000), "state": {},
                }
                sent.clear()
                await app(scope, receive, send)
                if sent[0]["status"] not in (200, 409):
                    raise SystemExit(f"{raw_path!r}?{raw_query!r}: status {sent[0]['status']}")
            if profile is not None:
                profile.disable()
            return (time.process_time() - start) / len(paths) * 1e6

        return run

    def split(paths: list[str]) -> list[tuple[bytes, bytes]]:
        return [tuple(p.encode().partition(b"?")[::2]) for p in paths]  # type: ignore[misc]

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            database_url=f"sqlite:///{tmp}/bench.sqlite3", auto_migrate=True, resolve_cache_size=0,
            resolver_memo_size=0, access_log=False,
        )
        with TestClient(create_app(settings)) as service, TestClient(bare_app()) as bare:
            bare_paths = split(["/bare"] * 640)
            for name, paths in {"uncached": split(rotation_paths()), "mixed": split(mixed_paths())}.items():
                service.portal.call(asgi_pass(service.app, paths))  # warm-up
                bare.portal.call(asgi_pass(bare.app, bare_paths))
                ours, theirs = [], []
                for _ in range(args.rounds):
                    ours.append(service.portal.call(asgi_pass(service.app, paths)))
                    theirs.append(bare.portal.call(asgi_pass(bare.app, bare_paths)))
                out[f"{name}_app_us_per_request"] = round(statistics.median(ours), 1)
                out[f"{name}_bare_us_per_request"] = round(statistics.median(theirs), 1)
                out[f"{name}_ratio"] = round(statistics.median(theirs) / statistics.median(ours), 3)
                if args.profile:
                    profile = cProfile.Profile()
                    service.portal.call(asgi_pass(service.app, paths, profile))
                    print(f"--- {name}", file=sys.stderr)
                    pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(args.profile)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
