"""ETag and Cache-Control for every GET: one mechanism, hashing the response body.

A 200 GET answer gets ``ETag: "<sha256 prefix of the body>"`` and, unless the route set its own,
``Cache-Control: public, max-age=<Settings.cache_max_age_s>``. A request whose ``If-None-Match`` names that
tag gets 304 with no body. Hashing the body (rather than tagging by matrix version) keeps the tag right for
every resource, including evidence that changes between matrix loads.
"""

from __future__ import annotations

import hashlib

from starlette.types import ASGIApp, Message, Receive, Scope, Send


def _matches(if_none_match: str, etag: str) -> bool:
    tags = {t.strip().removeprefix("W/") for t in if_none_match.split(",")}
    return "*" in tags or etag in tags


class HttpCacheMiddleware:
    def __init__(self, app: ASGIApp, max_age_s: int) -> None:
        self.app = app
        self.cache_control = f"public, max-age={max_age_s}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        chunks: list[bytes] = []

        async def buffering_send(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body" or start is None:
                await send(message)
                return
            if message.get("more_body", False):
                chunks.append(message.get("body", b""))
                return
            body = b"".join([*chunks, message.get("body", b"")]) if chunks else message.get("body", b"")
            if start["status"] == 200:
                start = self._tagged(scope, start, body)
                if start["status"] == 304:
                    body = b""
            await send(start)
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, buffering_send)

    def _tagged(self, scope: Scope, start: Message, body: bytes) -> Message:
        """A 200's start with its ETag and Cache-Control, or the 304 that answers a matching If-None-Match."""
        etag = b'"' + hashlib.sha256(body).hexdigest()[:32].encode() + b'"'
        # Raw header list, one pass, not MutableHeaders: this runs on every GET.
        headers = []
        has_cache_control = False
        for k, v in start["headers"]:
            if k == b"etag":
                continue
            has_cache_control = has_cache_control or k == b"cache-control"
            headers.append((k, v))
        headers.append((b"etag", etag))
        if not has_cache_control:
            headers.append((b"cache-control", self.cache_control))
        for k, v in scope["headers"]:
            if k == b"if-none-match":
                if _matches(v.decode("latin-1"), etag.decode()):
                    kept = [(k, v) for k, v in headers if k not in (b"content-length", b"content-type")]
                    return {"type": "http.response.start", "status": 304, "headers": kept}
                break
        start["headers"] = headers
        return start
