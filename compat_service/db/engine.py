"""Engine and session construction for SQLite (the embedded default) and PostgreSQL.

SQLite runs in WAL mode with a busy timeout so several server workers and a concurrent `accelenv db load`
share one file: readers never block the writer, and a writer waits instead of failing with "locked".
"""

from __future__ import annotations

import re
import sqlite3
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlmodel import Session, SQLModel

from compat_service.domain.errors import Cause, DatabaseNotReadyError, InvalidRequestError

SQLITE_BUSY_TIMEOUT_MS = 10_000


def core_table(model: type[SQLModel]) -> sa.Table:
    """The Core table of a SQLModel table class, for bulk SQL (SQLModel leaves ``__table__`` undeclared)."""
    return model.__table__  # type: ignore[attr-defined]


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


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    _switch_to_wal(cursor)
    # WAL + FULL: every commit is fsynced before the 201 goes out, so an acknowledged report survives a
    # power loss too (NORMAL would be ~10 % faster at ingest but can drop the newest commits).
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


#: keyword arguments psycopg.connect takes beside the libpq connection options (SQLAlchemy adds ``context``)
_PSYCOPG_CONNECT_KWARGS = ("context", "autocommit", "prepare_threshold", "row_factory", "cursor_factory")
_URL_HINT = "use sqlite:///path/to/file.sqlite3 or postgresql+psycopg://user@host:5432/dbname"


def _invalid_url(shown: str, problem: str, hint: str = _URL_HINT) -> InvalidRequestError:
    return InvalidRequestError(
        f"the database URL {shown} is not usable: {problem}",
        hint=hint,
        causes=[Cause(constraint=problem, origin="database URL (--database-url, --database or ACCELENV_*)")],
    )


_PASSWORD = re.compile(r"(://[^/@:]*:)[^@]*@")


def masked(database_url: str) -> str:
    """``database_url`` with the password (``user:PASSWORD@``) replaced by ``***``, for a URL too malformed
    for SQLAlchemy to render without it: an error message must never echo a secret."""
    return _PASSWORD.sub(r"\1***@", database_url)


def _port_problem(database_url: str) -> str | None:
    """Why the URL's port is unusable (not a number, out of range), or None; the stdlib parser says which."""
    try:
        _ = urllib.parse.urlsplit(database_url).port  # the property parses the port, raising on a bad one
    except ValueError as exc:
        return str(exc)
    return None


def _check_psycopg_options(engine: Engine, shown: str) -> None:
    """Refuse connection options libpq or psycopg would reject (an unknown option, a bad connect_timeout)
    now, with the URL named, rather than as a driver traceback at the first connection."""
    import psycopg
    from psycopg import conninfo

    _, params = engine.dialect.create_connect_args(engine.url)
    options = {k: v for k, v in params.items() if k not in _PSYCOPG_CONNECT_KWARGS}
    try:
        parsed = conninfo.conninfo_to_dict(conninfo.make_conninfo(**options))
        conninfo.timeout_from_conninfo(parsed)
    except psycopg.ProgrammingError as exc:
        raise _invalid_url(shown, str(exc).strip(), hint="fix the option after `?` in the URL; libpq's "
                           "documentation lists the connection options (connect_timeout is whole seconds)") from None


def make_engine(database_url: str) -> Engine:
    """An engine for ``database_url``; a malformed URL (bad scheme, unknown driver, bad port, a connection
    option the driver rejects) or a missing driver is an InvalidRequestError, raised before connecting."""
    try:
        url = sa.engine.make_url(database_url)
    except (sa.exc.ArgumentError, ValueError):
        problem = _port_problem(database_url) or "not a valid SQLAlchemy URL"
        raise _invalid_url(repr(masked(database_url)), problem) from None
    shown = url.render_as_string(hide_password=True)
    port_problem = _port_problem(database_url) if url.port is not None else None
    if port_problem:
        raise _invalid_url(shown, port_problem)
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
            f"cannot use the database URL {shown}: {exc}",
            hint="PostgreSQL URLs need the psycopg driver: postgresql+psycopg://...",
        ) from exc
    if url.get_driver_name() == "psycopg":
        _check_psycopg_options(engine, shown)
    return engine


def describe(engine: Engine) -> str:
    """The engine's URL without its password, for messages."""
    return engine.url.render_as_string(hide_password=True)


def missing_sqlite_file(engine: Engine) -> Path | None:
    """The file of a SQLite URL when it does not exist yet (connecting would create it empty), else None."""
    url = engine.url
    if url.get_backend_name() != "sqlite" or url.query.get("uri") in ("true", "1"):
        return None
    if not url.database or url.database == ":memory:":
        return None
    path = Path(url.database)
    return None if path.exists() else path.absolute()


def require_existing(engine: Engine) -> None:
    """Refuse, before connecting, to open a SQLite file that is not there: a read must not create it.

    Every path that needs a migrated database calls this (through ``migrate.require_head`` and
    ``readiness``), so `accelenv resolve --database`, `token list` or `db current` on a mistyped path say
    so instead of leaving an empty file behind.
    """
    missing = missing_sqlite_file(engine)
    if missing is not None:
        raise DatabaseNotReadyError(
            f"the database file {missing} does not exist",
            hint="check the path in the database URL, or create the database with "
            "`accelenv db init --database-url URL` (`accelenv db upgrade` does the same)",
            causes=[Cause(constraint="an existing SQLite file", origin=f"database URL {describe(engine)}")],
        )


def driver_reason(exc: sa.exc.DBAPIError) -> str:
    """The first line of what the database driver said (libpq's reason: refused, bad sslmode, no such db)."""
    lines = str(exc.orig if exc.orig is not None else exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def check_reachable(engine: Engine) -> None:
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except sa.exc.OperationalError as exc:
        raise DatabaseNotReadyError(
            f"the database {describe(engine)} is unreachable: {driver_reason(exc)}",
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
