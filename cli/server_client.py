"""`accelenv resolve --server URL`: ask the service's GET /v1/resolve instead of the bundled matrix.

An unreachable server is `ServerUnreachableError` (exit 6). An error body ``{code, message, hint, causes,
alternatives}`` becomes the same error class the local resolver would raise, so it renders and exits the
same way. Tests inject an ``httpx.Client`` (Starlette's TestClient is one) or point at a loopback server.
"""

from __future__ import annotations

from typing import Any

import httpx

from compat_service.domain.errors import (
    AccelenvError,
    AuthError,
    ErrorBody,
    InvalidRequestError,
    NotFoundError,
    ServerUnreachableError,
)
from compat_service.domain.resolver.resolution import Resolution, resolution_from_json
from compat_service.domain.resolver.errors import ERRORS_BY_CODE

_BY_STATUS: dict[int, type[AccelenvError]] = {401: AuthError, 404: NotFoundError, 422: InvalidRequestError}


def resolve_remote(
    server: str, query: dict[str, str], *, client: httpx.Client | None = None, timeout_s: float = 10.0
) -> Resolution:
    url = server.rstrip("/") + "/v1/resolve"
    try:
        if client is not None:
            response = client.get(url, params=query)
        else:
            with httpx.Client(timeout=timeout_s) as own:
                response = own.get(url, params=query)
    except (httpx.TransportError, httpx.InvalidURL) as exc:
        raise ServerUnreachableError(
            f"cannot reach the accelenv server at {server}",
            hint="check --server / ACCELENV_SERVER, or drop it to resolve with the bundled matrix",
        ) from exc
    body = _json(response)
    if response.is_success and isinstance(body, dict):
        try:
            return resolution_from_json(body)
        except (KeyError, TypeError) as exc:
            raise ServerUnreachableError(
                f"the server at {server} answered, but not with a resolution (missing {exc})",
                hint="is --server pointing at an accelenv service of a compatible version?",
            ) from None
    raise _error_from(response, body, server)


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _error_from(response: httpx.Response, body: Any, server: str) -> AccelenvError:
    try:
        parsed = ErrorBody.model_validate(body)
    except ValueError:
        return ServerUnreachableError(
            f"the server at {server} answered HTTP {response.status_code} without an accelenv error body",
            hint="is --server pointing at an accelenv service?",
        )
    cls = ERRORS_BY_CODE.get(parsed.code) or _BY_STATUS.get(response.status_code, AccelenvError)
    err = cls(parsed.message, hint=parsed.hint, causes=parsed.causes, alternatives=parsed.alternatives)
    err.code = parsed.code  # keep the server's exact code even where the class is a generic one
    return err
