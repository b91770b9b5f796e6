"""An error has the same code and exit code locally (`--database FILE`) and through a live server on that file.

The server is a real uvicorn on loopback (tests/evidence/live_server.py) over a migrated SQLite file; the local
path opens the same file. Both paths render the error as JSON (`--format json`), so the code is compared too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from cli.resolve_cmd import main as resolve_main
from compat_service.db.engine import make_engine
from compat_service.domain.resolver.request import api_wording
from tests.evidence.live_server import live_server

TARGET = ["--backend", "cpu", "--python", "3.11", "--os", "linux", "--arch", "x86_64", "--with", "none",
          "--torch", "latest", "--format", "json"]


def _resolve(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code = resolve_main([*TARGET, *args])
    out = capsys.readouterr().out
    return code, json.loads(out)


@pytest.fixture
def sqlite_file(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'accelenv.sqlite3'}"


def test_require_verified_without_reports_is_not_verified_locally_and_through_the_server(
    sqlite_file: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with live_server(sqlite_file, workers=1, load_matrix=True) as server:
        remote = _resolve(capsys, "--require-verified", "--server", server.base_url)
        local = _resolve(capsys, "--require-verified", "--database", sqlite_file)
        # without --require-verified, the same empty database resolves on both paths
        plain_remote = _resolve(capsys, "--server", server.base_url)
        plain_local = _resolve(capsys, "--database", sqlite_file)
    assert (local[0], local[1]["code"]) == (5, "not-verified")
    assert (remote[0], remote[1]["code"]) == (local[0], local[1]["code"])
    # the same causes; the service says them with its parameter names (require_verified=true, not the flag)
    assert remote[1]["causes"] == [
        {k: api_wording(v) if isinstance(v, str) else v for k, v in cause.items()} for cause in local[1]["causes"]
    ]
    assert plain_remote[0] == plain_local[0] == 0
    assert plain_remote[1]["torch"] == plain_local[1]["torch"]


def test_a_database_that_lost_its_evidence_table_is_database_not_ready_on_both_paths(
    sqlite_file: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with live_server(sqlite_file, workers=1, load_matrix=True) as server:
        engine = make_engine(sqlite_file)
        try:
            with engine.begin() as conn:
                conn.execute(sa.text("DROP TABLE evidence_cell"))
        finally:
            engine.dispose()
        remote = _resolve(capsys, "--server", server.base_url)
        local = _resolve(capsys, "--database", sqlite_file)
    assert (local[0], local[1]["code"]) == (9, "database-not-ready")
    assert (remote[0], remote[1]["code"]) == (9, "database-not-ready")


def test_an_unmigrated_database_is_database_not_ready_with_exit_9(
    sqlite_file: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, body = _resolve(capsys, "--database", sqlite_file)
    assert (code, body["code"]) == (9, "database-not-ready")
