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


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    url = f"sqlite:///{tmp_path_factory.mktemp('bounds34') / 'accelenv.sqlite3'}"
    env = {"ACCELENV_BODY_READ_TIMEOUT_S": str(BODY_TIMEOUT_S), "ACCELENV_HEADER_READ_TIMEOUT_S": "2"}
    with live_server(url, workers=1, env=env) as running:
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
