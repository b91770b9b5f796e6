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
(api/strict_query.py). The domain's errors speak the CLI's flags; on their way out (and into the cache) they
are reworded with the API's names (``strict_query.in_api_words``), and the endpoint writes them itself
(`error_bytes`, the handler's exact body) — only the failure path pays for that.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

import orjson
from fastapi import APIRouter, Request, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from compat_service.api.deps import current_matrix, state_of
from compat_service.api.middleware.observability import current_request_id
from compat_service.api.routes.evidence import evidence_for_resolve
from compat_service.domain.errors import AccelenvError, Cause, ErrorBody, InvalidRequestError
from compat_service.domain.resolver.install_formats import render
from compat_service.domain.resolver.request import PARAMETERS, ResolveRequest
from compat_service.domain.resolver.resolution import resolution_to_json
from compat_service.domain.resolver.resolution_schema import ResolutionBody
from compat_service.domain.resolver.stages import name_the_gpu
from compat_service.domain.resolver.stages import resolve as resolve_request

router = APIRouter(tags=["resolve"])

#: longest query string whose parse is memoized (every parameter at its limit fits well within it)
MAX_MEMO_QUERY = 1024

#: format= -> the install_formats renderer (json: the Resolution object itself)
FORMATS = {f: f for f in ("json", "text", "pip", "requirements", "uv", "conda", "docker")}
FORMATS["dockerfile"] = "docker"
#: every query parameter the route takes
KNOWN = frozenset([*(p.name for p in PARAMETERS), "format"])

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


#: how many times a repeatable parameter (``with``) may be given
MAX_REPEATS = 8


def query_strings(raw: bytes) -> dict[str, str | list[str] | None]:
    """The resolve parameters of a raw query string; an over-long value is an InvalidRequestError.

    Parsed as Starlette's ``QueryParams`` parses it, with the same call (latin-1 bytes, ``+`` and %-escapes as
    UTF-8 with replacement, blank values kept), the last of a repeated name winning, without the multidict;
    a repeatable parameter (``with=vllm&with=flash-attn``) keeps every value, in order. Names the route does
    not take are ignored here (`read_query` refuses them)."""
    return _values(*_given(raw))


def read_query(raw: bytes) -> tuple[ResolveRequest, str]:
    """The request and the answer's format of a raw query string; an unknown parameter, a malformed value
    or format is an InvalidRequestError in the API's words."""
    try:
        given, repeated = _given(raw)
        for name in given:
            if name not in KNOWN:
                from compat_service.api.strict_query import unknown_parameter

                raise unknown_parameter(name, KNOWN, "/v1/resolve")
        fmt_text = given.get("format")
        fmt = FORMATS.get((fmt_text or "json").strip().lower())
        if fmt is None:
            raise InvalidRequestError(
                f"format {fmt_text!r} is not an answer format",
                hint=f"use one of: {', '.join(sorted(FORMATS))}",
                causes=[Cause(constraint=f"format {fmt_text}", origin="request")],
            )
        return ResolveRequest.from_query(_values(given, repeated)), fmt
    except InvalidRequestError as err:
        from compat_service.api.strict_query import in_api_words

        raise in_api_words(err) from None


def _given(raw: bytes) -> tuple[dict[str, str], dict[str, list[str]]]:
    given: dict[str, str] = {}
    repeated: dict[str, list[str]] = {}
    for key, text in parse_qsl(raw.decode("latin-1"), keep_blank_values=True):
        given[key] = text
        repeated.setdefault(key, []).append(text)
    return given, repeated


def _values(given: dict[str, str], repeated: dict[str, list[str]]) -> dict[str, str | list[str] | None]:
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
    return read_query(raw)[0]


async def resolution_body(app: Any, raw: bytes) -> bytes:
    """The JSON body answering the query string ``raw``; raises the AccelenvError that refuses it."""
    return (await resolution_answer(app, raw))[0]


async def resolution_answer(app: Any, raw: bytes) -> tuple[bytes, bytes]:
    """The body and its content type answering the query string ``raw``; raises the AccelenvError that
    refuses it (in the API's words)."""
    cache = state_of(app).resolve_cache
    # Only plausible query strings are memoized: a flood of huge ones must not fill memory.
    if len(raw) <= MAX_MEMO_QUERY:
        parsed, fmt = cache.requests.get_or_compute(raw, lambda: read_query(raw))
    else:
        parsed, fmt = read_query(raw)
    matrix = await current_matrix(app)
    # gpu= names a GPU: its architecture (matrix data) selects the evidence too
    gpu_arch = name_the_gpu(parsed, matrix.matrix)[0].gpu_arch if parsed.gpu else parsed.gpu_arch
    # Evidence from the stored probe reports (routes/evidence.py); its stamp keeps the cache current.
    evidence, stamp = evidence_for_resolve(app, gpu_arch, require_verified=parsed.require_verified)
    if parsed.stack:  # with=vllm: the stack's releases, then torch for them (compat_service/domain/stacks)
        from compat_service.domain.stacks.catalog import load_catalog
        from compat_service.domain.stacks.resolve import resolve_stack

        catalog = load_catalog()

        def answer() -> Any:
            return resolve_stack(parsed, matrix.matrix, evidence, catalog)
    else:

        def answer() -> Any:
            return resolve_request(parsed, matrix.matrix, evidence)

    if fmt == "json":
        return cache.body(
            (matrix.content_hash, stamp, parsed), lambda: _in_api_words(lambda: resolution_to_json(answer()))
        ), _JSON
    text = cache.bodies.get_or_compute(
        (matrix.content_hash, stamp, parsed, fmt), lambda: _in_api_words(lambda: render(answer(), fmt).encode())
    )
    return text, _TEXT


def _in_api_words(compute: Any) -> Any:
    """``compute()``; its AccelenvError reworded with the API's parameter names (before it is cached)."""
    try:
        return compute()
    except AccelenvError as err:
        from compat_service.api.strict_query import in_api_words

        raise in_api_words(err) from None


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


_JSON = b"application/json"
_TEXT = b"text/plain; charset=utf-8"


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
            status, body, content_type = err.http_status, error_bytes(err), _JSON
        headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
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
