"""Fixtures for the API tests: a migrated, loaded database per module and backend, and clients on it.

Read-only tests share one database per module (building and loading one costs a second on PostgreSQL);
tests that write or break the database take the function-scoped ``database_url`` instead.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from compat_service.api.app import create_app
from compat_service.config import Settings
from tests.conftest import POSTGRES_ENV, postgres_url


def _postgres_database() -> Iterator[str]:
    base = postgres_url()
    if not base:
        pytest.skip(f"PostgreSQL tests need {POSTGRES_ENV}")
    import sqlalchemy as sa

    name = f"accelenv_m_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield sa.engine.make_url(base).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(
                sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n"),
                {"n": name},
            )
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}"'))
        admin.dispose()


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def shared_database_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A database for one module's read-only tests, once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('db') / 'accelenv.sqlite3'}"
    else:
        yield from _postgres_database()


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
