"""`GET /v1/resolve`: exactly the object `accelenv resolve --format json` prints, errors included.

The request is parsed by the domain's one parser (`ResolveRequest.from_strings`) and resolved by the
domain's resolver against the loaded matrix; the route adds only length limits and the per-worker cache.

This is the hot endpoint, so it is a raw ASGI endpoint (``route``, matched ahead of every other route):
FastAPI's request machinery (a Request, dependency solving, query-parameter validation, two exit stacks)
cost more than the resolution itself (benchmarks/bench_service.py --uncached). Its errors still leave
through the app's one error handler (an AccelenvError raised here reaches Starlette's ExceptionMiddleware
like a route's). ``router`` declares the same path, its parameters (from the domain's one table,
``compat_service.domain.resolver.request.PARAMETERS``, which the CLI's flags come from too) and its
responses for OpenAPI; its handler answers through the same function, for an app built without ``route``.

``format=`` picks the answer's form: ``json`` (default) or the CLI's text formats (``pip``, ``requirements``,
``uv``, ``conda``, ``docker``/``dockerfile``, ``text``) as text/plain, the same text `accelenv resolve --format`
prints. The query is strict: a parameter the table does not hold is a 422 naming the nearest one
(api/inputs/strict_query.py). The domain's errors speak the CLI's flags; on their way out (and into the cache) they
are reworded with the API's names (``strict_query.in_api_words``), and the endpoint writes them itself
(`error_bytes`, the handler's exact body) — only the failure path pays for that.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from fastapi import APIRouter, Request, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from compat_service.api.middleware.observability import current_request_id
from compat_service.api.service_reads import FORMATS, JSON_TYPE, MAX_REPEATS, resolution_answer
from compat_service.domain.errors import AccelenvError, ErrorBody
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


def error_bytes(err: AccelenvError) -> bytes:
    """The error's body exactly as the app's handler writes it (api/errors.py: ``ErrorBody`` then
    ``request_id``, compact JSON), its invariant part serialised once per error object."""
    head = getattr(err, "_wire_head", None)
    if head is None:
        body = {
            "code": err.code,
            "message": err.message,
            "hint": err.hint,
            "causes": [{"constraint": c.constraint, "origin": c.origin, "detail": c.detail} for c in err.causes],
            "alternatives": [{"description": a.description, "request": a.request} for a in err.alternatives],
        }  # ErrorBody's fields in its order (a test holds them equal: tests/api/test_strict_query.py)
        head = orjson.dumps(body)[:-1]  # without its closing brace
        err._wire_head = head  # type: ignore[attr-defined]
    return head + b',"request_id":' + orjson.dumps(current_request_id()) + b"}"




class _Answer:
    """``GET /v1/resolve`` as a raw ASGI endpoint (see the module's docstring). A class, not a function:
    Starlette wraps a function endpoint in its request/response machinery, which is what this avoids."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["route"] = route  # the metrics' route label, as a FastAPI route sets it
        status = 200
        try:
            body, content_type = await resolution_answer(scope["app"], scope["query_string"])
        except AccelenvError as err:
            # Answered here, in the one error shape, from bytes kept on the error (a cached error is sent
            # again as is): the unsatisfiable answers pipelines send many of skip the exception middleware,
            # pydantic and the JSON encoder. Anything else still leaves through the app's handlers.
            if err.http_status == 401:
                raise
            status, body, content_type = err.http_status, error_bytes(err), JSON_TYPE
        headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


#: the route that answers GET /v1/resolve (the app puts it ahead of every other route)
route = Route("/v1/resolve", _Answer(), methods=["GET"], include_in_schema=False)
route.methods = {"GET"}  # Starlette adds HEAD to a GET route; the API declares GET only


class FastLane:
    """The innermost of the app's middlewares: a request ``route`` matches goes straight to it, past Starlette's
    exception middleware, FastAPI's exit stack and the router, which cost every resolve more than its own
    middlewares and do nothing for it (it opens no dependency; the router would pick it first). An exception
    it raises is answered by the app's handler for it (``handlers``: the app's, by class), as the exception
    middleware would; one without a handler leaves as before (the observability middleware answers 500)."""

    def __init__(self, app: ASGIApp, handlers: Mapping[Any, Any]) -> None:
        self.app = app
        self.handlers = handlers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # the route's own path, under no root path: anything else (HEAD, another path, a mounted app) goes the
        # router's way, which answers it as before
        if scope["type"] != "http" or scope["method"] != "GET" or scope["path"] != route.path or scope.get("root_path"):
            await self.app(scope, receive, send)
            return
        scope["endpoint"], scope["path_params"] = route.endpoint, {}  # what the router's match would set
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await route.app(scope, receive, tracking_send)
        except Exception as exc:
            handler = next((self.handlers[c] for c in type(exc).__mro__ if c in self.handlers), None)
            if handler is None or started:
                raise
            response = await handler(Request(scope, receive), exc)
            await response(scope, receive, send)


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
    # Declares the operation for OpenAPI; `route` answers it. Same body through the same function.
    body, content_type = await resolution_answer(request.app, request.scope["query_string"])
    return Response(content=body, media_type=content_type.decode().partition(";")[0])
