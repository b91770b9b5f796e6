"""Malformed, oversized and hostile input gets a 4xx naming the problem; never a 500."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient

from compat_service.api.app import create_app
from compat_service.api.deps import state_of
from tests.api.conftest import settings_for

HOSTILE_QUERIES = [
    ("/v1/resolve", {"torch": "9" * 20_000}),
    ("/v1/resolve", {"torch": "2.3' OR '1'='1"}),
    ("/v1/resolve", {"python": "3.11; DROP TABLE api_token;--"}),
    ("/v1/resolve", {"backend": "cü121"}),
    ("/v1/resolve", {"os": "\u202elinux"}),
    ("/v1/resolve", {"with": "torchvision,../../etc/passwd"}),
    ("/v1/resolve", {"driver": "５３５"}),
    ("/v1/resolve", {"gpu_arch": "sm_90\x00"}),
    ("/v1/torch", {"minor": "2.3" * 5000}),
    ("/v1/torch", {"offset": "-5"}),
    ("/v1/torch", {"limit": "1e9"}),
    ("/v1/torch", {"platform": "linux-x86_64' --"}),
    ("/v1/torch/2.3.1%27%20OR%201=1", {}),
    ("/v1/torch/" + "9" * 5000, {}),
    # PostgreSQL text cannot hold NUL: every route refuses it before it reaches a query
    ("/v1/matrix", {"backend": "cu\x00121"}),
    ("/v1/torch", {"os": "li\x00nux"}),
    ("/v1/evidence", {"torch": "2.13.0", "python": "3.11", "os": "linux", "arch": "x86_64", "backend": "c\x00pu"}),
    ("/v1/torch/2.3%00", {}),
]


@pytest.mark.parametrize(
    ("path", "params"),
    HOSTILE_QUERIES,
    ids=[
        "huge-torch",
        "sql-torch",
        "sql-python",
        "unicode-backend",
        "bidi-os",
        "path-with",
        "fullwidth-driver",
        "nul-gpu-arch",
        "huge-minor",
        "negative-offset",
        "float-limit",
        "sql-platform",
        "sql-version",
        "huge-version",
        "nul-matrix-backend",
        "nul-torch-os",
        "nul-evidence-backend",
        "nul-path",
    ],
)
def test_hostile_queries_get_a_named_4xx(client: TestClient, path: str, params: dict[str, str]) -> None:
    res = client.get(path, params=params)
    assert 400 <= res.status_code < 500, res.text
    body = res.json()
    assert set(body) >= {"code", "message", "hint", "causes"}
    assert body["code"] in ("invalid-request", "not-found")
    assert body["message"]
    assert body.pop("request_id") == res.headers["x-request-id"]
    again = client.get(path, params=params)  # a cached failure answers the same (but for its own id)
    again_body = again.json()
    assert again_body.pop("request_id") == again.headers["x-request-id"] != res.headers["x-request-id"]
    assert (again.status_code, again_body) == (res.status_code, body)


def test_unknown_route_and_method(client: TestClient) -> None:
    missing = client.get("/v1/nothing-here")
    assert missing.status_code == 404
    assert missing.json()["code"] == "not-found" and missing.json()["hint"]
    wrong = client.delete("/v1/torch")
    assert wrong.status_code == 405
    assert wrong.json()["code"] == "method-not-allowed"


@pytest.fixture(scope="module")
def small_limit_client(shared_database_url: str) -> Iterator[TestClient]:
    app: FastAPI = create_app(settings_for(shared_database_url, max_body_bytes=1024))

    # A route that reads its body, standing in for any write endpoint.
    @app.post("/test/echo-size")
    async def echo_size(request: Request) -> dict[str, int]:
        return {"size": len(await request.body())}

    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def test_body_within_the_limit_passes(small_limit_client: TestClient) -> None:
    res = small_limit_client.post("/test/echo-size", content=b"x" * 1024)
    assert res.status_code == 200 and res.json() == {"size": 1024}


def test_declared_oversized_body_is_413(small_limit_client: TestClient) -> None:
    res = small_limit_client.post("/test/echo-size", content=b"x" * 1025)
    assert res.status_code == 413
    assert res.json()["code"] == "body-too-large" and "1024" in res.json()["message"]


def test_chunked_oversized_body_is_413(small_limit_client: TestClient) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(10):
            yield b"y" * 500

    res = small_limit_client.post("/test/echo-size", content=chunks())
    assert res.status_code == 413
    assert res.json()["code"] == "body-too-large"


def test_lying_content_length_is_cut_at_the_limit(small_limit_client: TestClient) -> None:
    def chunks() -> Iterator[bytes]:
        yield b"z" * 4000

    res = small_limit_client.post("/test/echo-size", content=chunks(), headers={"Content-Length": "10"})
    assert res.status_code in (400, 413)
    assert res.json()["code"] in ("body-too-large", "bad-request")


def test_malformed_content_length_is_400(small_limit_client: TestClient) -> None:
    res = small_limit_client.post("/test/echo-size", content=b"abc", headers={"Content-Length": "lots"})
    assert res.status_code == 400
    assert res.json()["code"] == "bad-request"


def test_a_genuine_bug_is_a_500_in_the_error_shape(shared_database_url: str) -> None:
    app = create_app(settings_for(shared_database_url))

    @app.get("/test/bug")
    async def bug() -> None:
        raise RuntimeError("secret internals")

    with TestClient(app, raise_server_exceptions=False) as c:
        res = c.get("/test/bug")
    assert res.status_code == 500
    assert res.json()["code"] == "internal-error"
    assert "secret internals" not in res.text


def test_huge_queries_are_not_memoized(client: TestClient) -> None:
    memo = state_of(client.app).resolve_cache.requests
    before = len(memo)
    for i in range(5):
        # an unknown parameter is refused (api/inputs/strict_query.py); refused or not, a huge query is not kept
        res = client.get("/v1/resolve", params={"torch": "2.3", "padding": "x" * 5000 + str(i)})
        assert res.status_code == 422 and "'padding'" in res.json()["message"]
        res = client.get("/v1/resolve", params={"torch": "2.3", "python": "3.11" + " " * 5000 + str(i)})
        assert res.status_code == 422 and "python" in res.json()["message"]
    assert len(memo) == before


@pytest.mark.parametrize("name", ["strict", "require_verified"])
def test_a_switch_takes_yes_or_no_and_names_itself_otherwise(client: TestClient, name: str) -> None:
    base = {"torch": "2.3", "backend": "cpu", "python": "3.11", "os": "linux", "arch": "x86_64"}
    refused = client.get("/v1/resolve", params=base | {name: "zzz"})
    assert refused.status_code == 422, refused.text
    body = refused.json()
    assert body["code"] == "invalid-request"
    assert f"{name}='zzz'" in body["message"] and f"{name}=true" in body["hint"]
    for off in ("false", "0", "no", ""):
        assert client.get("/v1/resolve", params=base | {name: off}).status_code == 200, off
    on = client.get("/v1/resolve", params=base | {name: "TRUE"})
    assert on.status_code in (200, 404, 409, 422) and on.json().get("code") != "invalid-request", on.text
