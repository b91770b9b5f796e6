"""What the service says about itself: request ids, the access log, metrics per request, one log line per error.

`ObservabilityMiddleware` (pure ASGI, the outermost of ours) gives every request an id (a sane incoming
``X-Request-ID`` is kept, otherwise a new one), answers with it in ``X-Request-ID``, and when the request
ends records its route, status and duration in the metrics (`compat_service.api.metrics`) and, unless
``Settings.access_log`` is off, logs one access-log line (`log_request`, logger ``accelenv.access``). The id
sits in a context variable for the request's lifetime, so the error handler puts it into every error body
and every ``accelenv.*`` log record carries it. An exception no handler took is logged here once, with its id
and traceback, and answered with the ordinary 500 body; it does not travel on to the ASGI server, which would
log it a second time.

Log lines go to stderr as plain text or one JSON object per line (``ACCELENV_LOG_FORMAT``), every line through
the same formatter and the one handler (`TurnBatchingHandler`: at once on a quiet service, a turn of the
event loop's lines in one write under load).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import json
import logging
import math
import os
import re
import sys
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, TextIO

from compat_service.api.middleware.security_headers import (
    REDACTED_PATH,
    REDACTED_QUERY,
    token_in_path,
    token_in_query,
    with_security_headers,
)
from compat_service.domain.errors import TokenInQueryError, error_json

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: the id of the request being served in this context; None outside a request
request_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("accelenv_request_id", default=None)

service_log = logging.getLogger("accelenv.service")
error_log = logging.getLogger("accelenv.api")
access_log = logging.getLogger("accelenv.access")

_INCOMING_ID = re.compile(rb"^[A-Za-z0-9._:-]{1,64}$")
#: longest path + query string an access-log line holds
MAX_LOGGED_TARGET = 512
_FIELDS = ("method", "path", "status", "duration_ms", "request_id")


#: request ids made per read of the system's random source
_IDS_PER_READ = 512
#: ids read and not yet handed out (each 8 random bytes as 16 hex digits)
_unused_ids: list[str] = []
# a forked worker must not hand out its parent's ids
os.register_at_fork(after_in_child=_unused_ids.clear)


def new_request_id() -> str:
    """16 hex digits of os.urandom, read for 512 ids at a time: a system call per request cost a request more
    than its own few microseconds (the caches it empties). ``list.pop`` hands each id out once, threads or not."""
    try:
        return _unused_ids.pop()
    except IndexError:
        block = os.urandom(8 * _IDS_PER_READ)
        _unused_ids.extend(block[i : i + 8].hex() for i in range(0, len(block), 8))
        return _unused_ids.pop()


def current_request_id() -> str | None:
    return request_id_var.get()


class _RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = request_id_var.get()
        return True


@functools.lru_cache(maxsize=4)
def _second(second: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))


def _stamp(created: float) -> str:
    """``2026-12-01T10:00:00.123Z`` (UTC, milliseconds) for a record's time; the second's text is kept."""
    fraction, whole = math.modf(created)
    micro = round(fraction * 1e6)  # as datetime.fromtimestamp rounds
    second = int(whole) + micro // 1_000_000
    return f"{_second(second)}.{micro % 1_000_000 // 1000:03d}Z"


class PlainFormatter(logging.Formatter):
    """``2026-12-01T10:00:00.123Z INFO accelenv.access GET /v1/resolve 200 0.41ms request_id=…``."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"{_stamp(record.created)} {record.levelname} {record.name} {record.getMessage()}"
        rid = getattr(record, "request_id", None)
        if rid and "request_id=" not in line:
            line += f" request_id={rid}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the request fields, the traceback."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": _stamp(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in (*_FIELDS, "event", "url", "database", "matrix_version", "matrix_cells", "pid"):
            value = getattr(record, name, None)
            if value is not None:
                out[name] = value
        if record.exc_info:
            out["traceback"] = self.formatException(record.exc_info)
        return json.dumps(out, separators=(",", ":"))


def configure_logging(log_format: str) -> None:
    """Give the ``accelenv`` loggers one stderr handler in ``log_format`` (plain|json); idempotent per format.

    The ASGI server configures only its own loggers, so without this our INFO lines would be dropped.
    """
    root = logging.getLogger("accelenv")
    for handler in list(root.handlers):
        if getattr(handler, "_accelenv", None) == log_format:
            return
        if getattr(handler, "_accelenv", None) is not None:
            root.removeHandler(handler)
    handler = TurnBatchingHandler()
    handler._accelenv = log_format  # type: ignore[attr-defined]
    handler.setFormatter(JsonFormatter() if log_format == "json" else PlainFormatter())
    handler.addFilter(_RequestIdFilter())
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    # our handler writes the lines; the root logger's (pytest's, an embedding app's) still see them
    root.propagate = True


def flush_log_lines() -> None:
    """Write the lines the ``accelenv`` handlers keep for the end of this turn (when the app stops)."""
    for handler in logging.getLogger("accelenv").handlers:
        handler.flush()


def route_of(scope: Scope) -> str:
    """The matched route's template (/v1/torch/{version}), so metrics stay bounded; 'unmatched' for 404s."""
    route = scope.get("route")
    if route is None:
        return "unmatched"
    path = getattr(route, "path", None)
    return path if isinstance(path, str) and path else "unmatched"


class ObservabilityMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        metrics: Any,
        access_log: bool,
        on_unhandled: Callable[[Scope, BaseException], Awaitable[Any]],
    ) -> None:
        self.app = app
        self.metrics = metrics
        self.access_log = access_log
        self.on_unhandled = on_unhandled

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        rid = _incoming_id(scope) or new_request_id()
        scope.setdefault("state", {})["request_id"] = rid
        token = request_id_var.set(rid)
        status = 500
        started = False
        observe_body = self.metrics.wants_body(scope)
        chunks: list[bytes] = []
        header = (b"x-request-id", rid.encode())

        async def send_wrapper(message: Message) -> None:
            nonlocal status, started
            if message["type"] == "http.response.start":
                status = message["status"]
                started = True
                message["headers"] = with_security_headers(status, [*message.get("headers", ()), header], scope)
            elif observe_body and message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
            await send(message)

        try:
            if token_in_query(scope.get("query_string", b"")):
                scope["query_string"] = REDACTED_QUERY  # never logged, never seen by a route
                await _token_in_query_response(scope, receive, send_wrapper)
            else:
                await self.app(scope, receive, send_wrapper)
        except Exception as exc:
            error_log.error("unhandled error on %s %s", scope.get("method"), scope.get("path"), exc_info=exc)
            status = 500
            if not started:
                response = await self.on_unhandled(scope, exc)
                await response(scope, receive, send_wrapper)
        finally:
            duration = time.perf_counter() - start
            route = route_of(scope)
            self.metrics.observe(scope.get("method", ""), route, status, duration, b"".join(chunks) if chunks else b"")
            if self.access_log:
                log_request(scope, status, duration, rid)
            request_id_var.reset(token)


async def _token_in_query_response(scope: Scope, receive: Receive, send: Send) -> None:
    err = TokenInQueryError(
        "a token was sent in the URL's query string; it was not read, and it is not logged",
        hint="send the token in the Authorization header (`Authorization: Bearer <token>`); a URL is kept "
        "in logs and histories, so treat this token as exposed and ask an admin for a new one",
    )
    body = error_json(err, scope.get("state", {}).get("request_id"))
    await send(
        {
            "type": "http.response.start",
            "status": err.http_status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _incoming_id(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"x-request-id":
            return value.decode() if _INCOMING_ID.match(value) else None
    return None


def log_request(scope: Scope, status: int, duration: float, rid: str) -> None:
    """The request's access-log line, ``GET /v1/resolve?torch=2.3 200 0.41ms``, through the ``accelenv.access``
    logger (its fields as the record's attributes, which the JSON format lists)."""
    if not access_log.isEnabledFor(logging.INFO):
        return
    method = scope.get("method", "")
    raw = scope.get("raw_path") or scope.get("path", "").encode()
    if token_in_path(raw):
        raw = REDACTED_PATH
    query = scope.get("query_string", b"")
    target = (raw + (b"?" + query if query else b"")).decode("latin-1")
    if len(target) > MAX_LOGGED_TARGET:  # a hostile query string must not flood the log
        target = target[:MAX_LOGGED_TARGET] + f"...(+{len(target) - MAX_LOGGED_TARGET} chars)"
    if not target.isprintable():
        target = target.encode("unicode_escape").decode("ascii")
    ms = f"{duration * 1000:.2f}"
    # made and handled as Logger.info would, less its search of the stack for the caller (a line names no
    # source line); the fields (`_FIELDS`, none a LogRecord attribute) are set on the record as ``extra=``
    # would set them, without building the dict ``extra`` copies from
    args = (method, target, status, ms)
    record = access_log.makeRecord(access_log.name, logging.INFO, "", 0, "%s %s %s %sms", args, None)
    record.method = method
    record.path = target
    record.status = status
    record.duration_ms = float(ms)
    record.request_id = rid
    access_log.handle(record)


#: a line within this many seconds of the previous write waits for the end of the event loop's turn, and goes
#: out in one write with the other lines of that turn
BATCH_WINDOW_S = 0.001


class TurnBatchingHandler(logging.Handler):
    """The service's log handler: each record formatted by the handler's formatter (`PlainFormatter` or
    `JsonFormatter`, as every ``accelenv.*`` line), written to ``stream`` (by default whatever ``sys.stderr``
    is when the line is written, as `logging.lastResort` does).

    A line is written at once when the previous write is more than ``BATCH_WINDOW_S`` old (a quiet service,
    tests); under load the lines of one turn of the event loop are written together at its end (`flush`,
    ``loop.call_soon``): a write per request costs a busy worker a share of its requests
    (benchmarks/bench_service.py --no-service-log). Every record still gets its line, within the turn, in
    order; off an event loop a line is written at once."""

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__()
        self.stream = stream
        #: lines waiting for this turn's flush (a flush is scheduled while this is not empty)
        self._pending: list[str] = []
        self._flush_loop: asyncio.AbstractEventLoop | None = None
        self._written_at = float("-inf")

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record) + "\n"
        except Exception:
            self.handleError(record)
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on an event loop: nothing would flush it
            self._write(line)
            return
        if self._pending:
            if loop is self._flush_loop:  # this turn's flush is scheduled
                self._pending.append(line)
                return
            self.flush()  # another loop's (an app served from two threads): its lines first
        now = time.monotonic()
        if now - self._written_at >= BATCH_WINDOW_S:
            self._written_at = now
            self._write(line)
            return
        self._pending.append(line)
        self._flush_loop = loop
        loop.call_soon(self.flush)

    def flush(self) -> None:
        """Write the lines waiting for the end of this turn (also called when the app stops)."""
        with self.lock if self.lock is not None else contextlib.nullcontext():
            pending, self._pending = self._pending, []
            if pending:
                self._written_at = time.monotonic()
                self._write("".join(pending))

    def _write(self, text: str) -> None:
        try:
            stream = self.stream if self.stream is not None else sys.stderr
            stream.write(text)
            stream.flush()
        except (OSError, ValueError):  # stderr closed or full: serving matters more than the log
            pass
