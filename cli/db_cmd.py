"""`accelenv db init|upgrade|wait|current|load`, and the database options and connection the `token`
(cli/token_cmd.py) and `serve` (cli/serve_cmd.py) commands share.

Every command works on the database named by ``--database-url`` > ``ACCELENV_DATABASE_URL`` > the
embedded SQLite file in the user data directory. The database layer and the web stack are imported inside
the commands, so `accelenv resolve` does not pay for them.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.error_render import dump_json, guarded
from cli.terminal_text import say

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from compat_service.config import Settings

db_app = typer.Typer(name="db", help="Create, migrate and load the service database.", no_args_is_help=True)

DatabaseUrl = Annotated[
    str | None,
    typer.Option(
        "--database-url", help="SQLAlchemy URL; default: ACCELENV_DATABASE_URL or the embedded SQLite file"
    ),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="print JSON instead of text")]


def settings_for(database_url: str | None) -> Settings:
    from compat_service.config import load_settings

    return load_settings(database_url=database_url) if database_url else load_settings()


@contextmanager
def database(database_url: str | None, *, at_head: bool = False) -> Iterator[Engine]:
    """An engine on the database, disposed afterwards (also when the command fails); ``at_head``: refuse a
    schema that is not migrated (DatabaseNotReadyError, exit 9, with the `accelenv db upgrade` hint)."""
    from compat_service.db.engine import make_engine

    engine = make_engine(settings_for(database_url).database_url)
    try:
        if at_head:
            from compat_service.db import migrate

            migrate.require_head(engine)
        yield engine
    finally:
        engine.dispose()


def _say(text: str) -> None:
    say(text)


@db_app.command("init")
def db_init(database_url: DatabaseUrl = None) -> None:
    """Create the schema (apply every migration) in a new or existing database."""
    with guarded():
        from compat_service.db import migrate
        from compat_service.db.engine import describe

        with database(database_url) as engine:
            migrate.upgrade(engine)
            _say(f"database {describe(engine)} is at schema {migrate.current_revision(engine)}")


@db_app.command("upgrade")
def db_upgrade(database_url: DatabaseUrl = None) -> None:
    """Apply pending migrations."""
    with guarded():
        from compat_service.db import migrate
        from compat_service.db.engine import describe

        with database(database_url) as engine:
            before = migrate.current_revision(engine)
            migrate.upgrade(engine)
            after = migrate.current_revision(engine)
        change = "already at" if before == after else f"{before or 'empty'} ->"
        _say(f"database {describe(engine)}: {change} {after}")


@db_app.command("wait")
def db_wait(
    timeout: Annotated[float, typer.Option("--timeout", min=0, help="seconds to keep trying")] = 60.0,
    database_url: DatabaseUrl = None,
) -> None:
    """Wait until the database accepts connections (exit 9 after --timeout): for container entrypoints."""
    with guarded():
        import time

        from compat_service.db.engine import check_reachable, describe
        from compat_service.domain.errors import DatabaseNotReadyError

        deadline = time.monotonic() + timeout
        with database(database_url) as engine:
            while True:
                try:
                    check_reachable(engine)
                    break
                except DatabaseNotReadyError as err:
                    if time.monotonic() >= deadline:
                        err.message += f" (waited {timeout:g} s)"
                        raise
                    time.sleep(1.0)
        _say(f"database {describe(engine)} is reachable")


@db_app.command("current")
def db_current(database_url: DatabaseUrl = None, as_json: JsonFlag = False) -> None:
    """Show the schema revision and the loaded matrix; exit 9 when the schema is not at head."""
    with guarded(as_json=as_json):
        from compat_service.db.engine import describe
        from compat_service.db.readiness import readiness

        with database(database_url) as engine:
            report = readiness(engine)
        if as_json:
            dump_json(report.model_dump(mode="json"))
        else:
            sys.stdout.write(f"database {describe(engine)}\n")
            for check in report.checks:
                say(f"  {'ok ' if check.ok else 'NOT'} {check.name}: {check.detail}", sys.stdout)
        schema_ok = any(c.name == "schema" and c.ok for c in report.checks)
        if not schema_ok:
            raise typer.Exit(9)


@db_app.command("load")
def db_load(
    path: Annotated[
        Path | None, typer.Argument(help="a matrix_data directory; default: the bundled one")
    ] = None,
    database_url: DatabaseUrl = None,
    as_json: JsonFlag = False,
) -> None:
    """Validate matrix_data and load it (idempotent; a bad file set is rejected whole, exit 4)."""
    with guarded(as_json=as_json):
        from compat_service.db.matrix.loader import import_matrix

        with database(database_url, at_head=True) as engine:
            result = import_matrix(engine, path)
        if as_json:
            dump_json(
                {
                    "load_id": result.load_id,
                    "content_hash": result.content_hash,
                    "changed": result.changed,
                    "counts": result.counts,
                }
            )
            return
        verb = "loaded" if result.changed else "unchanged: already loaded"
        rows = ", ".join(f"{name} {n}" for name, n in result.counts.items())
        _say(f"{verb} matrix {result.content_hash[:16]} (load {result.load_id}); rows: {rows}")


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the root app."""
    app.add_typer(db_app)
