"""Liveness (`/healthz`: the process answers) and readiness (`/readyz`: database, schema, matrix)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from compat_service.api.deps import EngineDep
from compat_service.db.readiness import Readiness, readiness

router = APIRouter(tags=["health"])

_NO_STORE = {"Cache-Control": "no-store"}


@router.get("/healthz", summary="The process is up")
async def healthz() -> JSONResponse:
    return JSONResponse({"status": "ok"}, headers=_NO_STORE)


@router.get(
    "/readyz",
    summary="Database reachable, schema at head, matrix loaded (503 otherwise)",
    responses={
        200: {"model": Readiness, "description": "ready"},
        503: {"model": Readiness, "description": "not ready: the failing check says why"},
    },
)
def readyz(engine: EngineDep) -> JSONResponse:
    report = readiness(engine)
    return JSONResponse(
        report.model_dump(mode="json"), status_code=200 if report.ready else 503, headers=_NO_STORE
    )
