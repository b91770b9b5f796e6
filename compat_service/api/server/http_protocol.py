"""uvicorn's HTTP protocols, answering a request they cannot parse in the API's JSON error shape.

uvicorn refuses a malformed request (a garbage request line, a header with a space in its name, two
Content-Length headers, a broken chunk) itself, before the app sees it, with a plain-text 400. These
subclasses answer with ``{code: "bad-request", message, hint, causes, alternatives}`` instead, as every
other error of the API does. `accelenv serve` (and the tests' live server) run with
``--http compat_service.api.server.http_protocol:JsonErrorsHttpToolsProtocol`` (httptools is a dependency; the h11
variant is for installs without it).
"""

from __future__ import annotations

import json

from uvicorn.protocols.http.h11_impl import H11Protocol

from compat_service.domain.errors import ErrorBody

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # pragma: no cover - httptools is a dependency
    HttpToolsProtocol = None  # type: ignore[assignment,misc]


def _bad_request(msg: str) -> bytes:
    body = ErrorBody(
        code="bad-request",
        message=f"the HTTP request is malformed: {msg}",
        hint="check the request line, the header names and Content-Length / Transfer-Encoding",
    )
    return json.dumps(body.model_dump(mode="json")).encode()


def _response(default_headers: list[tuple[bytes, bytes]], msg: str) -> bytes:
    body = _bad_request(msg)
    lines = [b"HTTP/1.1 400 Bad Request\r\n"]
    lines += [name + b": " + value + b"\r\n" for name, value in default_headers]
    lines += [
        b"content-type: application/json\r\n",
        b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
        b"connection: close\r\n\r\n",
        body,
    ]
    return b"".join(lines)


class JsonErrorsH11Protocol(H11Protocol):
    def send_400_response(self, msg: str) -> None:
        self.transport.write(_response(self.server_state.default_headers, msg))
        self.transport.close()


if HttpToolsProtocol is not None:

    class JsonErrorsHttpToolsProtocol(HttpToolsProtocol):
        def send_400_response(self, msg: str) -> None:
            self.transport.write(_response(self.server_state.default_headers, msg))
            self.transport.close()

#: what `accelenv serve` passes as uvicorn's ``http``
HTTP_PROTOCOL = (
    "compat_service.api.server.http_protocol:JsonErrorsHttpToolsProtocol"
    if HttpToolsProtocol is not None
    else "compat_service.api.server.http_protocol:JsonErrorsH11Protocol"
)
