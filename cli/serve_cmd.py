"""`accelenv serve`: run the service.

On SQLite it migrates and loads the bundled matrix into an empty database (first start needs no set-up). On
PostgreSQL it requires `accelenv db upgrade` first — several replicas must not race to migrate — unless
``ACCELENV_AUTO_MIGRATE=true``; an unmigrated database exits 9 with that hint.
"""

from __future__ import annotations

import os
from typing import Annotated

import typer

from cli.db_cmd import DatabaseUrl, database, settings_for
from cli.error_render import guarded


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

        settings = settings_for(database_url)
        if auto_migrate is not None:
            settings.auto_migrate = auto_migrate
        # Prepare once here, before the workers start, so they never race to migrate or load.
        with database(settings.database_url) as engine:
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
    app.command("serve")(serve)
