"""uvicorn's HTTP protocols, answering a request they cannot parse in the API's JSON error shape, and
bounding what a client may send before its headers are complete.

uvicorn refuses a malformed request (a garbage request line, a header with a space in its name, two
Content-Length headers, a broken chunk) itself, before the app sees it, with a plain-text 400. These
subclasses answer with the API's one error body instead (`BadRequestError`, written by
``compat_service.domain.errors.error_json``, ``request_id`` null: the request never got one), as every other
error of the API does. `accelenv serve` (and the tests' live server) run with
``--http compat_service.api.server.http_protocol:JsonErrorsHttpToolsProtocol``. httptools is a dependency and
the only protocol: uvicorn's h11 fallback parses every pipelined request as it arrives and has no body
deadline, so a second, less bounded way to serve is not offered.

Two limits apply before a request reaches the app (neither httptools nor uvicorn has them; a 100 MiB
header was otherwise read whole, and a client sending one header byte every few seconds kept its connection
for ever, since every byte re-arms uvicorn's keep-alive timer):

- ``Settings.max_header_bytes`` (``ACCELENV_MAX_HEADER_BYTES``): the request line and headers together;
  more gets ``431`` and the connection is closed. Each read is checked before the parser sees it
  (`_head_too_large`): a whole oversized head arriving in one read was otherwise accepted.
- ``Settings.header_read_timeout_s`` (``ACCELENV_HEADER_READ_TIMEOUT_S``): a request's headers must be
  complete within this many seconds of the connection opening or the previous response ending; otherwise
  ``408`` and the connection is closed. Bytes arriving do not extend it.

The limits are read from the environment once per worker process (`ConnectionLimits`, the part of
`Settings` the protocol needs), since uvicorn builds the protocol, not the app factory.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from compat_service.config import ConnectionLimits
from compat_service.domain.errors import (
    AccelenvError,
    BadRequestError,
    HeadersTooLargeError,
    RequestTimeoutError,
    TooManyConnectionsError,
    error_json,
)

_REASONS = {
    400: b"Bad Request", 408: b"Request Timeout", 431: b"Request Header Fields Too Large",
    503: b"Service Unavailable",
}
#: requests of one connection parsed ahead of its answers (pipelining); past it the connection's bytes wait
#: unparsed (and unread: reading is paused) until an answer is written
PIPELINE_MAX = 4
#: bytes handed to the parser at a time while requests are queued, so at most this many bytes of small
#: pipelined requests are parsed past PIPELINE_MAX
PIPELINE_SLICE = 1024
#: seconds of a body's start during which its rate is not checked (ConnectionLimits.body_min_rate_bps)
BODY_RATE_GRACE_S = 5.0
#: how often a body in flight is checked against its deadline and minimum rate
BODY_CHECK_S = 1.0


_hangup_log = logging.getLogger("accelenv.service")


def _client_text(client: tuple[str, int] | None) -> str:
    return f"{client[0]}:{client[1]}" if client else "(unknown)"


@functools.cache
def connection_limits() -> ConnectionLimits:
    """This worker's limits (from ACCELENV_* variables; read once)."""
    return ConnectionLimits()


def _bad_request(msg: str) -> BadRequestError:
    return BadRequestError(
        f"the HTTP request is malformed: {msg}",
        hint="check the request line, the header names and Content-Length / Transfer-Encoding",
    )


def _headers_too_large(limit: int) -> HeadersTooLargeError:
    return HeadersTooLargeError(
        f"the request line and headers are larger than this service accepts ({limit} bytes)",
        hint="send fewer or shorter headers; the limit is the service setting ACCELENV_MAX_HEADER_BYTES",
    )


def _headers_too_slow(timeout_s: float) -> RequestTimeoutError:
    return RequestTimeoutError(
        f"the request headers did not arrive within {timeout_s:g} s",
        hint="send the whole request at once; the limit is the service setting ACCELENV_HEADER_READ_TIMEOUT_S",
    )


def _body_too_slow(limits: ConnectionLimits) -> RequestTimeoutError:
    return RequestTimeoutError(
        f"the request body did not arrive within {limits.body_read_timeout_s:g} s or came slower "
        f"than {limits.body_min_rate_bps} bytes/s",
        hint="send the whole body at once; the limits are the service settings ACCELENV_BODY_READ_TIMEOUT_S "
        "and ACCELENV_BODY_MIN_RATE_BPS",
    )


