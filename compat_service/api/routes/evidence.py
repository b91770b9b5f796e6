"""`GET /v1/evidence`: the evidence of one cell (per-check counts, hosts, first/last seen, failing checks)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response

from compat_service.api.deps import PRIVATE, MatrixDep, SessionDep, holds_scope
from compat_service.api.service_reads import cell_evidence, cell_key
from compat_service.domain.errors import ErrorBody
from compat_service.domain.evidence.cells import CellEvidence

router = APIRouter(prefix="/v1/evidence", tags=["evidence"])

_Text = Query(min_length=1, max_length=64)


@router.get(
    "",
    summary="Evidence of one cell; an omitted optional part means 'unknown' in the report",
    response_model=CellEvidence,
    responses={401: {"model": ErrorBody}, 404: {"model": ErrorBody}, 422: {"model": ErrorBody}},
)
def get_evidence(
    request: Request,
    response: Response,
    reader: Annotated[bool, Depends(holds_scope("read"))],
    session: SessionDep,
    matrix: MatrixDep,
    torch: Annotated[str, Query(min_length=1, max_length=64, description="e.g. 2.3.1 (a local tag is ignored)")],
    python: Annotated[str, Query(pattern=r"^3\.\d{1,2}(\.\d+)?t?$", description="e.g. 3.11 or 3.13t")],
    os: Annotated[str, Query(pattern=r"^(linux|windows|macos|other)$")],
    arch: Annotated[str, Query(min_length=1, max_length=32, description="x86_64, aarch64, arm64")],
    backend: Annotated[str, Query(min_length=1, max_length=32, description="cpu, cuda, mps, xpu, refdev, ...")],
    build: Annotated[str | None, Query(min_length=1, max_length=32, description="cpu, cu121, rocm6.0")] = None,
    runtime: Annotated[str | None, _Text] = None,
    driver: Annotated[str | None, _Text] = None,
    device_arch: Annotated[str | None, _Text] = None,
) -> CellEvidence:
    key = cell_key(
        torch=torch, python=python, os=os, arch=arch, backend=backend, build=build, runtime=runtime,
        driver=driver, device_arch=device_arch,
    )
    found, stored = cell_evidence(request.app, session, matrix, key, reader=reader)
    if stored and reader:
        response.headers.update(PRIVATE)
    elif stored:
        response.headers["Vary"] = "Authorization"
    return found
