"""Every error code the service sends is a class in the registry (compat_service/domain/errors.py), whichever
layer refuses the request (uvicorn's protocol, a middleware, the router, a route, the error handler): each is
sent by a real uvicorn on loopback, and read back through the CLI's client as the registry's class, with its
exit code. Each body is the one writer's (``error_json``): the fields in order, compact JSON."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import httpx
import pytest

from cli.service_client import ServiceClient
from compat_service.domain.errors import ERRORS, BadRequestError, error_json
from tests.evidence.live_server import LiveServer, live_server

pytestmark = pytest.mark.timeout(180)
HEADER_LIMIT = 8_192
TOKEN = "@TOKEN@"


def _get(target: str, extra: str = "") -> bytes:
    return f"GET {target} HTTP/1.1\r\nHost: x\r\n{extra}Connection: close\r\n\r\n".encode()


def _post_report(headers: str, body: bytes = b"") -> bytes:
    head = f"POST /v1/reports HTTP/1.1\r\nHost: x\r\n{headers}Content-Type: application/json\r\nConnection: close\r\n"
    return head.encode() + b"\r\n" + body


#: code -> a request that gets it (TOKEN stands for the server's report token)
REQUESTS: dict[str, bytes] = {
    "bad-request": b"GARBAGE\r\n\r\n",
    "token-in-query": _get("/v1/matrix?token=acv_x"),
    "method-not-allowed": b"DELETE /v1/resolve HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    "request-timeout": b"GET /healthz HTTP/1.1\r\nHost: x\r\n",  # the headers never end
    "body-too-large": _post_report(f"Authorization: Bearer {TOKEN}\r\nContent-Length: 999999999\r\n"),
    "headers-too-large": _get("/healthz", "X-Filler: " + "a" * 2 * HEADER_LIMIT + "\r\n"),
    "not-found": _get("/v1/nothing"),
    "invalid-request": _get("/v1/matrix?torch=two"),
    "unauthorized": _post_report("Content-Length: 2\r\n", b"{}"),
    "report-invalid": _post_report(f"Authorization: Bearer {TOKEN}\r\nContent-Length: 2\r\n", b"{}"),
    "torch-not-found": _get("/v1/resolve?torch=1.0"),
    "python-unsupported": _get("/v1/resolve?torch=2.3&python=3.13"),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    url = f"sqlite:///{tmp_path_factory.mktemp('codes') / 'accelenv.sqlite3'}"
    env = {"ACCELENV_MAX_HEADER_BYTES": str(HEADER_LIMIT), "ACCELENV_HEADER_READ_TIMEOUT_S": "0.5"}
    with live_server(url, workers=1, load_matrix=True, env=env) as running:
        yield running


def _exchange(server: LiveServer, raw: bytes) -> httpx.Response:
    host, port = server.base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(raw.replace(TOKEN.encode(), server.token.encode()))
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = [(name.strip(), value.strip()) for name, _, value in (line.partition(":") for line in lines)]
    return httpx.Response(int(status_line.split()[1]), headers=headers, content=body)


@pytest.mark.parametrize("code", sorted(REQUESTS))
def test_each_code_the_service_sends_reads_back_as_its_class(server: LiveServer, code: str) -> None:
    response = _exchange(server, REQUESTS[code])
    cls = ERRORS[code]
    assert response.status_code == cls.http_status, response.content[:300]
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert list(body) == ["code", "message", "hint", "causes", "alternatives", "request_id"]
    assert response.content == json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    err = ServiceClient(server.base_url).error_from(response)
    assert type(err) is cls and err.code == code and err.exit_code == cls.exit_code
    assert err.message == body["message"] and err.hint == body["hint"]


def test_every_refusal_of_the_http_layer_is_sent_or_named() -> None:
    """The HTTP layer's codes (the subclasses of BadRequestError) are each sent above, but two: a client that
    hung up reads no answer, and ``http-error`` is the framework's any-other-status; ``too-many-connections``
    and ``quota-exceeded`` need a server with a small cap or quota (tests/security/test_request_bounds.py
    sends them)."""
    layer = {code for code, cls in ERRORS.items() if issubclass(cls, BadRequestError)}
    assert layer - set(REQUESTS) == {"client-disconnected", "http-error", "too-many-connections", "quota-exceeded"}


def test_the_one_writer_keeps_the_code_message_and_request_id() -> None:
    err = ERRORS["client-disconnected"]("the client closed the connection mid-request")
    body = json.loads(error_json(err, "abc"))
    assert (body["code"], body["request_id"], body["hint"]) == ("client-disconnected", "abc", None)
