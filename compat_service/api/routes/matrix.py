"""`GET /v1/matrix`: declared matrix cells joined with their evidence status, plus observed cells."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel

from compat_service.api.deps import MatrixDep, SessionDep, SettingsDep
from compat_service.db.evidence_queries import MatrixFilter, declared_for, matrix_cells, with_failing_checks
from compat_service.domain.errors import ErrorBody
from compat_service.domain.evidence.cells import MatrixCell

router = APIRouter(prefix="/v1/matrix", tags=["matrix"])

MAX_PAGE = 500
StatusParam = Literal["declared", "verified", "partial", "broken", "observed"]


class MatrixPage(BaseModel):
    matrix_version: str
    total: int
    limit: int
    offset: int
    items: list[MatrixCell]


@router.get(
    "",
    summary="Matrix cells with their evidence status (declared, verified, partial, broken, observed)",
    response_model=MatrixPage,
    responses={422: {"model": ErrorBody}},
)
def list_matrix(
    session: SessionDep,
    settings: SettingsDep,
    matrix: MatrixDep,
    torch: Annotated[str | None, Query(pattern=r"^\d{1,3}\.\d{1,3}(\.\d{1,3})?$", description="2.3 or 2.3.1")] = None,
    build: Annotated[str | None, Query(min_length=1, max_length=32, description="cpu, cu121, rocm6.0")] = None,
    python: Annotated[str | None, Query(pattern=r"^3\.\d{1,2}t?$", description="3.11 or 3.13t")] = None,
    backend: Annotated[str | None, Query(min_length=1, max_length=32, description="cpu, cuda, refdev")] = None,
    os: Annotated[Literal["linux", "windows", "macos", "other"] | None, Query()] = None,
    arch: Annotated[str | None, Query(min_length=1, max_length=32, description="x86_64, aarch64, arm64")] = None,
    status: StatusParam | None = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> MatrixPage:
    flt = MatrixFilter(
        torch=torch, build=build, python=python, backend=backend.lower() if backend else None, os=os,
        arch=arch, status=status,
    )
    declared = declared_for(matrix.content_hash, matrix.data)
    rows = matrix_cells(
        session, declared, flt, min_hosts=settings.verified_min_hosts,
        min_submitters=settings.verified_min_submitters,
    )
    page = with_failing_checks(session, rows[offset : offset + limit])
    return MatrixPage(matrix_version=matrix.version, total=len(rows), limit=limit, offset=offset, items=page)
