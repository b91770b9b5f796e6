"""`GET /metrics`: the service's metrics in the Prometheus text format (see compat_service/api/metrics.py)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from compat_service.api.deps import state_of
from compat_service.api.server.lifecycle import matrix_summary

router = APIRouter(tags=["service"])


@router.get(
    "/metrics",
    summary="Prometheus metrics: requests by route and status, latency, reports ingested, queue depth, matrix",
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text exposition format"}},
)
def metrics(request: Request) -> Response:
    state = state_of(request.app)
    summary = matrix_summary(state)
    if summary is not None:
        state.metrics.set_matrix(*summary)
    body, content_type = state.metrics.scrape(state.ingest_queue.depth)
    return Response(body, media_type=content_type, headers={"Cache-Control": "no-store"})
