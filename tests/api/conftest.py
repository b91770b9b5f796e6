"""Fixtures for the API tests: a migrated, loaded database per module and backend, and clients on it.

Read-only tests share one database per module (building and loading one costs a second on PostgreSQL);
tests that write or break the database take the function-scoped ``database_url`` instead.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from compat_service.api.app import create_app
from compat_service.config import Settings
from tests.conftest import fresh_postgres_database


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def shared_database_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A database for one module's read-only tests, once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('db') / 'accelenv.sqlite3'}"
    else:
        yield from fresh_postgres_database("accelenv_m_")


def settings_for(database_url: str, **overrides: object) -> Settings:
    """Settings for a test app: migrate and load on start whatever the backend."""
    values: dict[str, object] = {"database_url": database_url, "auto_migrate": True}
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def app(shared_database_url: str) -> FastAPI:
    return create_app(settings_for(shared_database_url))


@pytest.fixture(scope="module")
def client(app: FastAPI) -> Iterator[TestClient]:
    # raise_server_exceptions=False: a bug must show up as the 500 body a real client would get.
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c
