"""`GET /v1/resolve`: exactly the object `accelenv resolve --format json` prints, errors included.

The request is parsed by the domain's one parser (`ResolveRequest.from_strings`) and resolved by the
domain's resolver against the loaded matrix; the route adds only length limits and the per-worker cache.

This is the hot endpoint, so it reads its query string itself instead of declaring eight FastAPI query
parameters: FastAPI's per-parameter validation cost more than the cached resolution (see
benchmarks/bench_service.py). The parameters are still published in OpenAPI from ``PARAMETERS``.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from compat_service.api.deps import get_matrix
from compat_service.api.routes.evidence import evidence_for_resolve
from compat_service.domain.errors import Cause, ErrorBody, InvalidRequestError
from compat_service.domain.resolution import resolution_to_json
from compat_service.domain.resolver import resolve as resolve_request
from compat_service.domain.resolver_request import ResolveRequest

router = APIRouter(tags=["resolve"])

#: query parameter -> (longest accepted value, description)
PARAMETERS: dict[str, tuple[int, str]] = {
    "torch": (64, "latest (default), a minor 2.3, an exact 2.3.1 or a specifier '>=2.2,<2.4'"),
    "python": (16, "3.11 or 3.13t; default: the newest the chosen torch supports"),
    "os": (16, "linux (default), windows or macos"),
    "arch": (16, "x86_64 (default), aarch64 or arm64"),
    "backend": (32, "cpu (default), a label (cu121, rocm6.0, xpu) or a family (cuda, rocm, mps, npu, mlu)"),
    "driver": (32, "the target's driver version, e.g. 535.104.05"),
    "gpu_arch": (16, "the target's GPU architecture: sm_90, 9.0 or gfx942"),
    "with": (64, "companions: torchvision,torchaudio (default), a subset, or none"),
    "require_verified": (8, "true: accept only combinations probe reports verify"),
}

#: longest query string whose parse is memoized (every parameter at its limit fits well within it)
MAX_MEMO_QUERY = 1024

_OPENAPI = {
    "parameters": [
        {
            "name": name,
            "in": "query",
            "required": False,
            "description": description,
            "schema": {"type": "string", "maxLength": limit},
        }
        for name, (limit, description) in PARAMETERS.items()
    ]
}


def parse_request(request: Request) -> ResolveRequest:
    """The query string as the domain's ResolveRequest (the one parser the CLI uses too)."""
    q = query_strings(request)
    return ResolveRequest.from_strings(
        torch=q["torch"],
        python=q["python"],
        os=q["os"],
        arch=q["arch"],
        backend=q["backend"],
        driver=q["driver"],
        gpu_arch=q["gpu_arch"],
        with_=q["with"],
        require_verified=(q["require_verified"] or "").lower() in ("1", "true", "yes"),
    )


def query_strings(request: Request) -> dict[str, str | None]:
    """The resolve parameters from the query string; an over-long value is an InvalidRequestError."""
    values: dict[str, str | None] = {}
    for name, (limit, _) in PARAMETERS.items():
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
        200: {"description": "the resolution, as `accelenv resolve --format json` prints it"},
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
    evidence, stamp = evidence_for_resolve(request.app, parsed.gpu_arch)
    body = cache.body(
        (matrix.content_hash, stamp, parsed),
        lambda: resolution_to_json(resolve_request(parsed, matrix.matrix, evidence)),
    )
    return Response(content=body, media_type="application/json")
