"""CPU per request of the service's own ASGI middleware on a GET, access log on: the layers `create_app` adds,
in its order, around a route that answers a constant 3.6 KB JSON body (a `/v1/resolve` answer's size), so what
is measured is the middleware alone, not the resolver or the framework's routing.

Each request is one ASGI call on one event loop followed by a turn of the loop (so the access log's
`TurnBatchingHandler` writes its line as it does on a quiet server; ``--per-turn 8`` gathers 8 requests per
turn, as a loaded worker sees them). The access log goes through the service's handler and formatter to
/dev/null (a real write per turn). The GC tuning and logging flags a worker applies (`tune_for_service`) are
applied first. Figures: µs of process CPU time per request (``time.process_time``), the median of
``--rounds`` rounds of ``--requests`` requests, for the whole stack (``all``), the stack with the access log
off (``no_access_log``), the bare route (``route_only``), and with ``--layers`` the stack less each layer.

    .venv/bin/python benchmarks/bench_middleware.py --layers

Before/after a change: run it from each tree in turn (``PYTHONPATH=.`` from a `git archive` of the other tree)
and compare medians taken side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, MutableMapping
from typing import Any

from compat_service.api.metrics import ServiceMetrics
from compat_service.api.middleware.body_limit import BodyLimitMiddleware
from compat_service.api.middleware.compression import LargeBodyCompression
from compat_service.api.middleware.head_requests import HeadRequestsMiddleware
from compat_service.api.middleware.http_cache import HttpCacheMiddleware
from compat_service.api.middleware.nul_guard import NulGuardMiddleware
from compat_service.api.middleware.observability import ObservabilityMiddleware, configure_logging
from compat_service.api.middleware.quota import QuotaMiddleware
from compat_service.api.server.gc_tuning import tune_for_service

ASGI = Callable[..., Any]
BODY = (b'{"torch":"2.9.1","pins":[' + b'{"name":"torchvision","version":"0.24.1"},' * 90)[:3600] + b"]}"
#: what wrk and curl send
HEADERS = [(b"host", b"127.0.0.1:8000"), (b"user-agent", b"wrk"), (b"accept", b"*/*")]
QUERIES = [
    f"torch=2.{i % 9}&python=3.1{i % 4}&backend=cu12{i % 9}&with=torchvision%2Ctorchaudio".encode() for i in range(64)
]
#: app.py's layers, innermost first, each made from the app it wraps
LAYERS = ("http_cache", "compression", "head", "body_limit", "nul_guard", "quota", "observability")


class _Route:
    path = "/v1/resolve"


async def constant_route(scope: dict[str, Any], receive: ASGI, send: ASGI) -> None:
    scope["route"] = _Route  # as the router sets it: metrics label requests by the route's template
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-length", str(len(BODY)).encode()),
                (b"content-type", b"application/json"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": BODY})


async def _unhandled(scope: MutableMapping[str, Any], exc: BaseException) -> Any:
    raise exc


def stack(skip: tuple[str, ...] = (), access_log: bool = True) -> ASGI:
    metrics = ServiceMetrics()
    makers: dict[str, Callable[[ASGI], ASGI]] = {
        "http_cache": lambda a: HttpCacheMiddleware(a, max_age_s=60),
        "compression": LargeBodyCompression,
        "head": HeadRequestsMiddleware,
        "body_limit": lambda a: BodyLimitMiddleware(
            a, max_body_bytes=1 << 20, limits_by_path={"/v1/reports/batch": 1 << 24}
        ),
        "nul_guard": NulGuardMiddleware,
        "quota": lambda a: QuotaMiddleware(
            a, requests_per_min=0, token_requests_per_min=0, bytes_per_min=0, refusals=metrics.quota_refusals
        ),
        "observability": lambda a: ObservabilityMiddleware(
            a, metrics=metrics, access_log=access_log, on_unhandled=_unhandled
        ),
    }
    app: ASGI = constant_route
    for name in LAYERS:
        if name not in skip:
            app = makers[name](app)
    return app


async def one_round(app: ASGI, requests: int, per_turn: int) -> float:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def request(i: int) -> None:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": "/v1/resolve",
            "raw_path": b"/v1/resolve",
            "query_string": QUERIES[i & 63],
            "root_path": "",
            "headers": list(HEADERS),
            "client": ("127.0.0.1", 40000),
            "server": ("127.0.0.1", 8000),
            "state": {},
        }
        await app(scope, receive, send)

    start = time.process_time()
    for i in range(0, requests, per_turn):
        sent.clear()
        if per_turn == 1:
            await request(i)
            await asyncio.sleep(0)  # the turn ends: the access log's line is written
        else:
            await asyncio.gather(*(request(i + j) for j in range(per_turn)))
        if sent[0]["status"] != 200:
            raise SystemExit(f"status {sent[0]['status']}")
    return (time.process_time() - start) / requests * 1e6


async def measure(variants: dict[str, ASGI], args: argparse.Namespace) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds + 1):  # the first round warms up
        for name, app in variants.items():
            times[name].append(await one_round(app, args.requests, args.per_turn))
    return {name: round(statistics.median(t[1:]), 1) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests per round")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--per-turn", type=int, default=1, help="requests gathered per turn of the event loop")
    parser.add_argument("--layers", action="store_true", help="also the stack less each layer")
    args = parser.parse_args()
    configure_logging("plain")
    tune_for_service()
    sys.stderr = open(os.devnull, "w")  # the access log's stream (the handler writes to sys.stderr)
    variants = {"route_only": constant_route, "all": stack(), "no_access_log": stack(access_log=False)}
    if args.layers:
        variants.update({f"without_{name}": stack(skip=(name,)) for name in LAYERS})
    print(json.dumps(asyncio.run(measure(variants, args))))


if __name__ == "__main__":
    main()
