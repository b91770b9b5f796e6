"""`GET /v1/evidence`: the evidence of one cell (per-check counts, hosts, first/last seen, failing checks)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response

from compat_service.api.deps import PRIVATE, MatrixDep, SessionDep, SettingsDep, holds_scope, state_of
from compat_service.db.evidence.lookup import DatabaseEvidence
from compat_service.db.evidence.queries import cell_evidence, declared_for
from compat_service.domain.backends import normalise_arch
from compat_service.domain.errors import ErrorBody, NotFoundError
from compat_service.domain.evidence.cells import CellEvidence, CellKey, CheckCounts, python_minor

router = APIRouter(prefix="/v1/evidence", tags=["evidence"])

_Text = Query(min_length=1, max_length=64)


@router.get(
    "",
    summary="Evidence of one cell; an omitted optional part means 'unknown' in the report",
    response_model=CellEvidence,
    responses={401: {"model": ErrorBody}, 404: {"model": ErrorBody}, 422: {"model": ErrorBody}},
)
def get_evidence(
    response: Response,
    reader: Annotated[bool, Depends(holds_scope("read"))],
    session: SessionDep,
    settings: SettingsDep,
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
    key = CellKey(
        torch_version=torch.partition("+")[0],
        torch_build=build,
        python=python_minor(python),
        os=os,
        arch=normalise_arch(os, arch),
        backend=backend.lower(),
        runtime_version=runtime,
        driver_version=driver,
        device_arch=device_arch,
    )
    declared = declared_for(matrix.content_hash, matrix.data)
    found = cell_evidence(
        session, key, declared=declared, min_hosts=settings.verified_min_hosts,
        min_submitters=settings.verified_min_submitters,
    )
    if found is not None:
        if reader:
            response.headers.update(PRIVATE)
            return found
        response.headers["Vary"] = "Authorization"
        return public_view(found)
    if declared.declared_cell_of(key) is not None:
        return CellEvidence(
            key=key, declared=True, status="declared", health="none", reports=0, hosts=0, passing_hosts=0,
            first_seen=None, last_seen=None, counts=CheckCounts(), failing_checks=[],
        )
    raise NotFoundError(
        "no report was ever stored for this combination, and the matrix does not list it",
        hint="list known cells with GET /v1/matrix; omitted parameters (build, runtime, driver, device_arch) "
        "mean 'unknown', so pass every part the probe reported",
    )


def public_view(found: CellEvidence) -> CellEvidence:
    """A cell's evidence without what only `read` tokens see: the report ids (they open raw reports) and the
    failure texts (a report's own words, which may name paths or devices)."""
    return found.model_copy(update={
        "recent_report_ids": [],
        "checks": [c.model_copy(update={"last_failure": None}) for c in found.checks],
        "failing_checks": [c.model_copy(update={"last_failure": None}) for c in found.failing_checks],
    })


def evidence_for_resolve(
    app: Any, gpu_arch: str | None, *, require_verified: bool = False
) -> tuple[DatabaseEvidence | None, str]:
    """The resolver's evidence lookup over this app's database, and the stamp the resolve cache key needs.
    While no report is stored the lookup is None (the answer is then exactly the offline CLI's), except with
    ``require_verified``: an empty database verifies nothing, so it answers `not-verified` as
    `resolve --database` does on the same file."""
    version = state_of(app).evidence_version
    stamp = version.current()
    if not version.has_evidence and not require_verified:
        return None, stamp
    settings = state_of(app).settings
    lookup = DatabaseEvidence(
        state_of(app).engine, min_hosts=settings.verified_min_hosts, min_submitters=settings.verified_min_submitters,
        gpu_arch=gpu_arch,
    )
    return lookup, stamp
