"""`GET /v1/resolve` is a plain FastAPI route: an error is answered by the app's handler for it, a bug by the
one 500, any other method or path by the router, and the answer carries the route label and the ETag."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.exc import OperationalError

from compat_service.api.routes import resolve as resolve_route


def test_a_database_error_is_answered_by_its_handler(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(_app: object, _raw: bytes, _pairs: object = None) -> tuple[bytes, str]:
        raise OperationalError("SELECT 1", {}, Exception("the database went away"))

    monkeypatch.setattr(resolve_route, "resolution_answer", broken)
    res = client.get("/v1/resolve", params={"torch": "2.3"})
    assert res.status_code == 503
    body = res.json()
    assert body["code"] == "database-not-ready" and body["request_id"] == res.headers["x-request-id"]
    assert res.headers["x-content-type-options"] == "nosniff"


def test_a_bug_is_the_one_500(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    async def buggy(_app: object, _raw: bytes, _pairs: object = None) -> tuple[bytes, str]:
        raise RuntimeError("a bug")

    monkeypatch.setattr(resolve_route, "resolution_answer", buggy)
    res = client.get("/v1/resolve")
    assert res.status_code == 500
    assert res.json()["code"] == "internal-error" and res.json()["request_id"] == res.headers["x-request-id"]


def test_other_methods_and_paths_go_to_the_router(client: TestClient) -> None:
    # HEAD is the GET without its body (middleware/head_requests.py), the router answers other methods
    assert client.head("/v1/resolve").status_code == client.get("/v1/resolve").status_code
    assert client.post("/v1/resolve").status_code == 405
    slash = client.get("/v1/resolve/", params={"torch": "2.3"}, follow_redirects=False)
    assert slash.status_code == 307 and slash.headers["location"].startswith("/v1/resolve")


def test_the_answer_carries_the_route_label_and_etag(client: TestClient) -> None:
    res = client.get("/v1/resolve", params={"torch": "2.3", "backend": "cu121", "python": "3.10"})
    assert res.status_code == 200 and res.headers["etag"]
    again = client.get("/v1/resolve", params={"torch": "2.3", "backend": "cu121", "python": "3.10"},
                       headers={"if-none-match": res.headers["etag"]})
    assert again.status_code == 304
    metrics = client.get("/metrics").text
    assert 'route="/v1/resolve",status="200"' in metrics and 'route="/v1/resolve",status="304"' in metrics
