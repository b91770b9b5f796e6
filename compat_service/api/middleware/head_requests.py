"""HEAD on every GET route: the GET's status and headers, no body (RFC 9110 §9.3.2).

FastAPI's routes answer only the methods they declare, so HEAD was a 405 everywhere (Starlette's own
`Route` adds HEAD to a GET route; FastAPI's `APIRoute` does not). This middleware runs a HEAD request as
the GET it stands for — the same routing, query checks, ETag and compression — and sends the GET's
``http.response.start`` (Content-Length included) with an empty body. The OpenAPI document keeps listing
GET only; a HEAD to a path without a GET answers as that GET would (405 with ``Allow``).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class HeadRequestsMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        finished = False

        async def headers_only(message: Message) -> None:
            nonlocal finished
            if message["type"] == "http.response.body":
                if finished or message.get("more_body", False):
                    return
                finished = True
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)
