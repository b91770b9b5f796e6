"""Issue 24 through a real uvicorn on loopback: what a client can make a worker read or hold before it is
refused (headers, bodies without a valid token, headers trickling in), and the headers, redirects and
self-withdrawal rules of the HTTP surface."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from compat_service.db.engine import make_engine
from compat_service.db.matrix.tables import ApiTokenCreate
from compat_service.db.tokens import create_token
from tests.evidence.live_server import LiveServer, live_server

pytestmark = pytest.mark.timeout(180)
HEADER_LIMIT = 16_384
HEADER_TIMEOUT_S = 1.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    url = f"sqlite:///{tmp_path_factory.mktemp('bounds') / 'accelenv.sqlite3'}"
    env = {
        "ACCELENV_MAX_HEADER_BYTES": str(HEADER_LIMIT),
        "ACCELENV_HEADER_READ_TIMEOUT_S": str(HEADER_TIMEOUT_S),
        # long enough that a server waiting for the body would be seen waiting
        "ACCELENV_BODY_READ_TIMEOUT_S": "60",
    }
    with live_server(url, workers=1, load_matrix=True, env=env) as running:
        yield running


def _connect(server: LiveServer, timeout: float = 10) -> socket.socket:
    host, port = server.base_url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=timeout)


def _read_until_closed(sock: socket.socket) -> bytes:
    chunks = []
    while True:
        try:
            chunk = sock.recv(65536)
        except (TimeoutError, ConnectionResetError):
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _read_response(sock: socket.socket) -> bytes:
    """One response (head and its Content-Length of body), without waiting for the connection to close."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.lower().split(b"\r\n") if line.startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def _status_and_error(answer: bytes) -> tuple[int, dict]:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 "), answer[:200]
    status = int(head.split()[1])
    return status, json.loads(body) if body else {}


def _assert_header_refused(answer: bytes, server: LiveServer) -> None:
    """A 431 that names the limit, and the server still serves the next client."""
    status, error = _status_and_error(answer)
    assert status == 431 and error["code"] == "headers-too-large", answer[:300]
    assert str(HEADER_LIMIT) in error["message"]
    assert httpx.get(server.base_url + "/healthz").status_code == 200


@pytest.mark.parametrize("path,size", [("/v1/reports", 900_000), ("/v1/reports/batch", 15_000_000)])
@pytest.mark.parametrize("token", [None, "acv_not-a-real-token"], ids=["no-token", "unknown-token"])
def test_a_submission_without_a_valid_token_is_refused_before_its_body(
    server: LiveServer, path: str, size: int, token: str | None
) -> None:
    """The headers announce a body within the size limit; none of it is sent: the 401 must come anyway."""
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    with _connect(server, timeout=5) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\n"
            f"Content-Length: {size}\r\n\r\n".encode()
        )
        started = time.monotonic()
        first = _read_response(sock)
        waited = time.monotonic() - started
    status, error = _status_and_error(first)
    assert status == 401 and error["code"] == "unauthorized", first[:300]
    assert waited < 4, f"answered only after {waited:.1f} s: the server waited for the body"


def test_an_oversized_header_gets_431_and_its_connection_closed(server: LiveServer) -> None:
    with _connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        sent = 0
        try:
            for _ in range(64):  # up to 4 MiB, in 64 KiB header lines; the server stops reading long before
                sock.sendall(b"X-Filler: " + b"a" * 65_536 + b"\r\n")
                sent += 65_546
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = _read_until_closed(sock)
    _assert_header_refused(answer, server)
    assert sent < 4 * 1024 * 1024, "the server read every byte of the header"


def test_a_whole_oversized_header_block_in_one_write_gets_431(server: LiveServer) -> None:
    """The complete request (line, over 3 x the limit of headers, blank line) in one write: each read is
    checked before the parser sees it."""
    request = (b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
               + b"".join(b"X-Filler-%d: %s\r\n" % (n, b"a" * 4000) for n in range(16)) + b"\r\n")
    assert len(request) > 3 * HEADER_LIMIT
    with _connect(server) as sock:
        try:
            sock.sendall(request)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = _read_until_closed(sock)
    _assert_header_refused(answer, server)


def test_two_pipelined_heads_each_within_the_limit_are_served(server: LiveServer) -> None:
    """The check counts one head at a time: two heads in one write, together over the limit and each within
    it, are both answered."""
    one = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Filler: " + b"a" * (HEADER_LIMIT // 2) + b"\r\n"
    with _connect(server) as sock:
        # the second closes the connection
        sock.sendall(one + b"\r\n" + one + b"Connection: close\r\n\r\n")
        answers = _read_until_closed(sock)
    assert answers.count(b"HTTP/1.1 200 ") == 2 and b"431" not in answers.split(b"\r\n", 1)[0], answers[:300]


