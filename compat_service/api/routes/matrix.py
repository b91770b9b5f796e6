"""`GET /v1/matrix`: declared matrix cells joined with their evidence status, plus observed cells.

Every row is assembled once per worker per (matrix load, evidence stamp) (``db/evidence/matrix_cells.py``,
through ``service_reads.current_rows``, which the heatmap page reads too); a request reads the stamp (one
aggregate query over the evidence cells, every request: a report stored through any worker shows in the
next answer of every worker), filters the assembled rows (memoized per filter) and turns only its page
into models.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel

from compat_service.api.deps import MatrixDep, SessionDep
from compat_service.api.service_reads import current_rows
from compat_service.db.evidence.queries import MatrixFilter
from compat_service.domain.errors import ErrorBody
from compat_service.domain.evidence.cells import MatrixCell
from compat_service.domain.evidence.status import CellStatus

router = APIRouter(prefix="/v1/matrix", tags=["matrix"])

MAX_PAGE = 500


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
    request: Request,
    session: SessionDep,
    matrix: MatrixDep,
    torch: Annotated[str | None, Query(pattern=r"^\d{1,3}\.\d{1,3}(\.\d{1,3})?$", description="2.3 or 2.3.1")] = None,
    build: Annotated[str | None, Query(min_length=1, max_length=32, description="cpu, cu121, rocm6.0")] = None,
    python: Annotated[str | None, Query(pattern=r"^3\.\d{1,2}t?$", description="3.11 or 3.13t")] = None,
    backend: Annotated[str | None, Query(min_length=1, max_length=32, description="cpu, cuda, refdev")] = None,
    os: Annotated[Literal["linux", "windows", "macos", "other"] | None, Query()] = None,
    arch: Annotated[str | None, Query(min_length=1, max_length=32, description="x86_64, aarch64, arm64")] = None,
    status: CellStatus | None = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> MatrixPage:
    flt = MatrixFilter(
        torch=torch, build=build, python=python, backend=backend.lower() if backend else None, os=os,
        arch=arch, status=status,
    )
    rows = current_rows(request.app, session, matrix)
    selected = rows.select(flt)
    page = rows.page(session, selected[offset : offset + limit])
    return MatrixPage(matrix_version=matrix.version, total=len(selected), limit=limit, offset=offset, items=page)

