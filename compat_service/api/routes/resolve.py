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
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

from fastapi import APIRouter, Request, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from compat_service.api.deps import current_matrix, state_of
from compat_service.api.routes.evidence import evidence_for_resolve
from compat_service.domain.errors import Cause, ErrorBody, InvalidRequestError
from compat_service.domain.resolver.request import PARAMETERS, Parameter, ResolveRequest
from compat_service.domain.resolver.resolution import resolution_to_json
from compat_service.domain.resolver.resolution_schema import ResolutionBody
from compat_service.domain.resolver.stages import name_the_gpu
from compat_service.domain.resolver.stages import resolve as resolve_request

router = APIRouter(tags=["resolve"])

#: longest query string whose parse is memoized (every parameter at its limit fits well within it)
MAX_MEMO_QUERY = 1024

#: how many times a repeatable parameter (``with``) may be given
MAX_REPEATS = 8


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


_OPENAPI = {"parameters": [_openapi_parameter(p) for p in PARAMETERS]}


def query_strings(raw: bytes) -> dict[str, str | list[str] | None]:
    """The resolve parameters of a raw query string; an over-long value is an InvalidRequestError.

    Parsed as Starlette's ``QueryParams`` parses it, with the same call (latin-1 bytes, ``+`` and %-escapes as
    UTF-8 with replacement, blank values kept), the last of a repeated name winning, without the multidict;
    a repeatable parameter (``with=vllm&with=flash-attn``) keeps every value, in order."""
    given: dict[str, str] = {}
    repeated: dict[str, list[str]] = {}
    for key, text in parse_qsl(raw.decode("latin-1"), keep_blank_values=True):
        given[key] = text
        repeated.setdefault(key, []).append(text)
    values: dict[str, str | list[str] | None] = {}
    for p in PARAMETERS:
        name, limit = p.name, p.max_length
        value = given.get(name)
        if p.repeatable and len(repeated.get(name, ())) > 1:
            if len(repeated[name]) > MAX_REPEATS:
                raise InvalidRequestError(
                    f"invalid query parameter {name}: given more than {MAX_REPEATS} times",
                    hint=f"name at most {MAX_REPEATS} packages",
                    causes=[Cause(constraint=f"at most {MAX_REPEATS} values", origin=f"query parameter {name}")],
                )
            longest = max(repeated[name], key=len)
            if len(longest) > limit:
                value = longest  # refused below, like a single over-long value
            else:
                values[name] = list(repeated[name])
                continue
        if value is not None and len(value) > limit:
            raise InvalidRequestError(
                f"invalid query parameter {name}: longer than {limit} characters",
                hint="fix the named parameter; /docs describes every parameter",
                causes=[Cause(constraint=f"at most {limit} characters", origin=f"query parameter {name}")],
            )
        values[name] = value
    return values


def parse_request(raw: bytes) -> ResolveRequest:
    """The query string as the domain's ResolveRequest (the one parser the CLI uses too)."""
    return ResolveRequest.from_query(query_strings(raw))


async def resolution_body(app: Any, raw: bytes) -> bytes:
    """The JSON body answering the query string ``raw``; raises the AccelenvError that refuses it."""
    cache = state_of(app).resolve_cache
    # Only plausible query strings are memoized: a flood of huge ones must not fill memory.
    if len(raw) <= MAX_MEMO_QUERY:
        parsed = cache.requests.get_or_compute(raw, lambda: parse_request(raw))
    else:
        parsed = parse_request(raw)
    matrix = await current_matrix(app)
    # gpu= names a GPU: its architecture (matrix data) selects the evidence too
    gpu_arch = name_the_gpu(parsed, matrix.matrix)[0].gpu_arch if parsed.gpu else parsed.gpu_arch
    # Evidence from the stored probe reports (routes/evidence.py); its stamp keeps the cache current.
    evidence, stamp = evidence_for_resolve(app, gpu_arch, require_verified=parsed.require_verified)
    if parsed.stack:  # with=vllm: the stack's releases, then torch for them (compat_service/domain/stacks)
        from compat_service.domain.stacks.catalog import load_catalog
        from compat_service.domain.stacks.resolve import resolve_stack

        catalog = load_catalog()
        return cache.body(
            (matrix.content_hash, stamp, parsed),
            lambda: resolution_to_json(resolve_stack(parsed, matrix.matrix, evidence, catalog)),
        )
    return cache.body(
        (matrix.content_hash, stamp, parsed),
        lambda: resolution_to_json(resolve_request(parsed, matrix.matrix, evidence)),
    )


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
