"""`GET /v1/matrix`: declared matrix cells joined with their evidence status, plus observed cells.

Every row is assembled once per worker per (matrix load, evidence stamp) (``db/evidence/matrix_cells.py``,
through ``service_reads.current_rows``, which the heatmap page reads too); a request reads the stamp (one
aggregate query over the evidence cells, every request: a report stored through any worker shows in the
next answer of every worker), filters the assembled rows (memoized per filter) and turns only its page
into models.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from pydantic import BaseModel

from compat_service.api.deps import MatrixDep, SessionDep
from compat_service.api.service_reads import current_rows
from compat_service.db.evidence.queries import MatrixFilter
from compat_service.db.matrix.snapshot_follower import MatrixSnapshot
from compat_service.domain.backends import label_family
from compat_service.domain.errors import Cause, ErrorBody, InvalidRequestError
from compat_service.domain.evidence.cells import MatrixCell
from compat_service.domain.evidence.status import CellStatus

router = APIRouter(prefix="/v1/matrix", tags=["matrix"])

MAX_PAGE = 500
FamilyParam = Literal["cpu", "cuda", "rocm", "xpu"]
_CLAUSE = r"\s*(==|!=|<=|>=|<|>)\s*\d{1,3}(\.\d{1,3}){0,2}\s*"
#: ``torch=``: a minor, a patch, or a range of comparison clauses
TORCH_PATTERN = rf"^(\d{{1,3}}\.\d{{1,3}}(\.\d{{1,3}})?|{_CLAUSE}(,{_CLAUSE})*)$"


class MatrixPage(BaseModel):
    matrix_version: str
    total: int
    limit: int
    offset: int
    items: list[MatrixCell]


@router.get(
    "",
    summary="Matrix cells with their evidence status (declared, verified, partial, broken, observed)",
    description=(
        "Every declared cell (torch patch x build x Python x platform) joined with its evidence, then the "
        "observed cells. `family` filters by the build's wheel family (cu121 is cuda), `backend` by the "
        "device a probe ran on; `torch` takes a minor, a patch or a PEP 440 range. Each cell carries its "
        "build's `family` and `build_runtime` (the CUDA/ROCm version the build stands for)."
    ),
    response_model=MatrixPage,
    responses={422: {"model": ErrorBody}},
)
def list_matrix(
    request: Request,
    session: SessionDep,
    matrix: MatrixDep,
    torch: Annotated[str | None, Query(min_length=1, max_length=64, pattern=TORCH_PATTERN,
                                       description="2.3, 2.3.1 or a PEP 440 range: '>=2.3', '>=2.2,<2.6'")] = None,
    build: Annotated[str | None, Query(min_length=1, max_length=32, description="cpu, cu121, rocm6.0")] = None,
    python: Annotated[str | None, Query(pattern=r"^3\.\d{1,2}t?$", description="3.11 or 3.13t")] = None,
    family: Annotated[FamilyParam | None, Query(description="the build's wheel family (cu121 is cuda)")] = None,
    backend: Annotated[str | None, Query(min_length=1, max_length=32,
                                         description="the evidence's device backend a probe ran on: cpu, cuda, "
                                         "refdev (not the build's family: see family)")] = None,
    os: Annotated[Literal["linux", "windows", "macos", "other"] | None, Query()] = None,
    arch: Annotated[str | None, Query(min_length=1, max_length=32, description="x86_64, aarch64, arm64")] = None,
    status: CellStatus | None = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> MatrixPage:
    flt = MatrixFilter(
        torch=_torch_filter(torch), build=build, python=python, backend=backend.lower() if backend else None,
        os=os, arch=arch, status=status, family=family,
    )
    rows = current_rows(request.app, session, matrix)
    selected = rows.select(flt)
    page = [_with_build(cell, matrix) for cell in rows.page(session, selected[offset : offset + limit])]
    return MatrixPage(matrix_version=matrix.version, total=len(selected), limit=limit, offset=offset, items=page)


_VERSION_RE = re.compile(r"^\d{1,3}\.\d{1,3}(\.\d{1,3})?$")


def _torch_filter(text: str | None) -> str | None:
    """``torch=``: a minor or patch as it was, or a PEP 440 range (checked here, normalised)."""
    if text is None or _VERSION_RE.match(text.strip()):
        return text.strip() if text else text
    try:
        return str(SpecifierSet(text.strip()))
    except InvalidSpecifier:
        raise InvalidRequestError(
            f"torch {text!r} is neither a version (2.3, 2.3.1) nor a PEP 440 range",
            hint="use 2.3, 2.3.1, or a range such as '>=2.3' or '>=2.2,<2.6'",
            causes=[Cause(constraint=f"torch {text}", origin="request")],
        ) from None


def _with_build(cell: MatrixCell, matrix: MatrixSnapshot) -> MatrixCell:
    """The cell with its build's family and runtime version (from build_variants.yaml)."""
    if cell.torch_build is None:
        return cell
    row = matrix.matrix.build_variant(cell.torch_build)
    family = row.family if row is not None else label_family(cell.torch_build)
    runtime = row.runtime if row is not None else None
    return cell.model_copy(update={"family": family, "build_runtime": runtime})

