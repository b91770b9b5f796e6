"""`GET /v1/lock`: `accelenv lock` for one host as a service: the answer and its whole closure as a
``pylock.toml`` (PEP 751), from `resolve`'s query parameters.

The closure is resolved by the resolution oracle (uv) against the index the settings name
(``ACCELENV_LOCK_INDEX_URL``; ``ACCELENV_LOCK_TORCH_INDEX`` mirrors the torch indexes), never one the caller
names; a service without ``ACCELENV_LOCK_INDEX_URL`` answers 503 ``lock-not-configured`` (it reaches out to an
index only where its operator said which). The work is the domain's and compat_service/index/locking.py's; the route
only translates HTTP.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from compat_service.api.deps import MatrixDep, SettingsDep
from compat_service.domain.errors import ErrorBody, InvalidRequestError, LockNotConfiguredError
from compat_service.domain.resolver.request import PARAMETERS, ResolveRequest

router = APIRouter(tags=["lock"])
TOML_TYPE = "application/toml"


@router.get(
    "/v1/lock",
    summary="The answer and its whole closure as a hashed pylock.toml (PEP 751)",
    description="Takes `GET /v1/resolve`'s query parameters (`with` included). Every wheel carries the sha256 "
    "its index states or, where the index states none, the hash of the downloaded bytes, recorded per file under "
    "`[packages.tool.accelenv] hash-source`. The closure comes from uv against the service's configured index.",
    response_class=Response,
    responses={
        200: {"content": {TOML_TYPE: {}}, "description": "the pylock.toml"},
        404: {"model": ErrorBody}, 409: {"model": ErrorBody}, 422: {"model": ErrorBody},
        502: {"model": ErrorBody, "description": "the index did not answer"},
        503: {"model": ErrorBody, "description": "the service names no lock index (ACCELENV_LOCK_INDEX_URL)"},
    },
    openapi_extra={"parameters": [
        {"name": p.name, "in": "query", "required": False, "description": p.description,
         "schema": {"type": "string", "maxLength": p.max_length}} for p in PARAMETERS
    ]},
)
def lock(request: Request, matrix: MatrixDep, settings: SettingsDep) -> Response:
    from compat_service.domain.lock.hosts import resolve_request
    from compat_service.domain.lock.pylock import dumps
    from compat_service.index.locking import LockInputs, lock_resolution

    names = {p.name for p in PARAMETERS}
    unknown = sorted(set(request.query_params) - names)
    if unknown:
        raise InvalidRequestError(f"unknown query parameter(s): {', '.join(unknown)}",
                                  hint=f"use GET /v1/resolve's: {', '.join(sorted(names))}")
    values: dict[str, str | list[str] | None] = {
        p.name: (request.query_params.getlist(p.name) or None) if p.repeatable else request.query_params.get(p.name)
        for p in PARAMETERS
    }
    resolution = resolve_request(ResolveRequest.from_query(values), matrix=matrix.matrix)
    if not settings.lock_index_url:
        raise LockNotConfiguredError("this service resolves no locks: it names no index to resolve them against",
                                     hint="the operator sets ACCELENV_LOCK_INDEX_URL; or run `accelenv lock` locally")
    inputs = LockInputs(index_url=settings.lock_index_url, torch_index=settings.lock_torch_index)
    document = lock_resolution(resolution, inputs)
    return Response(dumps(document), media_type=TOML_TYPE)
