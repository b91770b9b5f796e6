"""Startup policy and readiness: migrate-on-start, refusing an unmigrated schema, /healthz and /readyz."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from compat_service.api.app import create_app
from compat_service.api.deps import state_of
from compat_service.config import Settings
from compat_service.db import migrate
from compat_service.db.engine import make_engine
from compat_service.domain.errors import DatabaseNotReadyError
from tests.api.conftest import settings_for


def test_embedded_default_needs_no_set_up(sqlite_url: str) -> None:
    settings = Settings(database_url=sqlite_url)
    assert settings.migrates_on_start()
    with TestClient(create_app(settings)) as client:
        ready = client.get("/readyz")
        assert ready.status_code == 200
        assert ready.json()["ready"] is True
        assert [c["name"] for c in ready.json()["checks"]] == ["database", "schema", "matrix"]
        assert client.get("/v1/torch").json()["total"] > 0


def test_postgres_does_not_migrate_by_default() -> None:
    assert not Settings(database_url="postgresql+psycopg://u@h/db").migrates_on_start()
    assert Settings(database_url="postgresql+psycopg://u@h/db", auto_migrate=True).migrates_on_start()


def test_unmigrated_schema_is_refused_with_the_fix(database_url: str) -> None:
    with pytest.raises(DatabaseNotReadyError) as info:
        create_app(Settings(database_url=database_url, auto_migrate=False))
    assert info.value.code == "database-not-ready"
    assert "accelenv db upgrade" in (info.value.hint or "")


def test_readyz_says_the_matrix_is_missing(database_url: str) -> None:
    app = create_app(settings_for(database_url, load_matrix_on_start=False))
    with TestClient(app) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        res = client.get("/readyz")
        assert res.status_code == 503
        failed = [c for c in res.json()["checks"] if not c["ok"]]
        assert [c["name"] for c in failed] == ["matrix"]
        assert "accelenv db load" in failed[0]["detail"]
        # Matrix-backed endpoints say the same, as a 503 error body.
        res = client.get("/v1/resolve")
        assert res.status_code == 503 and res.json()["code"] == "database-not-ready"


def test_readyz_notices_a_schema_behind(database_url: str) -> None:
    app = create_app(settings_for(database_url))
    with TestClient(app) as client:
        assert client.get("/readyz").status_code == 200
        engine = make_engine(database_url)
        with engine.begin() as conn:
            conn.execute(sa.text("UPDATE alembic_version SET version_num = '0003_report_body_lz4'"))
        engine.dispose()
        res = client.get("/readyz")
        assert res.status_code == 503
        schema = next(c for c in res.json()["checks"] if c["name"] == "schema")
        assert not schema["ok"] and "accelenv db upgrade" in schema["detail"]
        assert migrate.head_revision() in schema["detail"]


def test_openapi_and_docs_are_published(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    assert {"/v1/torch", "/v1/torch/{version}", "/v1/resolve", "/healthz", "/readyz"} <= set(spec["paths"])
    resolve_params = {p["name"] for p in spec["paths"]["/v1/resolve"]["get"]["parameters"]}
    assert resolve_params >= {"torch", "python", "os", "arch", "backend", "driver", "gpu_arch", "with"}
    docs = client.get("/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()


def test_the_service_follows_a_new_load(database_url: str) -> None:
    from compat_service.db.matrix.loader import import_matrix_data
    from compat_service.domain.matrix.loading.loader import load_matrix_data
    from compat_service.domain.matrix.model.schema import SourcesFile

    app = create_app(settings_for(database_url, matrix_refresh_s=0))
    with TestClient(app) as client:
        before = client.get("/v1/torch", params={"limit": 1}).json()["matrix_version"]
        data = load_matrix_data()
        first, *rest = data.sources.sources
        renamed = first.model_copy(update={"title": "renamed for the test"})
        sources = SourcesFile.model_validate({"schema": "sources/v1", "sources": [renamed, *rest]})
        result = import_matrix_data(
            state_of(app).engine, data.model_copy(update={"sources": sources}), source_path="t"
        )
        after = client.get("/v1/torch", params={"limit": 1}).json()["matrix_version"]
        assert before != after == result.content_hash[:16]
        assert client.get("/readyz").json()["matrix_version"] == after


def test_a_database_failing_after_start_is_503_not_500(sqlite_url: str) -> None:
    app = create_app(settings_for(sqlite_url))
    with TestClient(app, raise_server_exceptions=False) as client:
        assert client.get("/v1/torch").status_code == 200
        with state_of(app).engine.begin() as conn:
            conn.execute(sa.text("DROP TABLE torch_python"))
        res = client.get("/v1/torch", params={"python": "3.11"})
        assert res.status_code == 503
        assert res.json()["code"] == "database-not-ready" and "/readyz" in res.json()["hint"]
