"""Per-client quotas: requests and request-body bytes per minute, by client address and by token
(Settings.quota_*; 429 `quota-exceeded` with `Retry-After` past them; `accelenv_quota_refusals_total`).

Each worker counts on its own, in fixed one-minute windows: a client spread over N workers gets up to N
times the quota, which bounds what one client costs each worker. The counters sit in a bounded TTL map
(cachetools), so a flood of distinct addresses or tokens costs a bounded amount of memory: past
``MAX_CLIENTS`` the least recently seen windows are forgotten (a forgotten client starts a fresh window).
A token is counted by the hash of its secret, whether or not it is valid; body bytes are counted as they
arrive (a declared length refused unread costs nothing) and checked when the client's next request starts.
"""

from __future__ import annotations

import hashlib
import math
import time
from typing import Any

from cachetools import TTLCache
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from compat_service.api.errors import error_response
from compat_service.domain.errors import QuotaExceededError

#: clients (addresses plus tokens) whose windows a worker keeps at once
MAX_CLIENTS = 65_536
WINDOW_S = 60.0


class QuotaMiddleware:
    def __init__(
        self, app: ASGIApp, *, requests_per_min: int, token_requests_per_min: int, bytes_per_min: int,
        refusals: Any = None,
    ) -> None:
        self.app = app
        self.requests_per_min = requests_per_min
        self.token_requests_per_min = token_requests_per_min
        self.bytes_per_min = bytes_per_min
        #: prometheus counter with a ``kind`` label (requests, token-requests, bytes), or None
        self.refusals = refusals
        # key -> [window start, requests, bytes]
        self._windows: TTLCache[str, list[float]] = TTLCache(MAX_CLIENTS, ttl=WINDOW_S, timer=time.monotonic)
        self.enabled = bool(requests_per_min or token_requests_per_min or bytes_per_min)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.enabled or scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        window, refused = self._count(scope, time.monotonic())
        if refused is None:
            if window is None or not self.bytes_per_min or scope["method"] in ("GET", "HEAD"):
                await self.app(scope, receive, send)
                return
            counted = window

            async def counting_receive() -> Message:
                message = await receive()
                if message["type"] == "http.request":
                    counted[2] += len(message.get("body", b""))
                return message

            await self.app(scope, counting_receive, send)
            return
        kind, retry_after = refused
        if self.refusals is not None:
            self.refusals.labels(kind).inc()
        await error_response(_exceeded(kind, self, retry_after), {"Retry-After": str(retry_after)})(
            scope, receive, send
        )

    def _count(self, scope: Scope, now: float) -> tuple[list[float] | None, tuple[str, int] | None]:
        """Count the request in its address's and its token's windows: (the address's window, or None
        without a client address; (kind, retry after) when a limit is passed, else None)."""
        client = scope.get("client")
        bearer = _bearer(scope["headers"])
        refused = None
        window = None
        if client is not None:
            window = self._window(f"a:{client[0]}", now)
            refused = self._check(window, now, self.requests_per_min, "requests")
        if refused is None and bearer and self.token_requests_per_min:
            key = "t:" + hashlib.sha256(bearer).hexdigest()[:32]
            refused = self._check(self._window(key, now), now, self.token_requests_per_min, "token-requests")
        return window, refused

    def _window(self, key: str, now: float) -> list[float]:
        """This client's window (a new one when its minute is over), with this request counted."""
        window = self._windows.get(key)
        if window is None or now - window[0] >= WINDOW_S:
            window = [now, 0.0, 0.0]
        window[1] += 1
        self._windows[key] = window
        return window

    def _check(self, window: list[float], now: float, max_requests: int, kind: str) -> tuple[str, int] | None:
        retry_after = max(1, math.ceil(window[0] + WINDOW_S - now))
        if max_requests and window[1] > max_requests:
            return kind, retry_after
        if kind == "requests" and self.bytes_per_min and window[2] > self.bytes_per_min:
            return "bytes", retry_after
        return None


def _bearer(headers: list[tuple[bytes, bytes]]) -> bytes | None:
    """The token of the (last) ``Authorization: Bearer`` header; None without one."""
    bearer = None
    for name, value in headers:
        if name == b"authorization" and value[:7].lower() == b"bearer ":
            bearer = value[7:].strip()
    return bearer


def _exceeded(kind: str, quota: QuotaMiddleware, retry_after: int) -> QuotaExceededError:
    limits = {
        "requests": (f"{quota.requests_per_min} requests a minute from one address", "ACCELENV_QUOTA_REQUESTS_PER_MIN"),
        "token-requests": (f"{quota.token_requests_per_min} requests a minute with one token",
                           "ACCELENV_QUOTA_TOKEN_REQUESTS_PER_MIN"),
        "bytes": (f"{quota.bytes_per_min} bytes of request bodies a minute from one address",
                  "ACCELENV_QUOTA_BYTES_PER_MIN"),
    }
    what, setting = limits[kind]
    return QuotaExceededError(
        f"this client used its quota of {what}; try again in {retry_after} s",
        hint=f"wait for Retry-After seconds, or send less; the quota is the service setting {setting}",
    )
