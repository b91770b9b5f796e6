"""`accelenv db ...` and `accelenv token ...` through the real CLI on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from compat_service.domain.matrix.loading.loader import default_path

runner = CliRunner()


def accelenv(database_url: str, *args: str):
    return runner.invoke(app, [*args, "--database-url", database_url])


def test_init_load_current(database_url: str, tmp_path: Path) -> None:
    matrix = str(shutil.copytree(default_path(), tmp_path / "matrix_data"))
    before = accelenv(database_url, "db", "current")
    assert before.exit_code == 9
    assert "accelenv db upgrade" in before.stdout
    assert accelenv(database_url, "db", "load").exit_code == 9  # not migrated yet: says so, loads nothing

    init = accelenv(database_url, "db", "init")
    assert init.exit_code == 0, init.output
    assert "0001_matrix_and_tokens" in init.stderr or "at schema" in init.stderr

    first = accelenv(database_url, "db", "load", matrix, "--json")
    assert first.exit_code == 0, first.output
    loaded = json.loads(first.stdout)
    assert loaded["changed"] is True and loaded["counts"]["torch_release"] > 10

    second = accelenv(database_url, "db", "load", matrix, "--json")
    again = json.loads(second.stdout)
    assert again["changed"] is False
    assert (again["load_id"], again["counts"]) == (loaded["load_id"], loaded["counts"])

    current = accelenv(database_url, "db", "current", "--json")
    assert current.exit_code == 0
    assert json.loads(current.stdout)["ready"] is True
    assert json.loads(current.stdout)["matrix_version"] == loaded["content_hash"][:16]

    upgrade = accelenv(database_url, "db", "upgrade")
    assert upgrade.exit_code == 0 and "already at" in upgrade.stderr


def test_bad_matrix_is_exit_4_with_every_problem_and_no_change(database_url: str, tmp_path: Path) -> None:
    assert accelenv(database_url, "db", "init").exit_code == 0
    matrix = str(shutil.copytree(default_path(), tmp_path / "good"))
    good = json.loads(accelenv(database_url, "db", "load", matrix, "--json").stdout)
    broken = tmp_path / "matrix_data"
    shutil.copytree(default_path(), broken)
    (broken / "cuda.yaml").write_text("schema: cuda/v1\ntoolkits: [\n")
    xpu = broken / "sources.yaml"
    xpu.write_text(xpu.read_text().replace("    title:", "    titel:", 1))

    res = accelenv(database_url, "db", "load", str(broken))
    assert res.exit_code == 4
    assert "matrix-invalid" in res.stderr
    assert "cuda.yaml" in res.stderr and "sources.yaml" in res.stderr

    after = json.loads(accelenv(database_url, "db", "load", matrix, "--json").stdout)
    assert after["changed"] is False and after["counts"] == good["counts"]


def test_missing_path_is_a_clear_error(database_url: str, tmp_path: Path) -> None:
    assert accelenv(database_url, "db", "init").exit_code == 0
    res = accelenv(database_url, "db", "load", str(tmp_path / "nowhere"))
    assert res.exit_code == 4
    assert "nowhere" in res.stderr
    assert "Traceback" not in res.output


def test_token_lifecycle(database_url: str) -> None:
    assert accelenv(database_url, "db", "init").exit_code == 0
    created = accelenv(database_url, "token", "create", "--scope", "report", "--note", "ci runner")
    assert created.exit_code == 0, created.output
    secret = created.stdout.strip()
    assert secret.startswith("acv_") and "\n" not in secret
    assert "shown only now" in created.stderr

    listed = accelenv(database_url, "token", "list", "--json")
    tokens = json.loads(listed.stdout)
    assert [(t["scope"], t["note"], t["revoked_at"]) for t in tokens] == [("report", "ci runner", None)]
    assert secret not in listed.stdout and secret not in accelenv(database_url, "token", "list").stdout

    revoked = accelenv(database_url, "token", "revoke", str(tokens[0]["id"]))
    assert revoked.exit_code == 0
    assert json.loads(accelenv(database_url, "token", "list", "--json").stdout)[0]["revoked_at"] is not None


@pytest.mark.parametrize(
    ("args", "exit_code", "code"),
    [
        (["token", "create", "--scope", "root"], 2, "invalid-request"),
        (["token", "revoke", "4242"], 3, "not-found"),
    ],
    ids=["unknown-scope", "unknown-id"],
)
def test_token_errors(database_url: str, args: list[str], exit_code: int, code: str) -> None:
    assert accelenv(database_url, "db", "init").exit_code == 0
    res = accelenv(database_url, *args)
    assert res.exit_code == exit_code
    assert code in res.stderr


@pytest.mark.parametrize(
    ("url", "says"),
    [
        pytest.param("not a url", "not a valid SQLAlchemy URL", id="garbage"),
        pytest.param("mysql://u@h/db", "backend 'mysql' is not supported", id="unsupported-backend"),
        pytest.param("postgresql+nosuch://u@h/db", "postgresql.nosuch", id="unknown-driver"),
        pytest.param("postgresql+psycopg://u@h:abc/db", "Port could not be cast", id="port-not-a-number"),
        pytest.param("postgresql+psycopg://u@h:99999/db", "Port out of range", id="port-out-of-range"),
        pytest.param("postgresql+psycopg://u@127.0.0.1:1/db?connect_timeout=abc", "bad value for connect_timeout",
                     id="bad-connect-timeout"),
        pytest.param("postgresql+psycopg://u@127.0.0.1:1/db?nosuchopt=1", 'invalid connection option "nosuchopt"',
                     id="unknown-option"),
    ],
)
def test_bad_database_url_is_exit_2_before_connecting(url: str, says: str) -> None:
    res = runner.invoke(app, ["db", "current", "--database-url", url])
    assert res.exit_code == 2, res.output
    assert "invalid-request" in res.stderr and says in res.stderr
    assert res.exception is None or isinstance(res.exception, SystemExit)  # no traceback


def test_an_unreachable_database_says_what_the_driver_said(tmp_path: Path) -> None:
    res = runner.invoke(app, ["db", "current", "--database-url", "postgresql+psycopg://u@127.0.0.1:5432/db"
                              "?sslmode=bogus"])
    assert res.exit_code == 9
    assert 'invalid sslmode value: "bogus"' in res.stdout


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["token", "list"], id="token-list"),
        pytest.param(["token", "list", "--json"], id="token-list-json"),
        pytest.param(["token", "revoke", "1"], id="token-revoke"),
        pytest.param(["token", "create", "--scope", "report"], id="token-create"),
        pytest.param(["db", "load"], id="db-load"),
        pytest.param(["db", "current"], id="db-current"),
    ],
)
def test_a_missing_sqlite_file_is_named_and_not_created(tmp_path: Path, args: list[str]) -> None:
    missing = tmp_path / "typo.sqlite3"
    res = accelenv(f"sqlite:///{missing}", *args)
    assert res.exit_code == 9, res.output
    assert f"the database file {missing} does not exist" in res.output and "accelenv db init" in res.output
    assert list(tmp_path.iterdir()) == []


def test_token_list_on_the_default_missing_database_creates_nothing(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "data" / "accelenv.sqlite3"
    monkeypatch.setenv("ACCELENV_DATABASE_URL", f"sqlite:///{missing}")
    res = runner.invoke(app, ["token", "list"])
    assert res.exit_code == 9 and "does not exist" in res.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_too_long_token_note_is_named_and_stores_nothing(database_url: str) -> None:
    assert accelenv(database_url, "db", "init").exit_code == 0
    res = accelenv(database_url, "token", "create", "--scope", "report", "--note", "n" * 5000)
    assert res.exit_code == 2, res.output
    assert "invalid --note" in res.stderr and "got 5000 characters" in res.stderr
    assert "255 characters" in res.stderr and "ValidationError" not in res.output
    assert json.loads(accelenv(database_url, "token", "list", "--json").stdout) == []


def test_token_create_json(database_url: str) -> None:
    assert accelenv(database_url, "db", "init").exit_code == 0
    res = accelenv(database_url, "token", "create", "--scope", "admin", "--note", "ci", "--json")
    assert res.exit_code == 0, res.output
    created = json.loads(res.stdout)
    assert created["token"].startswith("acv_") and (created["scope"], created["note"]) == ("admin", "ci")
    listed = json.loads(accelenv(database_url, "token", "list", "--json").stdout)
    assert [t["id"] for t in listed] == [created["id"]] and "token" not in listed[0]


def test_serve_refuses_an_unmigrated_postgres(postgres_database: str) -> None:
    res = runner.invoke(app, ["serve", "--port", "1", "--database-url", postgres_database])
    assert res.exit_code == 9
    assert "database-not-ready" in res.stderr and "accelenv db upgrade" in res.stderr


def test_serve_without_auto_migrate_refuses_a_missing_sqlite_and_creates_nothing(sqlite_url: str,
                                                                                 tmp_path: Path) -> None:
    res = runner.invoke(app, ["serve", "--port", "1", "--no-auto-migrate", "--database-url", sqlite_url])
    assert res.exit_code == 9
    assert "does not exist" in res.stderr and "accelenv db upgrade" in res.stderr
    assert list(tmp_path.iterdir()) == []


def test_serve_without_auto_migrate_refuses_an_empty_sqlite(sqlite_url: str, tmp_path: Path) -> None:
    import sqlite3

    sqlite3.connect(tmp_path / "accelenv.sqlite3").close()  # the file exists, with no schema
    res = runner.invoke(app, ["serve", "--port", "1", "--no-auto-migrate", "--database-url", sqlite_url])
    assert res.exit_code == 9
    assert "not migrated" in res.stderr and "accelenv db upgrade" in res.stderr


def test_bad_settings_in_the_environment_are_named_not_a_traceback(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCELENV_TOKEN_CACHE_S", "soon")
    monkeypatch.setenv("ACCELENV_MAX_BATCH_REPORTS", "0")
    res = runner.invoke(app, ["serve", "--port", "1", "--database-url", sqlite_url])
    assert res.exit_code == 2, res.output
    assert "invalid-request" in res.stderr and "Traceback" not in res.output
    assert "ACCELENV_MAX_BATCH_REPORTS, ACCELENV_TOKEN_CACHE_S" in res.stderr
    assert "'soon'" in res.stderr