def test_headers_within_the_limit_are_served(server: LiveServer) -> None:
    answer = httpx.get(server.base_url + "/healthz", headers={"X-Filler": "a" * (HEADER_LIMIT // 2)})
    assert answer.status_code == 200


def test_headers_trickling_in_are_cut_off_at_the_header_time_limit(server: LiveServer) -> None:
    """One byte every 0.2 s keeps uvicorn's keep-alive timer from ever firing; the header limit does not
    move: 408 and the connection closed, a few tenths of a second after the limit."""
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200
    socks = [_connect(server) for _ in range(20)]
    started = time.monotonic()
    closed_at: dict[int, float] = {}
    answers: dict[int, bytes] = {}
    for position in range(len(request)):
        if len(closed_at) == len(socks) or time.monotonic() - started > 10 * HEADER_TIMEOUT_S:
            break
        for number, sock in enumerate(socks):
            if number in closed_at:
                continue
            try:
                sock.sendall(request[position:position + 1])
            except (BrokenPipeError, ConnectionResetError):
                closed_at[number] = time.monotonic() - started
                answers[number] = b""
                continue
            sock.settimeout(0.01)
            try:
                data = sock.recv(65536)
            except TimeoutError:
                continue
            closed_at[number] = time.monotonic() - started
            answers[number] = data + _read_until_closed(sock)
        time.sleep(0.2)
    for sock in socks:
        sock.close()
    assert len(closed_at) == len(socks), f"{len(socks) - len(closed_at)} slow connections still open"
    assert max(closed_at.values()) < 4 * HEADER_TIMEOUT_S + 1, closed_at
    with_answer = [a for a in answers.values() if a]
    assert with_answer, "no connection was told why it was closed"
    for answer in with_answer:
        status, error = _status_and_error(answer)
        assert status == 408 and error["code"] == "request-timeout", answer[:300]
    assert httpx.get(server.base_url + "/healthz").status_code == 200


def test_a_keep_alive_connection_serves_several_requests(server: LiveServer) -> None:
    """The header deadline re-arms per request and never cuts a request being answered."""
    with httpx.Client(base_url=server.base_url) as client:
        for _ in range(3):
            assert client.get("/healthz").status_code == 200
            time.sleep(HEADER_TIMEOUT_S / 2)


def test_an_admin_token_cannot_withdraw_itself(server: LiveServer) -> None:
    engine = make_engine(server.database_url)
    try:
        admin, secret = create_token(engine, ApiTokenCreate(scope="admin", note="self"))
    finally:
        engine.dispose()
    headers = {"Authorization": f"Bearer {secret}"}
    refused = httpx.post(f"{server.base_url}/v1/tokens/{admin.id}/withdraw", headers=headers)
    assert refused.status_code == 409 and refused.json()["code"] == "conflict", refused.text
    # still valid: it did not revoke itself
    assert httpx.get(f"{server.base_url}/v1/tokens/{admin.id + 999}/withdraw", headers=headers).status_code == 405
    again = httpx.post(f"{server.base_url}/v1/tokens/{admin.id + 999}/withdraw", headers=headers)
    assert again.status_code == 404, again.text


HTML_PAGES = ["/", "/matrix", "/torch/2.13.0", "/torch/9.9.9", "/reports/00000000-0000-0000-0000-000000000000",
              "/docs", "/redoc"]


@pytest.mark.parametrize("path", HTML_PAGES)
def test_every_html_page_sends_the_security_headers(server: LiveServer, path: str) -> None:
    # a page's first render builds its caches: on a loaded host (the suite runs on every core) that outlives
    # httpx's 5 s default, and this test is about headers, not speed
    res = httpx.get(server.base_url + path, timeout=60)
    assert res.headers["content-type"].startswith("text/html")
    csp = res.headers["content-security-policy"]
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";") if " " in d.strip())
    assert "'unsafe-inline'" not in directives["script-src"], csp
    assert directives["frame-ancestors"] == "'none'"
    assert res.headers["x-content-type-options"] == "nosniff"
    assert res.headers["referrer-policy"] == "same-origin"


def test_a_redirect_never_names_the_host_the_client_sent(server: LiveServer) -> None:
    res = httpx.get(server.base_url + "/matrix/", headers={"Host": "evil.example"}, follow_redirects=False)
    assert res.status_code in (301, 302, 307, 308)
    assert res.headers["location"] == "/matrix"


def test_a_token_in_the_query_string_is_refused_and_not_logged(server: LiveServer) -> None:
    res = httpx.get(server.base_url + "/v1/resolve", params={"torch": "2.13", "token": server.token})
    assert res.status_code == 400 and res.json()["code"] == "token-in-query"
    bare = httpx.get(f"{server.base_url}/v1/matrix?limit=1&x={server.token}")
    assert bare.status_code == 400
    # percent-encoded: the prefix, or the parameter's name, escaped
    escaped = "%61%63%76%5F" + server.token.removeprefix("acv_")
    assert httpx.get(f"{server.base_url}/v1/matrix?limit=1&x={escaped}").status_code == 400
    named = httpx.get(f"{server.base_url}/v1/matrix?limit=1&t%6Fken=" + server.token.removeprefix("acv_"))
    assert named.status_code == 400 and named.json()["code"] == "token-in-query"
    # in the path, plain or escaped: no route's, answered as usual, and the log shows the path redacted
    for path in (f"/v1/reports/{server.token}", f"/v1/reports/{escaped}"):
        assert httpx.get(server.base_url + path).status_code in (401, 404, 405, 422)
    time.sleep(0.3)
    log = server.output()
    assert "token-in-query" in log or "(redacted" in log
    assert "(redacted:token-in-path)" in log
    secret = server.token.removeprefix("acv_")
    assert server.token not in log and secret not in log
