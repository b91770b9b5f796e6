"""Issue 34 through a real uvicorn on loopback: what one client can make a worker parse, hold or wait for.
A batch is counted before it is parsed; a body must arrive within its deadline, also after an early answer."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import pytest

from tests.evidence.live_server import LiveServer, live_server

pytestmark = pytest.mark.timeout(180)
BODY_TIMEOUT_S = 2.0
MAX_CONNECTIONS = 24


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    url = f"sqlite:///{tmp_path_factory.mktemp('bounds34') / 'accelenv.sqlite3'}"
    env = {
        "ACCELENV_BODY_READ_TIMEOUT_S": str(BODY_TIMEOUT_S),
        "ACCELENV_HEADER_READ_TIMEOUT_S": "2",
        "ACCELENV_MAX_CONNECTIONS": str(MAX_CONNECTIONS),
    }
    with live_server(url, workers=1, load_matrix=True, env=env) as running:
        yield running


def _connect(server: LiveServer, timeout: float = 10) -> socket.socket:
    host, port = server.base_url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=timeout)


def _post(
    server: LiveServer, path: str, body: bytes, content_type: str = "application/json"
) -> tuple[int, dict, float]:
    """Status, JSON body and seconds from the last byte sent to the answer, on a fresh connection."""
    with _connect(server) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {server.token}\r\n"
            f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
        )
        sent = time.monotonic()
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        head, _, rest = data.partition(b"\r\n\r\n")
        length = int(next(line.split(b":")[1] for line in head.lower().split(b"\r\n")
                          if line.startswith(b"content-length:")))
        while len(rest) < length:
            rest += sock.recv(65536)
        return int(head.split()[1]), json.loads(rest), time.monotonic() - sent


@pytest.mark.parametrize(
    ("body", "content_type"),
    [(b"[" + b"{}," * 699_999 + b"{}]", "application/json"), (b"x\n" * 1_000_000, "application/x-ndjson")],
    ids=["json-array-of-empty-objects", "ndjson-of-one-character-lines"],
)
def test_a_2_mb_batch_of_tiny_items_is_refused_413_within_a_second(
    server: LiveServer, body: bytes, content_type: str
) -> None:
    status, error, waited = _post(server, "/v1/reports/batch", body, content_type)
    assert (status, error["code"]) == (413, "report-too-large"), error
    assert "at most 100 per batch" in error["message"]
    assert waited < 1.0, f"answered after {waited:.2f} s: the items were parsed before being counted"


def test_a_report_with_thousands_of_unknown_keys_names_twenty_of_them(server: LiveServer) -> None:
    body = b"{" + b",".join(b'"k%d": 1' % i for i in range(50_000)) + b"}"
    status, error, _ = _post(server, "/v1/reports", body)
    assert (status, error["code"]) == (422, "report-invalid"), error
    assert "keys the probe report schema v1 does not know" in error["message"]
    assert len(error["causes"]) == 20 and all(c["origin"].startswith("report.k") for c in error["causes"])


def test_an_item_larger_than_a_report_may_be_refuses_the_batch(server: LiveServer) -> None:
    huge = b'{"report_id": "' + b"a" * 1_100_000 + b'"}'
    status, error, _ = _post(server, "/v1/reports/batch", b"[" + huge + b"]")
    assert (status, error["code"]) == (413, "report-too-large"), error
    assert "item 0" in error["message"] and "ACCELENV_MAX_BODY_BYTES" in error["hint"]


def _closed_within(sock: socket.socket, seconds: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and when it closed (s from now)."""
    sock.settimeout(seconds)
    started, data = time.monotonic(), b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return data, time.monotonic() - started


def _rss_mb(server: LiveServer) -> float:
    assert server.process is not None  # one worker: uvicorn serves in the process it started
    with open(f"/proc/{server.process.pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


def test_a_slow_body_is_cut_off_at_the_body_deadline(server: LiveServer) -> None:
    """A valid token, a declared body, one byte a second: 408 and closed at the deadline, not held."""
    with _connect(server) as sock:
        sock.sendall(
            f"POST /v1/reports HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {server.token}\r\n"
            "Content-Type: application/json\r\nContent-Length: 900000\r\n\r\n".encode()
        )
        started = time.monotonic()
        sock.settimeout(0.5)
        answer = b""
        while time.monotonic() - started < BODY_TIMEOUT_S + 5:
            try:
                sock.sendall(b" ")
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                break
            if not chunk:
                break
            answer += chunk
        closed_after = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408"), answer[:300]
    assert b"request-timeout" in answer
    assert closed_after < BODY_TIMEOUT_S + 2.5, f"closed only after {closed_after:.1f} s"


def test_an_early_answer_closes_the_connection_instead_of_draining_the_body(server: LiveServer) -> None:
    with _connect(server) as sock:
        sock.sendall(
            b"POST /v1/reports/batch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000000000\r\n\r\n["
        )
        answer, closed_after = _closed_within(sock, 5)
    assert answer.startswith(b"HTTP/1.1 413") or answer.startswith(b"HTTP/1.1 401"), answer[:300]
    assert closed_after < 1.0, f"the connection stayed open {closed_after:.1f} s after the answer"


def test_a_connection_past_the_cap_gets_503_and_the_rest_are_served(server: LiveServer) -> None:
    held = [_connect(server) for _ in range(MAX_CONNECTIONS)]
    try:
        time.sleep(0.3)
        with _connect(server) as extra:
            answer, _ = _closed_within(extra, 5)
        status, _, body = answer.partition(b"\r\n\r\n")
        assert status.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in status.lower(), answer[:300]
        assert json.loads(body)["code"] == "too-many-connections"
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.3)
    with _connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")


def test_pipelined_requests_are_read_only_as_fast_as_they_are_answered(server: LiveServer) -> None:
    """8 MB of pipelined GETs from a client that reads nothing: the worker parses a few ahead and stops
    reading; its memory stays put, and a second client is served meanwhile."""
    before = _rss_mb(server)
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    pipelined = request * (8_000_000 // len(request))
    with _connect(server) as sock:
        sock.settimeout(3)
        sent = 0
        try:
            while sent < len(pipelined):
                sent += sock.send(pipelined[sent:sent + 1_000_000])
        except TimeoutError:
            pass  # the server stopped reading: what flow control is for
        with _connect(server) as other:
            other.sendall(request)
            assert other.recv(65536).startswith(b"HTTP/1.1 200")
        grown = _rss_mb(server) - before
    assert sent < len(pipelined), "the server read 8 MB of requests it had not answered"
    assert grown < 30, f"the worker grew {grown:.0f} MB"


def test_a_client_hanging_up_on_pipelined_answers_is_no_server_error(server: LiveServer) -> None:
    for path in ("/v1/ci-matrix", "/v1/matrix?limit=1000", "/matrix") * 5:
        with _connect(server) as sock:
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode() * 3)
            time.sleep(0.5)
            # RST: the answers being written meet a closed socket
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, (1).to_bytes(4, "little") * 2)
    time.sleep(1)
    output = server.output()
    assert "Traceback" not in output and "Exception in ASGI application" not in output, output[-2000:]
