"""Issue 24, item 9: a malformed database URL never echoes its password (CLI and service settings)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from cli.main import app

SECRET = "s3cr3t-pw"


@pytest.mark.parametrize(
    "url",
    [f"post gres://admin:{SECRET}@db/x", f"postgresql+psycopg://admin:{SECRET}@db:5432x/x",
     f"postgresql+psycopg://admin:{SECRET}@db:99999/x", f"mysql://admin:{SECRET}@db/x"],
    ids=["scheme", "port-text", "port-range", "backend"],
)
def test_a_bad_database_url_is_named_without_its_password(url: str) -> None:
    result = CliRunner().invoke(app, ["db", "current", "--database-url", url])
    assert result.exit_code == 2, result.output
    assert "admin" in result.stderr or "database" in result.stderr
    assert SECRET not in result.output and SECRET not in result.stderr
