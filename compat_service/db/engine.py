"""Engine and session construction for SQLite (the embedded default) and PostgreSQL.

SQLite runs in WAL mode with a busy timeout so several server workers and a concurrent `accelenv db load`
share one file: readers never block the writer, and a writer waits instead of failing with "locked".
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Session

from compat_service.domain.errors import DatabaseNotReadyError, InvalidRequestError

SQLITE_BUSY_TIMEOUT_MS = 10_000


def _switch_to_wal(cursor: sqlite3.Cursor) -> None:
    """Put the database file in WAL mode, waiting out other connections doing the same.

    On a brand-new file two connections switching at once deadlock (each holds a shared lock and wants
    the exclusive one), and SQLite answers "database is locked" at once instead of calling the busy
    handler: workers starting together on a fresh database hit it. So retry, for up to the busy timeout.
    """
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    delay = 0.001
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.05)


def _sqlite_pragmas(dbapi_connection, _record) -> None:  # noqa: ANN001 - DB-API connection
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    _switch_to_wal(cursor)
    # WAL + FULL: every commit is fsynced before the 201 goes out, so an acknowledged report survives a
    # power loss too (NORMAL would be ~10 % faster at ingest but can drop the newest commits).
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def make_engine(database_url: str) -> Engine:
    """An engine for ``database_url``; a malformed URL or a missing driver is an InvalidRequestError."""
    try:
        url = sa.engine.make_url(database_url)
    except sa.exc.ArgumentError as exc:
        raise InvalidRequestError(
            f"the database URL {database_url!r} is not a valid SQLAlchemy URL",
            hint="use sqlite:///path/to/file.sqlite3 or postgresql+psycopg://user@host:5432/dbname",
        ) from exc
    backend = url.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise InvalidRequestError(
            f"database backend {backend!r} is not supported",
            hint="accelenv runs on SQLite (embedded default) or PostgreSQL (postgresql+psycopg://...)",
        )
    try:
        if backend == "sqlite":
            engine = sa.create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
            sa.event.listen(engine, "connect", _sqlite_pragmas)
        else:
            # pool_size covers a worker's concurrent requests: overflow connections are closed on return,
            # and a new PostgreSQL connection (a forked backend) per request would dominate ingest time.
            engine = sa.create_engine(url, pool_pre_ping=True, pool_size=20, max_overflow=10)
    except (sa.exc.ArgumentError, ModuleNotFoundError) as exc:
        raise InvalidRequestError(
            f"cannot use the database URL {url.render_as_string(hide_password=True)}: {exc}",
            hint="PostgreSQL URLs need the psycopg driver: postgresql+psycopg://...",
        ) from exc
    return engine


def describe(engine: Engine) -> str:
    """The engine's URL without its password, for messages."""
    return engine.url.render_as_string(hide_password=True)


def check_reachable(engine: Engine) -> None:
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except sa.exc.OperationalError as exc:
        raise DatabaseNotReadyError(
            f"the database {describe(engine)} is unreachable",
            hint="check ACCELENV_DATABASE_URL and that the database server is running",
            causes=[],
        ) from exc


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """One transaction: committed when the block ends, rolled back on any error."""
    with Session(engine) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