def _too_many_connections(limit: int) -> TooManyConnectionsError:
    return TooManyConnectionsError(
        f"this service worker holds its most open connections ({limit}); try again in a moment",
        hint="reuse one keep-alive connection rather than opening many; the limit is the service setting "
        "ACCELENV_MAX_CONNECTIONS",
    )


def _response(default_headers: list[tuple[bytes, bytes]], error: AccelenvError) -> bytes:
    body = error_json(error)
    lines = [b"HTTP/1.1 %d %s\r\n" % (error.http_status, _REASONS[error.http_status])]
    lines += [name + b": " + value + b"\r\n" for name, value in default_headers]
    lines += [
        b"content-type: application/json\r\n",
        b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
        *([b"retry-after: 1\r\n"] if error.http_status == 503 else []),
        b"connection: close\r\n\r\n",
        body,
    ]
    return b"".join(lines)


def _head_too_large(received: int, tail: bytes, data: bytes, limit: int) -> bool:
    """Whether a request head (request line and headers) goes past ``limit`` bytes, given ``received``
    bytes of it so far (ending in ``tail``, up to 3 bytes) and ``data`` just read. Checked before the parser
    sees ``data``: a whole oversized head can arrive in one read, and the parser would accept it."""
    if received + len(data) <= limit:
        return False
    joined = tail + data
    ends = [at + len(mark) for mark in (b"\r\n\r\n", b"\n\n") if (at := joined.find(mark)) >= 0]
    if not ends:
        return True
    return received - len(tail) + min(ends) > limit


