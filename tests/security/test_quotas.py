"""Issue 34: per-client quotas (requests by address and by token, body bytes by address) answer 429
`quota-exceeded` with Retry-After and count on /metrics, through the real app."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from compat_service.api.app import create_app
from compat_service.config import Settings


def _client(tmp_path: Path, **quotas: Any) -> Iterator[TestClient]:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'q.sqlite3'}", auto_migrate=True,
                        load_matrix_on_start=False, access_log=False, **quotas)
    with TestClient(create_app(settings)) as client:
        yield client


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    yield from _client(tmp_path, quota_requests_per_min=5, quota_token_requests_per_min=3,
                       quota_bytes_per_min=10_000)


def test_an_address_past_its_request_quota_gets_429_with_retry_after(client: TestClient) -> None:
    assert [client.get("/healthz").status_code for _ in range(5)] == [200] * 5
    refused = client.get("/healthz")
    assert refused.status_code == 429 and refused.json()["code"] == "quota-exceeded"
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    assert "ACCELENV_QUOTA_REQUESTS_PER_MIN" in refused.json()["hint"]


def test_a_token_past_its_quota_gets_429_whatever_the_route(client: TestClient) -> None:
    auth = {"Authorization": "Bearer acv_whatever"}
    statuses = [client.get("/healthz", headers=auth).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    assert "ACCELENV_QUOTA_TOKEN_REQUESTS_PER_MIN" in client.get("/healthz", headers=auth).json()["hint"]


def test_body_bytes_past_the_quota_get_429_and_the_refusals_are_counted(tmp_path: Path) -> None:
    from compat_service.api.deps import state_of
    from compat_service.db.matrix.tables import ApiTokenCreate
    from compat_service.db.tokens import create_token

    for client in _client(tmp_path, quota_requests_per_min=0, quota_token_requests_per_min=0,
                          quota_bytes_per_min=10_000):
        # a declared length refused unread costs nothing
        for _ in range(3):
            assert client.post("/v1/reports", content=b" " * 9_000).status_code == 401
        secret = create_token(state_of(client.app).engine, ApiTokenCreate(scope="report"))[1]
        token = {"Authorization": f"Bearer {secret}"}
        # bodies read are counted as they arrive (9 000 blanks: an empty report, 422)
        assert [client.post("/v1/reports", content=b" " * 9_000, headers=token).status_code
                for _ in range(2)] == [422, 422]
        refused = client.post("/v1/reports", content=b"{}", headers=token)
        assert refused.status_code == 429 and "bytes" in refused.json()["message"]
        # /metrics is refused too for this minute: read what it would show
        from prometheus_client import generate_latest

        metrics = generate_latest(state_of(client.app).metrics.registry).decode()
        assert 'accelenv_quota_refusals_total{kind="bytes"} 1.0' in metrics


def test_no_quota_when_the_settings_say_0(tmp_path: Path) -> None:
    for client in _client(tmp_path, quota_requests_per_min=0, quota_token_requests_per_min=0,
                          quota_bytes_per_min=0):
        assert {client.get("/healthz").status_code for _ in range(50)} == {200}
