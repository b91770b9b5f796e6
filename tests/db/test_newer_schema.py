"""A database migrated by a newer accelenv (then the code rolled back): every command that opens it names
both revisions and says to upgrade accelenv, exits 9, and prints no traceback (issue 14, item 7)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from cli.main import app
from compat_service.db import migrate
from compat_service.db.engine import make_engine

FUTURE = "0099_from_a_newer_accelenv"
runner = CliRunner()


@pytest.fixture
def newer_database(database_url: str) -> str:
    engine = make_engine(database_url)
    migrate.upgrade(engine)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = :v"), {"v": FUTURE})
    engine.dispose()
    return database_url


@pytest.mark.parametrize(
    "args",
    [["db", "upgrade"], ["db", "init"], ["db", "current"], ["db", "load"], ["serve", "--port", "0"],
     ["serve", "--port", "0", "--no-auto-migrate"]],
    ids=["upgrade", "init", "current", "load", "serve", "serve-no-migrate"],
)
def test_commands_name_both_revisions_and_say_to_upgrade_accelenv(newer_database: str, args: list[str]) -> None:
    result = runner.invoke(app, [*args, "--database-url", newer_database])
    output = result.output
    assert result.exit_code == 9, output
    assert "Traceback" not in output
    assert FUTURE in output and migrate.head_revision() in output, output
    assert "upgrade accelenv" in output, output
    assert "run `accelenv db upgrade`" not in output, output


def test_readiness_says_the_database_is_newer(newer_database: str) -> None:
    from compat_service.db.readiness import readiness

    engine = make_engine(newer_database)
    try:
        report = readiness(engine)
    finally:
        engine.dispose()
    schema = next(c for c in report.checks if c.name == "schema")
    assert not report.ready and not schema.ok
    assert FUTURE in schema.detail and "upgrade accelenv" in schema.detail
