"""Refuse a request whose path or query holds a NUL character (``%00``) before any route sees it.

Query values go into SQL parameters, and PostgreSQL text cannot hold U+0000: the driver raises, which would
surface as a 500. No valid request of this API contains one, so it is refused up front, the same on every
route and database, as a 422 naming the problem.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from compat_service.api.errors import error_response
from compat_service.domain.errors import InvalidRequestError


def _nul_error() -> InvalidRequestError:
    return InvalidRequestError(
        "the request's path or query string holds a NUL character (%00)",
        hint="remove the %00 from the URL; no parameter of this API contains one",
    )


class NulGuardMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (b"%00" in scope["query_string"] or "\x00" in scope["path"]):
            await error_response(_nul_error())(scope, receive, send)
            return
        await self.app(scope, receive, send)
