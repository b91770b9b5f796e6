"""`GET /v1/packages` (the ecosystem packages `resolve --with` knows) and `GET /v1/packages/{name}` (their
releases with the torch requirement and companion pins each states, newest first).

The rows are the domain's (`compat_service.domain.stacks.package_view`), read from the bundled ecosystem
catalog (the generated index facts with the curated ecosystem.yaml); `accelenv matrix show --with NAME` prints
the same rows.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, Field

from compat_service.domain.backends import Platform
from compat_service.domain.errors import ErrorBody, NotFoundError

router = APIRouter(prefix="/v1/packages", tags=["packages"])


class PlatformRow(BaseModel):
    platform: str
    torch: str | None = Field(description="the torch requirement the wheel's METADATA states ('' = any; null = none)")
    companions: dict[str, str] = Field(description="exact pins of torchvision / torchaudio / torch-npu")
    pythons: list[str] = Field(description="Python tags of its wheels: 3.11, 3.13t, 3.8+ (abi3), any")


class ReleaseRow(BaseModel):
    version: str
    yanked: bool
    prerelease: bool
    first_upload: str | None
    requires_python: str | None
    sdist: bool
    platforms: list[PlatformRow]
    curated_torch: dict[str, Any] | None = Field(description="a torch requirement the metadata lacks (curated)")
    prebuilt_wheels: list[dict[str, Any]] = Field(description="prebuilt wheels outside the index (curated)")
    policy: dict[str, Any] | None = Field(description="a version policy row (vllm-ascend: vllm, CANN)")
    wheel_pages: list[dict[str, Any]] = Field(
        description="the project's own wheel pages carrying it (curated): torch minors, builds, platforms, the "
        "page URL template ({torch} the minor, {build} the label) and sources"
    )


class PackageDetail(BaseModel):
    name: str
    torch_build: str | None = Field(description="default-index, any, prebuilt, npu, wheel-pages, jit; null = unknown")
    sources: list[str]
    index: str | None = Field(description="the index its facts were read from (pip-default = pip's default)")
    retrieved: str | None
    platforms: list[str]
    releases: list[ReleaseRow]


class PackageList(BaseModel):
    packages: list[str]


def _catalog() -> Any:
    from compat_service.domain.stacks.catalog import load_catalog

    return load_catalog()


@router.get("", summary="The ecosystem packages resolved with torch (resolve with=...)", response_model=PackageList)
def list_packages() -> PackageList:
    return PackageList(packages=_catalog().names())


@router.get(
    "/{name}",
    summary="An ecosystem package's releases with the torch requirement each states, newest first",
    response_model=PackageDetail,
    responses={404: {"model": ErrorBody, "description": "not an ecosystem package (not-found)"}},
)
def get_package(
    name: Annotated[str, Path(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$", description="e.g. vllm")],
    platform: Platform | None = None,
    prereleases: Annotated[bool, Query(description="include pre-releases")] = False,
) -> PackageDetail:
    from compat_service.domain.stacks.package_view import package_view

    catalog = _catalog()
    view = package_view(catalog, name.lower().replace("_", "-"), platform, prereleases)
    if view is None:
        raise NotFoundError(
            f"{name!r} is not an ecosystem package accelenv resolves with torch",
            hint=f"one of: {', '.join(catalog.names())} (GET /v1/packages)",
        )
    return PackageDetail.model_validate(view)
