"""`GET /v1/torch` (releases, filtered, paginated) and `GET /v1/torch/{version}` (what the matrix knows)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel

from compat_service.api.deps import CurrentMatrixDep, SessionDep
from compat_service.api.service_reads import RELEASE_VERSION, TorchReleaseDetail, torch_release
from compat_service.db.matrix.releases import ReleaseFilter, TorchReleasePublic, list_releases
from compat_service.domain.backends import Platform
from compat_service.domain.errors import ErrorBody

router = APIRouter(prefix="/v1/torch", tags=["torch"])

MAX_PAGE = 500


class TorchReleasePage(BaseModel):
    matrix_version: str
    total: int
    limit: int
    offset: int
    items: list[TorchReleasePublic]


@router.get("", summary="Torch releases the matrix knows, newest first", response_model=TorchReleasePage)
def list_torch(
    session: SessionDep,
    matrix: CurrentMatrixDep,
    minor: Annotated[str | None, Query(pattern=r"^\d{1,3}\.\d{1,3}$", description="e.g. 2.3")] = None,
    python: Annotated[str | None, Query(pattern=r"^3\.\d{1,2}t?$", description="e.g. 3.11 or 3.13t")] = None,
    backend: Annotated[
        str | None,
        Query(
            pattern=r"^[a-z][a-z0-9.]{1,15}$", description="a build label (cu121, rocm6.0) or family (cuda)"
        ),
    ] = None,
    platform: Platform | None = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> TorchReleasePage:
    total, items = list_releases(
        session,
        ReleaseFilter(minor=minor, python=python, backend=backend, platform=platform),
        limit=limit,
        offset=offset,
    )
    return TorchReleasePage(
        matrix_version=matrix.version, total=total, limit=limit, offset=offset, items=items
    )


@router.get(
    "/{version}",
    summary="What the matrix knows about one torch release",
    response_model=TorchReleaseDetail,
    responses={404: {"model": ErrorBody, "description": "the matrix does not list this release"}},
)
def get_torch(
    session: SessionDep,
    matrix: CurrentMatrixDep,
    version: Annotated[
        str, Path(pattern=RELEASE_VERSION, description="e.g. 2.3.1")
    ],
) -> TorchReleaseDetail:
    return torch_release(session, matrix, version)
