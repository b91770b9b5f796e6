"""Schemathesis over the live service's OpenAPI document: every operation, bodies included, with and
without a token, on SQLite and PostgreSQL. Passing means no 5xx, and every answer's status, content type,
headers and body match what the document declares (all of Schemathesis' checks; the exceptions, with their
reasons, are in tests/api/schemathesis.toml). NUL characters are not generated: the service refuses them
everywhere by design (tests/api/test_bad_input.py covers that).

CI runs a bounded number of examples per operation (8; ~1 800 cases over the two runs, see ``_phases``).
The long run (every phase, with and without a token, both databases; ACCELENV_FUZZ_EXAMPLES per operation):

    ACCELENV_TEST_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:5432/test ACCELENV_FUZZ_EXAMPLES=300 \\
        .venv/bin/python -m pytest tests/api/test_fuzz_openapi.py -q -s -p no:cacheprovider --timeout 3600
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.evidence.live_server import LiveServer, live_server

EXAMPLES = int(os.environ.get("ACCELENV_FUZZ_EXAMPLES", "8"))
CONFIG = Path(__file__).with_name("schemathesis.toml")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(max(300, EXAMPLES * 60))]


def _st() -> str:
    found = Path(sys.executable).with_name("st")
    if not found.is_file():
        pytest.skip("schemathesis is not installed (pip install -e '.[test]')")
    return str(found)


ALL_PHASES = "examples,coverage,fuzzing,stateful"
#: the long run: every phase, with and without a token, on both databases
LONG_RUN = "ACCELENV_FUZZ_EXAMPLES" in os.environ


def _phases(database: str, token: str) -> str | None:
    """Which Schemathesis phases a run takes; None = not in this run.

    With the admin token, the `ignored_auth` check also sends each report request without it (401 expected), so
    the token run covers "without a token" too; the separate tokenless run belongs to the long run. In CI
    the coverage phase (each schema's edges: boundaries, wrong types, missing fields; ~1 500 cases) runs on
    SQLite, PostgreSQL gets random fuzzing and the stateful phase (~300 cases), to stay near a minute.
    """
    if LONG_RUN:
        return ALL_PHASES
    if token == "none":
        return None
    return ALL_PHASES if database == "sqlite" else "fuzzing,stateful"


@pytest.fixture(scope="module")
def server(shared_database_url: str) -> Iterator[LiveServer]:
    with live_server(shared_database_url, workers=2, load_matrix=True) as running:
        yield running


@pytest.fixture(scope="module")
def admin_token(server: LiveServer) -> Iterator[tuple[int, str]]:
    """An admin token (every route, raw reports and withdrawals included) whose id is well above the ids the
    fuzzer tries on POST /v1/tokens/{id}/withdraw first (1, 2, ...): the tokens before it are decoys."""
    from compat_service.db.engine import make_engine
    from compat_service.db.matrix.tables import ApiTokenCreate
    from compat_service.db.tokens import create_token

    engine = make_engine(server.database_url)
    for _ in range(40):
        create_token(engine, ApiTokenCreate(scope="report", note="fuzz decoy"))
    public, secret = create_token(engine, ApiTokenCreate(scope="admin", note="fuzz"))
    engine.dispose()
    yield public.id, secret


@pytest.mark.parametrize("token", ["admin", "none"])
def test_the_published_api_survives_fuzzing(
    server: LiveServer, admin_token: tuple[int, str], token: str, tmp_path: Path
) -> None:
    database = "sqlite" if server.database_url.startswith("sqlite") else "postgres"
    phases = _phases(database, token)
    if phases is None:
        pytest.skip("the tokenless run is part of the long run (ACCELENV_FUZZ_EXAMPLES); CI's token run "
                    "checks every report route without its token too (Schemathesis' ignored_auth)")
    cmd = [
        _st(), "--config-file", str(CONFIG), "run", server.base_url + "/openapi.json",
        "--checks", "all", "--max-examples", str(EXAMPLES), "--seed", "14", "--workers", "1",
        "--phases", phases,
        "--generation-allow-x00", "false", "--generation-database", "none", "--no-color",
        "--request-timeout", "30", "--report", "json", "--report-dir", str(tmp_path),
    ]
    if token != "none":
        cmd += ["--header", f"Authorization: Bearer {admin_token[1]}"]
    env = os.environ | {"SCHEMATHESIS_HOOKS": "tests.api.fuzz_hooks", "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=EXAMPLES * 600)
    (report_file,) = tmp_path.glob("*.json")
    report = json.loads(report_file.read_text())
    cases = report["test_cases"]
    print(f"schemathesis ({database}, {token} token, {phases}): {cases['generated']} cases, "
          f"{cases['unique_failures']} failures")
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-2000:]
    assert cases["unique_failures"] == 0 and cases["errored"] == 0, cases
    assert report["operations"]["tested"] == report["operations"]["total"], report["operations"]
    # the report routes were reached past the token check (401 alone would test nothing)
    if token != "none":
        assert "Authentication failed" not in proc.stdout, proc.stdout[-4000:]
        assert _still_valid(server.database_url, admin_token[0]), "the run withdrew its own token: fuzz again"
    shutil.rmtree(tmp_path / ".hypothesis", ignore_errors=True)


def _still_valid(database_url: str, token_id: int) -> bool:
    import sqlalchemy as sa

    from compat_service.db.engine import make_engine

    engine = make_engine(database_url)
    with engine.connect() as conn:
        revoked = conn.execute(sa.text("SELECT revoked_at FROM api_token WHERE id = :i"), {"i": token_id}).scalar()
    engine.dispose()
    return revoked is None
