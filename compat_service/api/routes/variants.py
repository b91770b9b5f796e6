"""`GET /v1/torch/{version}/variants.json` (the release's builds as a PEP 825 variants JSON) and
`GET /v1/variants/explain` (which variant a PEP 817 installer and accelenv pick for a described host).

Both are the domain's functions (compat_service/domain/variants/) over the loaded matrix; the route only
translates HTTP.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query

from compat_service.api.deps import MatrixDep
from compat_service.domain.backends import Platform
from compat_service.domain.errors import ErrorBody
from compat_service.domain.variants.export import release_variants
from compat_service.domain.variants.selection import explain_selection, variant_host

router = APIRouter(tags=["variants"])

_VERSION = r"^(latest|\d{1,3}\.\d{1,3}(\.\d{1,3}([a-z0-9.]{0,16}))?)$"
_VERSIONISH = r"^[0-9][0-9A-Za-z.]{0,31}$"


@router.get(
    "/v1/torch/{version}/variants.json",
    summary="The release's builds as a PEP 825 {name}-{version}-variants.json",
    description="One document per platform (a label's arch list can differ by platform). Builds whose "
    "properties the matrix does not source (XPU device IPs) are not in it; `accelenv matrix show --variants "
    "--json` lists them with what is unknown.",
    responses={404: {"model": ErrorBody, "description": "the matrix does not list this release"}},
)
def variants_json(
    matrix: MatrixDep,
    version: Annotated[str, Path(pattern=_VERSION, description="a patch (2.13.0), a minor or latest")],
    platform: Platform = "linux-x86_64",
) -> dict[str, Any]:
    return release_variants(matrix.matrix, version, platform)["document"]


@router.get(
    "/v1/variants/explain",
    summary="Which variant a PEP 817 installer and accelenv pick for a host, and why they differ",
    description="The release's variants JSON judged for a described host: what the published nvidia / amd "
    "providers report supported and the variant an installer takes (PEP 817's order), the variant accelenv's "
    "hardware rules take (every GPU, NVIDIA minor-version compatibility, ROCm major.minor), and each "
    "difference with its code (highest-gpu-only, minor-version-compat, rocm-version-exact, known-bad).",
    responses={404: {"model": ErrorBody}, 422: {"model": ErrorBody}},
)
def explain(
    matrix: MatrixDep,
    torch: Annotated[str, Query(pattern=_VERSION, description="the release whose export is judged")] = "latest",
    platform: Platform = "linux-x86_64",
    gpu_arch: Annotated[str | None, Query(max_length=128, pattern=r"^[a-z0-9_,]+$",
                                          description="every GPU, comma-separated: sm_120,sm_61")] = None,
    gpu: Annotated[str | None, Query(max_length=128, description="GPU product names, comma-separated")] = None,
    driver: Annotated[str | None, Query(pattern=_VERSIONISH, description="the NVIDIA driver")] = None,
    cuda_driver_version: Annotated[
        str | None, Query(pattern=_VERSIONISH, description="the CUDA version the driver reports (default: from "
                          "driver)", openapi_examples={"r550": {"value": "12.4"}})
    ] = None,
    rocm: Annotated[str | None, Query(pattern=_VERSIONISH, description="the host's ROCm",
                                      openapi_examples={"rocm": {"value": "7.2.1"}})] = None,
) -> dict[str, Any]:
    document = release_variants(matrix.matrix, torch, platform)["document"]
    host = variant_host(matrix.matrix, os=platform.split("-")[0], driver=driver,
                        cuda_driver_version=cuda_driver_version, gpu_archs=gpu_arch, gpu_names=gpu,
                        rocm_version=rocm)
    return {"torch": torch, "platform": platform, **explain_selection(matrix.matrix, host, document).to_json()}
