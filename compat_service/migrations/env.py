"""Alembic environment, run programmatically by ``compat_service.db.migrate`` (no alembic.ini needed).

The caller passes an open connection in ``config.attributes["connection"]``; the command-line ``alembic``
tool can still be used by developers with ``-x url=...``.
"""

from __future__ import annotations

import importlib.util

import sqlalchemy as sa
from alembic import context
from sqlmodel import SQLModel

import compat_service.db.matrix.tables  # noqa: F401  (registers the tables on SQLModel.metadata)

# The evidence tables live in their own module; register them when it exists.
if importlib.util.find_spec("compat_service.db.evidence.tables") is not None:
    importlib.import_module("compat_service.db.evidence.tables")

config = context.config
target_metadata = SQLModel.metadata


def _run(connection: sa.Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things; batch mode copies the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("no database URL: pass -x url=... or set sqlalchemy.url")
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        _run(conn)
    engine.dispose()
