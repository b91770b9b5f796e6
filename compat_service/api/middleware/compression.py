"""gzip for the large bodies: the CI matrix and the matrix views (``/v1/ci-matrix``, ``/v1/matrix``).

Starlette's `GZipMiddleware` does the work (Accept-Encoding negotiation, ``Vary: Accept-Encoding``, bodies
under ``minimum_size`` left as they are); it wraps only the paths in `COMPRESSED_PREFIXES`, so the small,
hot answers (``/v1/resolve``) pay nothing for it.
"""

from __future__ import annotations

from starlette.middleware.gzip import GZipMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

#: the paths whose answers run to hundreds of kilobytes
COMPRESSED_PREFIXES = ("/v1/ci-matrix", "/v1/matrix")
#: bodies smaller than this are sent as they are (gzip's header and a round trip cost more than they save)
MINIMUM_SIZE = 4096


class LargeBodyCompression:
    def __init__(self, app: ASGIApp, minimum_size: int = MINIMUM_SIZE) -> None:
        self.app = app
        self.gzip = GZipMiddleware(app, minimum_size=minimum_size)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(COMPRESSED_PREFIXES):
            await self.gzip(scope, receive, send)
            return
        await self.app(scope, receive, send)
