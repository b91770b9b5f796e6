"""`GET /v1/torch` (releases, filtered, paginated) and `GET /v1/torch/{version}` (what the matrix knows)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from packaging.specifiers import SpecifierSet
from pydantic import BaseModel

from compat_service.api.deps import CurrentMatrixDep, SessionDep
from compat_service.db.matrix.releases import ReleaseFilter, TorchReleasePublic, get_release, list_releases
from compat_service.domain.backends import Platform
from compat_service.domain.errors import DatabaseNotReadyError, ErrorBody, NotFoundError
from compat_service.domain.matrix.schema import ArchList, Source, TorchMinor

router = APIRouter(prefix="/v1/torch", tags=["torch"])

MAX_PAGE = 500


class TorchReleasePage(BaseModel):
    matrix_version: str
    total: int
    limit: int
    offset: int
    items: list[TorchReleasePublic]


class TorchReleaseDetail(BaseModel):
    matrix_version: str
    release: TorchReleasePublic
    #: the minor's entry in matrix_data, as the files hold it (variants, python, default index, patches)
    minor: TorchMinor
    #: the GPU arch lists whose torch range covers this release
    arch_lists: list[ArchList]
    #: arch lists learned from agreeing probe reports, for builds no curated row covers (sources: report ids)
    observed_arch_lists: list[ArchList] = []
    #: every source the release's rows cite
    sources: list[Source]


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
        str, Path(pattern=r"^\d{1,3}\.\d{1,3}\.\d{1,3}([a-z0-9.]{0,16})$", description="e.g. 2.3.1")
    ],
) -> TorchReleaseDetail:
    release = get_release(session, version)
    if release is None:
        raise NotFoundError(
            f"torch {version} is not in the matrix",
            hint="GET /v1/torch lists the releases the matrix knows",
        )
    data = matrix.data
    minor = next((m for m in data.torch_releases.minors if m.minor == release.minor), None)
    if minor is None:  # a load committed between reading the snapshot and the tables
        raise DatabaseNotReadyError(
            "the matrix was reloaded while answering", hint="retry the request", causes=[]
        )
    arch_lists = [
        a for a in data.gpu_archs.arch_lists if SpecifierSet(a.torch).contains(version, prereleases=True)
    ]
    cited: set[str] = set()
    for row in (*minor.python, *minor.variants, *minor.default_index, *arch_lists):
        cited.update(row.source)
    for patch in minor.patches:
        if patch.version == version:
            cited.update(patch.release_date_source)
            for companion in (patch.torchvision, patch.torchaudio, patch.triton):
                cited.update(companion.source)
    sources = [s for s in data.sources.sources if s.key in cited]
    observed = getattr(matrix.matrix, "observed_arch_lists", None)
    return TorchReleaseDetail(
        matrix_version=matrix.version, release=release, minor=minor, arch_lists=arch_lists, sources=sources,
        observed_arch_lists=observed(version) if observed is not None else [],
    )
