"""Fixtures shared by every test package.

PostgreSQL tests read ACCELENV_TEST_POSTGRES_URL (set by .ci/run) and skip with a reason when it is unset.
Each test that needs a database gets a fresh one: a new SQLite file, or a new PostgreSQL schema... see
``database_url``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

REPO_ROOT = Path(__file__).resolve().parent.parent
POSTGRES_ENV = "ACCELENV_TEST_POSTGRES_URL"

# Apps built in the test process must not freeze the test process's objects (gc.freeze would keep every
# cycle the earlier tests left behind); tests/api/test_gc_tuning.py tests the tuning itself.
os.environ.setdefault("ACCELENV_TUNE_GC", "false")
# Probe runs check a bounded OpInfo list (a dozen ops, every dtype kind, a random and an uninitialised op);
# benchmarks/bench_probe.py runs the whole op_db.
TEST_OPINFO_OPS = ("add,mul,mm,bmm,sgn,conj,copysign,abs,sum,softmax,nn.functional.relu,empty,bernoulli,"
                   "index_put,nn.functional.adaptive_avg_pool2d")
os.environ.setdefault("ACCELENV_PROBE_OPINFO_OPS", TEST_OPINFO_OPS)


def postgres_url() -> str | None:
    return os.environ.get(POSTGRES_ENV) or None


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'accelenv.sqlite3'}"


def fresh_postgres_database(prefix: str = "accelenv_t_") -> Iterator[str]:
    """Yield the URL of a new, empty PostgreSQL database, dropped afterwards; skip without a server URL."""
    base = postgres_url()
    if not base:
        pytest.skip(f"PostgreSQL tests need {POSTGRES_ENV} (e.g. postgresql+psycopg://postgres@127.0.0.1:5432/test)")
    import sqlalchemy as sa

    name = f"{prefix}{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield sa.engine.make_url(base).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(
                sa.text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = :n AND pid <> pg_backend_pid()"
                ),
                {"n": name},
            )
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}"'))
        admin.dispose()


@pytest.fixture
def postgres_database() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    yield from fresh_postgres_database()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Run the test once on a fresh SQLite file and once on a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'accelenv.sqlite3'}"
    return request.getfixturevalue("postgres_database")


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    """An engine on a fresh database (see ``database_url``), migrated to head."""
    from compat_service.db import migrate
    from compat_service.db.engine import make_engine

    engine = make_engine(database_url)
    migrate.upgrade(engine)
    yield engine
    engine.dispose()
