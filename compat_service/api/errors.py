"""The one error handler: every failure leaves the API as ``{code, message, hint, causes, alternatives}``.

- AccelenvError → its ``http_status`` and its own body (the same codes the CLI prints; the classes and
  their statuses are the registry of compat_service/domain/errors.py).
- Request validation → 422 ``invalid-request`` with one cause per bad parameter, naming it.
- Unknown route / wrong method → 404 / 405 in the same shape.
- A client that disconnects mid-upload → logged at info (no traceback: it is not a bug).
- The database failing after start-up (connection lost, table gone) → 503 ``database-not-ready``.
- Anything else is a bug → 500 ``internal-error`` (logged once, with its traceback and request id, by
  ``api/middleware/observability.py``; the client gets no details).

Every error body also carries ``request_id``, the id of the request in the access log and ``X-Request-ID``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from compat_service.api.middleware.observability import current_request_id
from compat_service.domain.errors import (
    AccelenvError,
    BadRequestError,
    BodyTooLargeError,
    Cause,
    ClientDisconnectedError,
    DatabaseNotReadyError,
    HttpError,
    InternalError,
    InvalidRequestError,
    MethodNotAllowedError,
    NotFoundError,
    error_json,
)

log = logging.getLogger("accelenv.api")

#: the framework's refusals (Starlette's HTTPException) by status: the class and what it says
_HTTP_ERRORS: dict[int, tuple[type[AccelenvError], str, str]] = {
    400: (BadRequestError, "the request is malformed", "check the request syntax"),
    404: (NotFoundError, "no such endpoint", "see /docs for the endpoints of this API"),
    405: (MethodNotAllowedError, "this method is not allowed here", "see /docs for the allowed methods"),
    413: (BodyTooLargeError, "the request body is too large", "send a smaller body"),
}


def error_response(err: AccelenvError, headers: Mapping[str, str] | None = None) -> Response:
    """``err`` as the API answers it: its status, and the one error body (`error_json`) with this request's id."""
    body = error_json(err, current_request_id())
    return Response(body, status_code=err.http_status, headers=headers, media_type="application/json")


def _location(loc: tuple[object, ...] | list[object]) -> str:
    """'query parameter limit', 'body field environment.os': where a validation error sits."""
    parts = [str(p) for p in loc]
    if not parts or parts[0] not in ("query", "path", "header", "body", "cookie"):
        return ".".join(parts)
    where, rest = parts[0], ".".join(parts[1:])
    if where == "body":
        return f"body field {rest}" if rest else "request body"
    return f"{where} parameter {rest}"


def _safe_input(value: object) -> str | None:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


async def _accelenv_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, AccelenvError)
    headers = {"WWW-Authenticate": "Bearer"} if exc.http_status == 401 else None
    return error_response(exc, headers)


async def _validation_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    causes = [
        Cause(
            constraint=str(err.get("msg", "invalid")),
            origin=_location(err.get("loc", ())),
            detail=f"got {_safe_input(err['input'])}" if "input" in err else None,
        )
        for err in exc.errors()
    ]
    names = ", ".join(dict.fromkeys(c.origin for c in causes))
    err = InvalidRequestError(
        f"invalid {names}", hint="fix the named parameters; /docs describes every parameter", causes=causes
    )
    return error_response(err)


async def _http_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    cls, message, hint = _HTTP_ERRORS.get(exc.status_code, (HttpError, str(exc.detail), None))
    err = cls(message, hint=hint)
    err.http_status = exc.status_code
    return error_response(err, exc.headers)


async def _database_error(request: Request, exc: Exception) -> Response:
    # The database went away or lost its schema after start-up: say so, as /readyz would.
    log.warning("database error on %s %s: %s", request.method, request.url.path, exc)
    return error_response(database_not_ready())


def database_not_ready() -> DatabaseNotReadyError:
    """What the API says when the database went away or lost its schema after start-up."""
    return DatabaseNotReadyError(
        "the service cannot use its database right now",
        hint="see GET /readyz for which check fails; an operator may need `accelenv db upgrade`",
    )


async def _client_gone(request: Request, exc: Exception) -> Response:
    # The client hung up while sending its body: nobody will read an answer, and it is not a bug.
    log.info("client disconnected during %s %s", request.method, request.url.path)
    return error_response(ClientDisconnectedError("the client closed the connection mid-request"))


async def unhandled_error_response(_scope: object, _exc: BaseException) -> Response:
    """The 500 answer to a bug (the observability middleware has logged it, once)."""
    err = InternalError(
        "the service failed unexpectedly",
        hint="this is a bug in accelenv; please report it with the request that caused it",
    )
    return error_response(err)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(AccelenvError, _accelenv_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(OperationalError, _database_error)
    app.add_exception_handler(ClientDisconnect, _client_gone)
    # Exception itself is not registered: Starlette would answer and then re-raise it to the ASGI server,
    # which logs it a second time; ObservabilityMiddleware answers and logs it once.
