"""Fixtures for the database tests: an engine on a fresh, migrated database (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.engine import Engine

from compat_service.db import migrate
from compat_service.db.engine import make_engine


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    engine = make_engine(database_url)
    migrate.upgrade(engine)
    yield engine
    engine.dispose()
