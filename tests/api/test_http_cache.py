"""ETag / Cache-Control / 304: one mechanism for every GET."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

PATHS = ["/v1/torch", "/v1/torch/2.3.1", "/v1/resolve?torch=2.3&backend=cu121", "/openapi.json"]


@pytest.mark.parametrize("path", PATHS, ids=["torch-list", "torch-detail", "resolve", "openapi"])
def test_etag_and_304(client: TestClient, path: str) -> None:
    first = client.get(path)
    assert first.status_code == 200
    etag = first.headers["etag"]
    assert etag.startswith('"') and etag.endswith('"')
    assert "max-age=" in first.headers["cache-control"]
    again = client.get(path, headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == etag
    weak_and_listed = client.get(path, headers={"If-None-Match": f'"other", W/{etag}'})
    assert weak_and_listed.status_code == 304
    stale = client.get(path, headers={"If-None-Match": '"not-the-tag"'})
    assert stale.status_code == 200 and stale.content == first.content


def test_different_bodies_have_different_tags(client: TestClient) -> None:
    a = client.get("/v1/torch", params={"minor": "2.3"}).headers["etag"]
    b = client.get("/v1/torch", params={"minor": "2.4"}).headers["etag"]
    assert a != b


def test_errors_and_health_are_not_cached(client: TestClient) -> None:
    missing = client.get("/v1/torch/9.9.9")
    assert missing.status_code == 404 and "etag" not in missing.headers
    health = client.get("/healthz")
    assert health.headers["cache-control"] == "no-store"
