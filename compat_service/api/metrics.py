"""The service's Prometheus metrics (prometheus-client) and the ``GET /metrics`` scrape.

Each app owns its metrics in its own registry, so several apps in one process (tests) do not collide.
With several workers (``accelenv serve --workers N``) every worker counts its own requests; when
``PROMETHEUS_MULTIPROC_DIR`` is set (``serve`` sets it for N > 1) the values live in files there and a
scrape answered by any worker adds up all of them (prometheus-client's multiprocess mode).

Requests are labelled by method, the matched route's template (``/v1/torch/{version}``, never the raw
path: unmatched paths count as ``unmatched``) and status. Reports ingested are counted by outcome from the
answers of the two report routes (a single report: 201 created, 200 exists, 409 conflict, 422 invalid; a
batch: its per-item results), so the routes themselves stay unaware of metrics.
"""

from __future__ import annotations

import json
import os
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

#: seconds; resolve answers from its cache in well under a millisecond, pages and ingest take longer
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_SINGLE_OUTCOME = {201: "created", 200: "exists", 409: "conflict", 422: "invalid"}
_BATCH_ROUTE = "/v1/reports/batch"
_SINGLE_ROUTE = "/v1/reports"


def multiprocess_dir() -> str | None:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


class ServiceMetrics:
    def __init__(self) -> None:
        self.multiprocess = multiprocess_dir() is not None
        self.registry = CollectorRegistry()
        # in multiprocess mode the values are files; a scrape collects them all instead of this registry
        reg = None if self.multiprocess else self.registry
        self.requests = Counter(
            "accelenv_http_requests", "HTTP requests answered", ("method", "route", "status"), registry=reg
        )
        self.latency = Histogram(
            "accelenv_http_request_duration_seconds", "Time from request to the end of the answer",
            ("method", "route"), buckets=LATENCY_BUCKETS, registry=reg,
        )
        self.reports = Counter(
            "accelenv_reports_ingested", "Probe reports submitted, by outcome (created, exists, conflict, invalid)",
            ("outcome",), registry=reg,
        )
        self.quota_refusals = Counter(
            "accelenv_quota_refusals", "Requests refused 429 for a client's quota, by kind (requests, "
            "token-requests, bytes)", ("kind",), registry=reg,
        )
        self.queue_depth = Gauge(
            "accelenv_ingest_queue_depth", "Single reports waiting for a worker's writer",
            registry=reg, multiprocess_mode="livesum",
        )
        self.matrix_info = Gauge(
            "accelenv_matrix_info", "The loaded matrix version (value 1)", ("version",),
            registry=reg, multiprocess_mode="livemax",
        )
        self.matrix_cells = Gauge(
            "accelenv_matrix_cells", "Declared cells (torch x build x Python x platform) in the loaded matrix",
            registry=reg, multiprocess_mode="livemax",
        )
        self._children: dict[tuple[str, str, int], tuple[Any, Any]] = {}
        self._version: str | None = None
        #: requests this app answered (for the stop line)
        self.served = 0

    # ------------------------------------------------------------------ per request (the hot path)

    def wants_body(self, scope: Any) -> bool:
        return scope["method"] == "POST" and scope["path"] == _BATCH_ROUTE

    def observe(self, method: str, route: str, status: int, seconds: float, body: bytes) -> None:
        self.served += 1
        key = (method, route, status)
        children = self._children.get(key)
        if children is None:
            children = self._children[key] = (
                self.requests.labels(method, route, str(status)),
                self.latency.labels(method, route),
            )
        children[0].inc()
        children[1].observe(seconds)
        if method == "POST":
            self._count_reports(route, status, body)

    def _count_reports(self, route: str, status: int, body: bytes) -> None:
        if route == _SINGLE_ROUTE and status in _SINGLE_OUTCOME:
            self.reports.labels(_SINGLE_OUTCOME[status]).inc()
        elif route == _BATCH_ROUTE and status == 200 and body:
            try:
                results = json.loads(body).get("results", [])
            except (ValueError, AttributeError):
                return
            for item in results:
                if isinstance(item, dict) and item.get("status") in ("created", "exists", "conflict", "invalid"):
                    self.reports.labels(item["status"]).inc()

    # ------------------------------------------------------------------ state, set when read

    def set_matrix(self, version: str, cells: int) -> None:
        if self._version is not None and self._version != version:
            self.matrix_info.labels(self._version).set(0)
        self._version = version
        self.matrix_info.labels(version).set(1)
        self.matrix_cells.set(cells)

    def scrape(self, queue_depth: int) -> tuple[bytes, str]:
        self.queue_depth.set(queue_depth)
        if not self.multiprocess:
            return generate_latest(self.registry), CONTENT_TYPE_LATEST
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST

    def process_exiting(self) -> None:
        """In multiprocess mode, drop this worker's live gauges (its counters stay counted)."""
        if self.multiprocess:
            from prometheus_client import multiprocess

            multiprocess.mark_process_dead(os.getpid())
