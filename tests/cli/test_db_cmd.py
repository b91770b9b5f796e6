"""`accelenv db ...` and `accelenv token ...` through the real CLI on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from compat_service.domain.matrix.loader import default_path

runner = CliRunner()


def accelenv(database_url: str, *args: str):  # noqa: ANN201 - click Result
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
    "url",
    ["not a url", "mysql://u@h/db"],
    ids=["garbage", "unsupported-backend"],
)
def test_bad_database_url_is_exit_2(url: str) -> None:
    res = runner.invoke(app, ["db", "current", "--database-url", url])
    assert res.exit_code == 2
    assert "invalid-request" in res.stderr and "Traceback" not in res.output


def test_serve_refuses_an_unmigrated_postgres(postgres_database: str) -> None:
    res = runner.invoke(app, ["serve", "--port", "1", "--database-url", postgres_database])
    assert res.exit_code == 9
    assert "database-not-ready" in res.stderr and "accelenv db upgrade" in res.stderr


def test_serve_without_auto_migrate_refuses_an_empty_sqlite(sqlite_url: str) -> None:
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
