"""`accelenv db init|upgrade|current|load`, `accelenv token create|revoke|list`, `accelenv serve`.

Every command works on the database named by ``--database-url`` > ``ACCELENV_DATABASE_URL`` > the
embedded SQLite file in the user data directory. The database layer and the web stack are imported inside
the commands, so `accelenv resolve` does not pay for them.

`serve` on SQLite migrates and loads the bundled matrix into an empty database (first start needs no
set-up). On PostgreSQL it requires `accelenv db upgrade` first — several replicas must not race to
migrate — unless ``ACCELENV_AUTO_MIGRATE=true``; an unmigrated database exits 9 with that hint.
"""

from __future__ import annotations

import os
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
token_app = typer.Typer(
    name="token", help="API tokens: report (submit), read (raw reports), admin.", no_args_is_help=True
)

DatabaseUrl = Annotated[
    str | None,
    typer.Option(
        "--database-url", help="SQLAlchemy URL; default: ACCELENV_DATABASE_URL or the embedded SQLite file"
    ),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="print JSON instead of text")]
TokenId = Annotated[int, typer.Argument(help="the id `accelenv token list` shows")]


def _settings(database_url: str | None) -> Settings:
    from compat_service.config import load_settings

    return load_settings(database_url=database_url) if database_url else load_settings()


@contextmanager
def _database(database_url: str | None, *, at_head: bool = False) -> Iterator[Engine]:
    """An engine on the database, disposed afterwards (also when the command fails); ``at_head``: refuse a
    schema that is not migrated (DatabaseNotReadyError, exit 9, with the `accelenv db upgrade` hint)."""
    from compat_service.db.engine import make_engine

    engine = make_engine(_settings(database_url).database_url)
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

        with _database(database_url) as engine:
            migrate.upgrade(engine)
            _say(f"database {describe(engine)} is at schema {migrate.current_revision(engine)}")


@db_app.command("upgrade")
def db_upgrade(database_url: DatabaseUrl = None) -> None:
    """Apply pending migrations."""
    with guarded():
        from compat_service.db import migrate
        from compat_service.db.engine import describe

        with _database(database_url) as engine:
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
        with _database(database_url) as engine:
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

        with _database(database_url) as engine:
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

        with _database(database_url, at_head=True) as engine:
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


@token_app.command("create")
def token_create(
    scope: Annotated[
        str, typer.Option("--scope", help="report (submit probe reports), read (raw reports) or admin (everything)")
    ],
    note: Annotated[str | None, typer.Option("--note", help="who or what the token is for")] = None,
    database_url: DatabaseUrl = None,
    as_json: JsonFlag = False,
) -> None:
    """Create a token and print it once (only its hash is stored); --json prints it with its record."""
    with guarded(as_json=as_json):
        from compat_service.db.tokens import create_token, token_request

        request = token_request(scope, note)  # before touching the database: a bad note changes nothing
        with _database(database_url, at_head=True) as engine:
            public, secret = create_token(engine, request)
        if as_json:
            dump_json({**public.model_dump(mode="json"), "token": secret})
            return
        sys.stdout.write(secret + "\n")
        _say(f"token {public.id} (scope {public.scope}) created; it is shown only now, store it safely")


@token_app.command("revoke")
def token_revoke(
    token_id: TokenId,
    database_url: DatabaseUrl = None,
) -> None:
    """Revoke a token: requests with it get 401 once running workers forget it (ACCELENV_TOKEN_CACHE_S, 5 s)."""
    with guarded():
        from compat_service.db.tokens import revoke_token

        with _database(database_url, at_head=True) as engine:
            public = revoke_token(engine, token_id)
        _say(f"token {public.id} (scope {public.scope}) revoked at {public.revoked_at:%Y-%m-%d %H:%M:%S} UTC; "
             "running services refuse it within their ACCELENV_TOKEN_CACHE_S (5 s by default)")


@token_app.command("withdraw")
def token_withdraw(
    token_id: TokenId,
    database_url: DatabaseUrl = None,
) -> None:
    """Revoke a token and withdraw every report it submitted from the evidence (docs/service.md, trust model)."""
    with guarded():
        from compat_service.db.evidence.withdraw import withdraw_submitter

        with _database(database_url, at_head=True) as engine:
            result = withdraw_submitter(engine, token_id)
        _say(f"token {token_id} revoked; {result.reports_withdrawn} report(s) withdrawn from "
             f"{result.cells} evidence cell(s)")


@token_app.command("list")
def token_list(database_url: DatabaseUrl = None, as_json: JsonFlag = False) -> None:
    """List tokens (ids, scopes, notes, dates; never secrets)."""
    with guarded(as_json=as_json):
        from compat_service.db.tokens import list_tokens

        with _database(database_url, at_head=True) as engine:
            tokens = list_tokens(engine)
        if as_json:
            dump_json([t.model_dump(mode="json") for t in tokens])
            return
        for t in tokens:
            state = f"revoked {t.revoked_at:%Y-%m-%d}" if t.revoked_at else "active"
            say(f"{t.id}\t{t.scope}\t{state}\t{t.created_at:%Y-%m-%d}\t{t.note or ''}", sys.stdout)


def serve(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="TCP port")] = 8000,
    workers: Annotated[int, typer.Option(min=1, max=64, help="worker processes")] = 1,
    database_url: DatabaseUrl = None,
    auto_migrate: Annotated[
        bool | None,
        typer.Option(
            "--auto-migrate/--no-auto-migrate",
            help="migrate at start; default: yes on SQLite, no on PostgreSQL (ACCELENV_AUTO_MIGRATE)",
        ),
    ] = None,
) -> None:
    """Run the service (SQLite: migrates and loads on first start; PostgreSQL: `db upgrade` first)."""
    with guarded():
        from compat_service.db.matrix.loader import prepare_database

        settings = _settings(database_url)
        if auto_migrate is not None:
            settings.auto_migrate = auto_migrate
        # Prepare once here, before the workers start, so they never race to migrate or load.
        with _database(settings.database_url) as engine:
            prepare_database(
                engine,
                migrate_schema=settings.migrates_on_start(),
                load_matrix=settings.load_matrix_on_start,
                matrix_path=settings.matrix_path,
            )
    # Workers build their own app from the environment.
    os.environ["ACCELENV_DATABASE_URL"] = settings.database_url
    if auto_migrate is not None:
        os.environ["ACCELENV_AUTO_MIGRATE"] = str(auto_migrate).lower()
    # binds first, so each worker's start-up line names the real URL (also for --port 0)
    from compat_service.server import run

    run(host=host, port=port, workers=workers)


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the root app."""
    app.add_typer(db_app)
    app.add_typer(token_app)
    app.command("serve")(serve)
