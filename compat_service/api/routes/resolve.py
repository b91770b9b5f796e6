"""`GET /v1/resolve`: exactly the object `accelenv resolve --format json` prints, errors included.

The request is parsed by the domain's one parser (`ResolveRequest.from_strings`) and resolved by the
domain's resolver against the loaded matrix; the route adds only length limits and the per-worker cache.

This is the hot endpoint, so it reads its query string itself instead of declaring eight FastAPI query
parameters: FastAPI's per-parameter validation cost more than the cached resolution (see
benchmarks/bench_service.py). The parameters are still published in OpenAPI from the domain's one table
(``compat_service.domain.resolver.request.PARAMETERS``), which the CLI's flags come from too.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from compat_service.api.deps import get_matrix
from compat_service.api.routes.evidence import evidence_for_resolve
from compat_service.domain.errors import Cause, ErrorBody, InvalidRequestError
from compat_service.domain.resolver.request import PARAMETERS, ResolveRequest
from compat_service.domain.resolver.resolution import resolution_to_json
from compat_service.domain.resolver.resolution_schema import ResolutionBody
from compat_service.domain.resolver.stages import resolve as resolve_request

router = APIRouter(tags=["resolve"])

#: longest query string whose parse is memoized (every parameter at its limit fits well within it)
MAX_MEMO_QUERY = 1024

_OPENAPI = {
    "parameters": [
        {
            "name": p.name,
            "in": "query",
            "required": False,
            "description": p.description,
            "schema": {"type": "string", "maxLength": p.max_length},
        }
        for p in PARAMETERS
    ]
}


def parse_request(request: Request) -> ResolveRequest:
    """The query string as the domain's ResolveRequest (the one parser the CLI uses too)."""
    return ResolveRequest.from_query(query_strings(request))


def query_strings(request: Request) -> dict[str, str | None]:
    """The resolve parameters from the query string; an over-long value is an InvalidRequestError."""
    values: dict[str, str | None] = {}
    for p in PARAMETERS:
        name, limit = p.name, p.max_length
        value = request.query_params.get(name)
        if value is not None and len(value) > limit:
            raise InvalidRequestError(
                f"invalid query parameter {name}: longer than {limit} characters",
                hint="fix the named parameter; /docs describes every parameter",
                causes=[Cause(constraint=f"at most {limit} characters", origin=f"query parameter {name}")],
            )
        values[name] = value
    return values


@router.get(
    "/v1/resolve",
    summary="Resolve a torch install for a target (the CLI's JSON)",
    openapi_extra=_OPENAPI,
    responses={
        200: {
            "model": ResolutionBody,
            "description": "the resolution, as `accelenv resolve --format json` prints it",
        },
        404: {"model": ErrorBody, "description": "no torch release matches (torch-not-found)"},
        409: {"model": ErrorBody, "description": "no install satisfies the request; causes and alternatives say why"},
        422: {"model": ErrorBody, "description": "a parameter is malformed or unknown (invalid-request)"},
    },
)
async def resolve(request: Request) -> Response:
    cache = request.app.state.resolve_cache
    raw = request.scope["query_string"]
    # Only plausible query strings are memoized: a flood of huge ones must not fill memory.
    if len(raw) <= MAX_MEMO_QUERY:
        parsed = cache.requests.get_or_compute(raw, lambda: parse_request(request))
    else:
        parsed = parse_request(request)
    matrix = await get_matrix(request)
    # Evidence from the stored probe reports (routes/evidence.py); its stamp keeps the cache current.
    evidence, stamp = evidence_for_resolve(
        request.app, parsed.gpu_arch, require_verified=parsed.require_verified
    )
    body = cache.body(
        (matrix.content_hash, stamp, parsed),
        lambda: resolution_to_json(resolve_request(parsed, matrix.matrix, evidence)),
    )
    return Response(content=body, media_type="application/json")
