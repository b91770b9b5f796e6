"""`GET /v1/resolve`: exactly the object `accelenv resolve --format json` prints, errors included.

The request is parsed by the domain's one parser (`ResolveRequest.from_strings`) and resolved by the
domain's resolver against the loaded matrix; the route adds only length limits and the per-worker cache.

A plain FastAPI route, answered like every other: its errors leave through the app's one error handler.
It reads the raw query string itself (one parse for the domain's parameter table, cached per worker) rather
than declaring each parameter for FastAPI to validate, so ``openapi_extra`` declares them for OpenAPI (from
the domain's one table, ``compat_service.domain.resolver.request.PARAMETERS``, which the CLI's flags come
from too).

``format=`` picks the answer's form: ``json`` (default) or the CLI's text formats (``pip``, ``requirements``,
``uv``, ``conda``, ``docker``/``dockerfile``, ``text``) as text/plain, the same text `accelenv resolve --format`
prints. The query is strict: a parameter the table does not hold is a 422 naming the nearest one
(api/inputs/strict_query.py). The domain's errors speak the CLI's flags; on their way out (and into the cache) they
are reworded with the API's names (``strict_query.in_api_words``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from compat_service.api.inputs.resolve_query import FORMATS, MAX_REPEATS
from compat_service.api.service_reads import resolution_answer
from compat_service.domain.errors import ErrorBody
from compat_service.domain.resolver.request import PARAMETERS, Parameter
from compat_service.domain.resolver.resolution_schema import ResolutionBody

router = APIRouter(tags=["resolve"])

def _openapi_parameter(p: Parameter) -> dict[str, Any]:
    """One query parameter for OpenAPI; a repeatable one (``with=vllm&with=flash-attn``) is an array of
    strings, sent exploded (the name once per value)."""
    text = {"type": "string", "maxLength": p.max_length}
    declared: dict[str, Any] = {"name": p.name, "in": "query", "required": False, "description": p.description}
    if p.repeatable:
        declared["schema"] = {"type": "array", "items": text, "maxItems": MAX_REPEATS}
        declared["style"], declared["explode"] = "form", True
    else:
        declared["schema"] = text
    return declared


_OPENAPI = {
    "parameters": [_openapi_parameter(p) for p in PARAMETERS]
    + [
        {
            "name": "format",
            "in": "query",
            "required": False,
            "description": "json (default), or the CLI's text as text/plain: pip, requirements, uv, conda, "
            "docker (dockerfile), text",
            "schema": {"type": "string", "enum": sorted(FORMATS)},
        }
    ]
}


@router.get(
    "/v1/resolve",
    summary="Resolve a torch install for a target (the CLI's JSON)",
    openapi_extra=_OPENAPI,
    responses={
        200: {
            "model": ResolutionBody,
            "description": "the resolution, as `accelenv resolve --format json` prints it; with format= other "
            "than json, the same text as `accelenv resolve --format FORMAT` (text/plain)",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        },
        404: {"model": ErrorBody, "description": "no torch release matches (torch-not-found)"},
        409: {"model": ErrorBody, "description": "no install satisfies the request; causes and alternatives say why"},
        422: {"model": ErrorBody, "description": "a parameter is malformed or unknown (invalid-request)"},
    },
)
async def resolve(request: Request) -> Response:
    # the query string as the framework has read it (FastAPI reads every request's; one reading, not two)
    raw = request.scope["query_string"]
    body, media_type = await resolution_answer(request.app, raw, request.query_params.multi_items())
    return Response(content=body, media_type=media_type)
