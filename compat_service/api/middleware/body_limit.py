"""Request body size limit (Settings.max_body_bytes → 413), enforced on the bytes actually received, and
a time limit on receiving it (Settings.body_read_timeout_s → 408).

A declared Content-Length over the limit is refused before the app runs; a chunked body or one whose
Content-Length lies is counted as it arrives and cut off at the limit, so nothing past it is buffered. A
body that has not fully arrived within the time limit (a stalled or deliberately slow client) gets 408 and
the connection is closed.
"""

from __future__ import annotations

import asyncio
import time

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from compat_service.api.errors import error_response
from compat_service.domain.errors import BadRequestError, BodyTooLargeError, RequestTimeoutError


def _too_large(limit: int, batch: bool = False) -> BodyTooLargeError:
    if batch:
        hint = "send fewer reports per batch; the limit is the service setting ACCELENV_MAX_BATCH_BODY_BYTES"
    else:
        hint = "send a smaller body; the limit is the service setting ACCELENV_MAX_BODY_BYTES"
    return BodyTooLargeError(f"the request body is larger than this service accepts ({limit} bytes)", hint=hint)


class _BodyTimeout(Exception):
    pass


def _too_slow(timeout_s: float) -> RequestTimeoutError:
    return RequestTimeoutError(
        f"the request body did not arrive within {timeout_s:g} s",
        hint="send the whole body at once; the limit is the service setting ACCELENV_BODY_READ_TIMEOUT_S",
    )


class BodyLimitMiddleware:
    def __init__(
        self, app: ASGIApp, max_body_bytes: int, limits_by_path: dict[str, int] | None = None,
        read_timeout_s: float = 30.0,
    ) -> None:
        self.app = app
        self.read_timeout_s = read_timeout_s
        self.default_limit = max_body_bytes
        #: exact paths with a limit of their own (the report batch route)
        self.limits_by_path = limits_by_path or {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # GET routes never read a body, so there is nothing to count (and GET is the hot path).
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        limit = self.limits_by_path.get(scope["path"], self.default_limit)
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None:
            if not declared.isdigit():
                bad = BadRequestError(
                    "the Content-Length header is not a number",
                    hint="send a valid Content-Length or use chunked transfer encoding",
                )
                await error_response(bad)(scope, receive, send)
                return
            if int(declared) > limit:
                too_large = _too_large(limit, scope["path"] in self.limits_by_path)
                await error_response(too_large)(scope, receive, send)
                return
        received = 0
        started = False
        deadline = time.monotonic() + self.read_timeout_s

        async def counting_receive() -> Message:
            nonlocal received
            try:
                message = await asyncio.wait_for(receive(), max(deadline - time.monotonic(), 0.001))
            except TimeoutError:
                raise _BodyTimeout from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    # FastAPI re-raises HTTPException from body reading; the error handler renders it.
                    raise HTTPException(413)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _BodyTimeout:
            if started:
                raise
            # the rest of the body may still come: close the connection rather than read it
            await error_response(_too_slow(self.read_timeout_s), {"Connection": "close"})(scope, receive, send)
        except HTTPException as exc:
            if exc.status_code != 413 or started:
                raise
            too_large = _too_large(limit, scope["path"] in self.limits_by_path)
            await error_response(too_large)(scope, receive, send)
