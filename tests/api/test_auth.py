"""`require_scope`: reads are public; writes need a valid token (401 without, 403 with the wrong scope)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

import pytest
from fastapi import Depends, FastAPI
from fastapi.testclient import TestClient

from compat_service.api.app import create_app
from compat_service.api.deps import require_scope, state_of
from compat_service.db.matrix.tables import ApiTokenCreate, ApiTokenPublic
from compat_service.db.tokens import create_token, revoke_token
from tests.api.conftest import settings_for


def _with_write_routes(app: FastAPI) -> FastAPI:
    """Write routes standing in for the report and admin endpoints, guarded by the real dependency."""

    @app.post("/test/report")
    def report_write(token: Annotated[ApiTokenPublic, Depends(require_scope("report"))]) -> dict[str, int]:
        return {"token_id": token.id}

    @app.post("/test/admin")
    def admin_write(token: Annotated[ApiTokenPublic, Depends(require_scope("admin"))]) -> dict[str, int]:
        return {"token_id": token.id}

    return app


@pytest.fixture(scope="module")
def auth_app(shared_database_url: str) -> FastAPI:
    return _with_write_routes(create_app(settings_for(shared_database_url)))


@pytest.fixture(scope="module")
def auth_client(auth_app: FastAPI) -> Iterator[TestClient]:
    with TestClient(auth_app, raise_server_exceptions=False) as c:
        yield c


@pytest.fixture(scope="module")
def tokens(auth_app: FastAPI) -> dict[str, tuple[int, str]]:
    engine = state_of(auth_app).engine
    out = {}
    for scope in ("report", "admin"):
        public, secret = create_token(engine, ApiTokenCreate(scope=scope))
        out[scope] = (public.id, secret)
    revoked, secret = create_token(engine, ApiTokenCreate(scope="admin", note="revoked"))
    revoke_token(engine, revoked.id)
    out["revoked"] = (revoked.id, secret)
    return out


@pytest.mark.parametrize(
    ("path", "token", "status", "code"),
    [
        ("/test/report", None, 401, "unauthorized"),
        ("/test/report", "garbage", 401, "unauthorized"),
        ("/test/report", "revoked", 401, "unauthorized"),
        ("/test/report", "report", 200, None),
        ("/test/report", "admin", 200, None),
        ("/test/admin", "report", 403, "forbidden"),
        ("/test/admin", "admin", 200, None),
        ("/test/admin", None, 401, "unauthorized"),
    ],
    ids=[
        "report-no-token",
        "report-garbage",
        "report-revoked",
        "report-ok",
        "report-by-admin",
        "admin-by-report",
        "admin-ok",
        "admin-no-token",
    ],
)
def test_scopes(
    auth_client: TestClient,
    tokens: dict[str, tuple[int, str]],
    path: str,
    token: str | None,
    status: int,
    code: str | None,
) -> None:
    headers = {}
    if token is not None:
        headers["Authorization"] = f"Bearer {tokens[token][1] if token in tokens else token}"
    res = auth_client.post(path, headers=headers)
    assert res.status_code == status, res.text
    if code is None:
        assert res.json() == {"token_id": tokens[token][0]}  # type: ignore[index]
    else:
        assert res.json()["code"] == code and res.json()["hint"]
    if status == 401:
        assert res.headers["www-authenticate"] == "Bearer"


def test_wrong_auth_scheme_is_401(auth_client: TestClient, tokens: dict[str, tuple[int, str]]) -> None:
    res = auth_client.post("/test/report", headers={"Authorization": f"Basic {tokens['report'][1]}"})
    assert res.status_code == 401


def test_reads_need_no_token(auth_client: TestClient) -> None:
    assert auth_client.get("/v1/torch").status_code == 200


def test_report_submission_needs_a_report_token(
    auth_client: TestClient, tokens: dict[str, tuple[int, str]]
) -> None:
    anonymous = auth_client.post("/v1/reports", json={})
    assert anonymous.status_code == 401 and anonymous.json()["code"] == "unauthorized"
    for scope in ("report", "admin"):
        res = auth_client.post(
            "/v1/reports", json={}, headers={"Authorization": f"Bearer {tokens[scope][1]}"}
        )
        # Past authentication: the empty report itself is what gets refused.
        assert res.status_code == 422, res.text


@pytest.mark.parametrize("cache_s", [0.0, 0.5])
def test_a_revoked_token_stops_working_within_the_token_cache_time(
    shared_database_url: str, cache_s: float
) -> None:
    """Workers remember valid tokens for ACCELENV_TOKEN_CACHE_S: revocation takes effect within it (at once
    with 0); the scope is checked on every request, cached or not."""
    import time

    settings = settings_for(shared_database_url, token_cache_s=cache_s, load_matrix_on_start=False)
    app = _with_write_routes(create_app(settings))
    public, secret = create_token(state_of(app).engine, ApiTokenCreate(scope="report", note="cache test"))
    headers = {"Authorization": f"Bearer {secret}"}
    with TestClient(app) as client:
        assert client.post("/test/report", headers=headers).status_code == 200
        assert client.post("/test/admin", headers=headers).status_code == 403  # cached, still the wrong scope
        revoke_token(state_of(app).engine, public.id)
        revoked_at = time.monotonic()
        status = client.post("/test/report", headers=headers).status_code
        if cache_s == 0:
            assert status == 401
        else:
            assert status == 200 or time.monotonic() - revoked_at >= cache_s  # remembered for cache_s at most
            time.sleep(max(0.0, cache_s - (time.monotonic() - revoked_at)) + 0.05)
            assert client.post("/test/report", headers=headers).status_code == 401
