"""The HTTP layer under hostile clients (issue 14, item 11), through a real uvicorn on loopback: a request
uvicorn cannot parse gets the JSON error shape, a body that does not arrive in time gets 408 and its
connection closed, and a client that hangs up mid-upload leaves no traceback in the log."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.evidence.live_server import LiveServer, live_server

pytestmark = pytest.mark.timeout(120)
TIMEOUT_S = 1


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    url = f"sqlite:///{tmp_path_factory.mktemp('edges') / 'accelenv.sqlite3'}"
    with live_server(url, workers=1, env={"ACCELENV_BODY_READ_TIMEOUT_S": str(TIMEOUT_S)}) as running:
        yield running


def _connect(server: LiveServer) -> socket.socket:
    host, port = server.base_url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    while True:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize(
    "raw",
    [
        b"GARBAGE\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n",
        b"POST /v1/reports HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"POST /v1/reports HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nabcde",
    ],
    ids=["request-line", "header-name", "chunk-size", "two-lengths"],
)
def test_unparseable_requests_get_the_json_error_shape(server: LiveServer, raw: bytes) -> None:
    with _connect(server) as sock:
        sock.sendall(raw)
        answer = _read_all(sock)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), answer
    assert b"content-type: application/json" in head.lower()
    error = json.loads(body)
    assert error["code"] == "bad-request" and error["hint"], error


def test_a_stalled_body_gets_408_and_its_connection_closed(server: LiveServer) -> None:
    socks = []
    for _ in range(30):
        sock = _connect(server)
        sock.sendall(
            b"POST /v1/reports HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + server.token.encode()
            + b"\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
        )
        socks.append(sock)
    started = time.monotonic()
    for sock in socks:
        with sock:
            answer = _read_all(sock)  # ends when the server closes the connection
            assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
            assert json.loads(answer.partition(b"\r\n\r\n")[2])["code"] == "request-timeout"
    assert time.monotonic() - started < TIMEOUT_S + 8
    assert httpx.get(server.base_url + "/healthz").status_code == 200


def test_a_client_that_hangs_up_mid_upload_leaves_no_traceback(server: LiveServer) -> None:
    for _ in range(5):
        with _connect(server) as sock:
            sock.sendall(
                b"POST /v1/reports HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + server.token.encode()
                + b"\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n" + b'{"a": ' * 50
            )
    time.sleep(0.5)
    assert httpx.get(server.base_url + "/healthz").status_code == 200
    output = server.output()
    assert "unhandled error" not in output and "Traceback" not in output, output[-3000:]
