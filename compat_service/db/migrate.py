"""Run the Alembic migrations shipped inside the package, and tell whether a database is at head.

No alembic.ini at runtime: the script location is this package's ``migrations/`` folder and the caller's
engine is handed to ``env.py`` as an open connection.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine

from compat_service.db.engine import describe, driver_reason, require_existing
from compat_service.domain.errors import Cause, DatabaseNotReadyError

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"
# Any constant works: it only has to be the same in every process that migrates.
_PG_MIGRATE_LOCK = 0x616363656D696772
# Alembic keeps its migration context in module globals, so two threads of one process must never run
# it at once; the database locks below serialize separate processes.
_THREAD_LOCK = threading.Lock()


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def head_revision() -> str:
    heads = ScriptDirectory.from_config(_config()).get_heads()
    return heads[0]


def known_revisions() -> frozenset[str]:
    """Every revision this accelenv ships."""
    return frozenset(rev.revision for rev in ScriptDirectory.from_config(_config()).walk_revisions())


def newer_schema_error(engine: Engine, current: str) -> DatabaseNotReadyError:
    """The database was migrated by a newer accelenv than this one (a rollback of the code): nothing this
    accelenv can do helps, and `accelenv db upgrade` least of all."""
    head = head_revision()
    return DatabaseNotReadyError(
        f"the database {describe(engine)} is at schema revision {current}, which this accelenv does not know "
        f"(it knows up to {head}): a newer accelenv migrated it",
        hint="upgrade accelenv to the version that migrated this database (or point ACCELENV_DATABASE_URL at "
        "another database); downgrading the schema loses what the newer version stores",
        causes=[
            Cause(constraint=f"schema revision <= {head}", origin="this accelenv's migrations"),
            Cause(constraint=f"schema revision == {current}", origin=f"database {describe(engine)}"),
        ],
    )


def describe_revision(current: str | None) -> str:
    """A readiness line for a database not at head (older, empty or newer)."""
    head = head_revision()
    if current is not None and current not in known_revisions():
        return f"revision {current} is newer than this accelenv knows ({head}): upgrade accelenv"
    return f"revision {current or 'none'}, need {head}: run `accelenv db upgrade`"


def current_revision(engine: Engine) -> str | None:
    """The revision stamped in the database; None for an empty database."""
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    except sa.exc.OperationalError as exc:
        raise DatabaseNotReadyError(
            f"the database {describe(engine)} is unreachable: {driver_reason(exc)}",
            hint="check ACCELENV_DATABASE_URL and that the database server is running",
        ) from exc


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Apply migrations up to ``revision``; concurrent callers (workers starting together) take turns."""
    _run(engine, command.upgrade, revision, "migrate")


def downgrade(engine: Engine, revision: str) -> None:
    """Revert migrations down to ``revision`` (an operator's step back to an older accelenv)."""
    _run(engine, command.downgrade, revision, "downgrade")


def _run(engine: Engine, step: Callable[[Config, str], None], revision: str, verb: str) -> None:
    config = _config()
    try:
        with _THREAD_LOCK, engine.connect() as conn:
            # Lock before reading the current revision, so a second migrator waits and then finds nothing
            # to do instead of creating the same tables again.
            if engine.dialect.name == "sqlite":
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            else:
                conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_PG_MIGRATE_LOCK)))
            current = MigrationContext.configure(conn).get_current_revision()
            if current is not None and current not in known_revisions():
                raise newer_schema_error(engine, current)
            config.attributes["connection"] = conn
            step(config, revision)
            conn.commit()
    except sa.exc.OperationalError as exc:
        raise DatabaseNotReadyError(
            f"cannot {verb} the database {describe(engine)}: {exc.orig}",
            hint="check ACCELENV_DATABASE_URL and that the database server is running",
        ) from exc


def require_head(engine: Engine) -> None:
    """Raise DatabaseNotReadyError unless the schema is at the newest revision (a missing SQLite file stays
    missing: it is not created just to find it empty)."""
    require_existing(engine)
    current = current_revision(engine)
    head = head_revision()
    if current is not None and current != head and current not in known_revisions():
        raise newer_schema_error(engine, current)
    if current != head:
        raise DatabaseNotReadyError(
            f"the database {describe(engine)} is not migrated: "
            f"schema revision {current or 'none (empty database)'}, this accelenv needs {head}",
            hint="run `accelenv db upgrade` (with the same ACCELENV_DATABASE_URL), then start again",
            causes=[
                Cause(constraint=f"schema revision == {head}", origin="accelenv migrations"),
                Cause(constraint=f"schema revision == {current}", origin=f"database {describe(engine)}"),
            ],
        )