class _HeaderDeadline:
    """The header read-time limit (armed when the connection opens and when a
    response ends, disarmed when a request's headers are complete) and the JSON 400 for unparseable HTTP."""

    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    server_state: Any
    _header_timer: asyncio.TimerHandle | None = None

    def _arm_header_deadline(self) -> None:
        self._disarm_header_deadline()
        self._header_timer = self.loop.call_later(
            connection_limits().header_read_timeout_s, self._header_deadline_passed
        )

    def _disarm_header_deadline(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        if not self.transport.is_closing():
            self._arm_header_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_deadline()
        super().connection_lost(exc)  # type: ignore[misc]

    def send_400_response(self, msg: str) -> None:
        self.transport.write(_response(self.server_state.default_headers, _bad_request(msg)))
        self.transport.close()

    def _awaiting_headers(self) -> bool:
        raise NotImplementedError

    def _refuse_if_full(self) -> bool:
        """Answer 503 (and close) a connection past the worker's ConnectionLimits.max_connections."""
        cap = connection_limits().max_connections
        if not cap or len(self.connections) <= cap:  # type: ignore[attr-defined]
            return False
        error = _too_many_connections(cap)
        self.transport.write(_response(self.server_state.default_headers, error))
        self.transport.close()
        return True

    def _header_deadline_passed(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or not self._awaiting_headers():
            return
        error = _headers_too_slow(connection_limits().header_read_timeout_s)
        self.transport.write(_response(self.server_state.default_headers, error))
        self.transport.close()


class JsonErrorsHttpToolsProtocol(_HeaderDeadline, HttpToolsProtocol):
    #: bytes received since the last request's headers were complete (the next request line and headers)
    _header_bytes = 0
    #: the last (up to) 3 of those bytes: a head's end may span two reads
    _header_tail = b""
    _in_headers = True
    #: when the current request's headers ended while its body has not (loop time), and its bytes so far
    _body_since: float | None = None
    _body_bytes = 0
    _body_timer: asyncio.TimerHandle | None = None
    #: bytes read but not yet parsed: the connection has PIPELINE_MAX requests waiting for answers
    _held = b""
    #: the request being answered (uvicorn keeps only the newest one parsed)
    _running: Any = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not self._refuse_if_full():
            self._arm_header_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_body_deadline()
        # nothing queued on a closed connection outlives it: not the parsed requests, not the bytes
        self.pipeline.clear()
        self._held = b""
        running = self._running
        if running is not None and not running.response_complete:
            # uvicorn tells only the newest request of the connection; the one being answered (an older
            # one, when requests were pipelined) would write to the closed transport: a traceback and a 500
            _hangup_log.info(
                "client %s hung up before its answer to %s %s",
                _client_text(self.client), running.scope["method"], running.scope["path"],
            )
            self._mark_disconnected(running)
        self._running = None
        super().connection_lost(exc)

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        self._running = cycle
        super()._start_asgi_task(cycle, app)

    @staticmethod
    def _mark_disconnected(cycle: Any) -> None:
        cycle.disconnected = True
        cycle.message_event.set()

    def data_received(self, data: bytes) -> None:
        if self._held:  # a read the transport had under way when reading was paused
            self._held += data
            self.flow.pause_reading()
            return
        self._feed(data)

    def _feed(self, data: bytes) -> None:
        """Parse ``data`` a slice at a time; once PIPELINE_MAX requests wait for answers, keep the rest
        unparsed and stop reading until an answer is written (on_response_complete feeds it on)."""
        at = 0
        while at < len(data) and not self.transport.is_closing():
            if len(self.pipeline) >= PIPELINE_MAX:
                self._held = data[at:]
                self.flow.pause_reading()
                return
            step = 16 * PIPELINE_SLICE if self._body_since is not None else PIPELINE_SLICE
            self._parse(data[at:at + step] if at or len(data) > step else data)
            at += step
        if self._body_since is not None and self._body_timer is None and not self.transport.is_closing():
            self._body_timer = self.loop.call_later(BODY_CHECK_S, self._check_body)

    def _parse(self, data: bytes) -> None:
        limit = connection_limits().max_header_bytes
        if self._in_headers and _head_too_large(self._header_bytes, self._header_tail, data, limit):
            # httptools keeps every header byte until the headers end, and accepts a whole oversized
            # head read at once: stop it before it parses
            if not self.transport.is_closing():
                error = _headers_too_large(limit)
                self.transport.write(_response(self.server_state.default_headers, error))
                self.transport.close()
            return
        if self._in_headers:
            self._header_bytes += len(data)
            self._header_tail = (self._header_tail + data)[-3:]
        super().data_received(data)

    def on_headers_complete(self) -> None:
        self._in_headers = False
        self._header_bytes = 0
        self._header_tail = b""
        self._disarm_header_deadline()
        # cleared by on_message_complete, in the same read for a request without a body
        self._body_since = self.loop.time()
        self._body_bytes = 0
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        self._body_bytes += len(body)
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._in_headers = True
        self._disarm_body_deadline()
        super().on_message_complete()

    def on_response_complete(self) -> None:
        if self._body_since is not None and not self.pipeline and not self.transport.is_closing():
            # answered before its body arrived (401, 413): close rather than read the rest
            self.transport.close()
        super().on_response_complete()
        if self._held and not self.transport.is_closing():
            held, self._held = self._held, b""
            self._feed(held)

    def _disarm_body_deadline(self) -> None:
        self._body_since = None
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _check_body(self) -> None:
        """A body in flight past its deadline, or slower than the minimum rate after its grace time:
        408 (unless an answer has started) and close."""
        self._body_timer = None
        if self._body_since is None or self.transport.is_closing():
            return
        limits = connection_limits()
        elapsed = self.loop.time() - self._body_since
        # not while the body waits on this side (requests queued ahead of it, or the app not reading yet)
        waiting_here = bool(self._held) or self.flow.read_paused
        too_slow = limits.body_min_rate_bps and elapsed > BODY_RATE_GRACE_S and not waiting_here and (
            self._body_bytes < limits.body_min_rate_bps * (elapsed - BODY_RATE_GRACE_S)
        )
        if elapsed <= limits.body_read_timeout_s and not too_slow:
            self._body_timer = self.loop.call_later(BODY_CHECK_S, self._check_body)
            return
        cycle = self.cycle
        if cycle is not None and not cycle.response_started and self._running is cycle:
            self.transport.write(_response(self.server_state.default_headers, _body_too_slow(limits)))
        # the app (if it waits for the body, or answers) sees the client gone, not a closed transport
        for seen in {id(c): c for c in (cycle, self._running) if c is not None}.values():
            self._mark_disconnected(seen)
        self._body_since = None
        self.transport.close()

    def _awaiting_headers(self) -> bool:
        return self._in_headers and (self.cycle is None or self.cycle.response_complete)


#: what `accelenv serve` passes as uvicorn's ``http``
HTTP_PROTOCOL = "compat_service.api.server.http_protocol:JsonErrorsHttpToolsProtocol"
