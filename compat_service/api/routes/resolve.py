"""`GET /v1/resolve`: exactly the object `accelenv resolve --format json` prints, errors included.

The request is parsed by the domain's one parser (`ResolveRequest.from_strings`) and resolved by the
domain's resolver against the loaded matrix; the body, the length limits and the per-worker cache are
``service_reads.resolution_body``, which the selector page reads too.

This is the hot endpoint, so it is a raw ASGI endpoint (``route``, matched ahead of every other route):
FastAPI's request machinery (a Request, dependency solving, query-parameter validation, two exit stacks)
cost more than the resolution itself (benchmarks/bench_service.py --uncached). Its errors still leave
through the app's one error handler (an AccelenvError raised here reaches Starlette's ExceptionMiddleware
like a route's). ``router`` declares the same path, its parameters (from the domain's one table,
``compat_service.domain.resolver.request.PARAMETERS``, which the CLI's flags come from too) and its
responses for OpenAPI; its handler answers through the same function, for an app built without ``route``.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from compat_service.api.service_reads import resolution_body
from compat_service.domain.errors import ErrorBody
from compat_service.domain.resolver.request import PARAMETERS
from compat_service.domain.resolver.resolution_schema import ResolutionBody

router = APIRouter(tags=["resolve"])

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

_HEADERS = [(b"content-type", b"application/json")]


class _Answer:
    """``GET /v1/resolve`` as a raw ASGI endpoint (see the module's docstring). A class, not a function:
    Starlette wraps a function endpoint in its request/response machinery, which is what this avoids."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["route"] = route  # the metrics' route label, as a FastAPI route sets it
        body = await resolution_body(scope["app"], scope["query_string"])
        headers = [*_HEADERS, (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})


#: the route that answers GET /v1/resolve (the app puts it ahead of every other route)
route = Route("/v1/resolve", _Answer(), methods=["GET"], include_in_schema=False)
route.methods = {"GET"}  # Starlette adds HEAD to a GET route; the API declares GET only


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
    # Declares the operation for OpenAPI; `route` answers it. Same body through the same function.
    body = await resolution_body(request.app, request.scope["query_string"])
    return Response(content=body, media_type="application/json")
