"""What is public and what needs a `read` token (issue 14, item 10), on SQLite and PostgreSQL.

Public: aggregates (the matrix, a cell's counts, hosts, submitters, failing check ids). A `read` (or
`admin`) token: raw reports (`GET /v1/reports/{id}`: fingerprint, kernel, CPU, failure details), the
report ids of a cell and its failure texts. Answers that depend on the token are never cached publicly.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from cli.main import app as cli_app
from compat_service.api.deps import state_of
from tests.evidence.conftest import make_token
from tests.synthetic_reports import synthetic_report

CELL = {"torch": "2.13.0", "build": "cpu", "python": "3.11", "os": "linux", "arch": "x86_64", "backend": "cpu"}


@pytest.fixture(scope="module")
def tokens(app: FastAPI) -> dict[str, str]:
    return {scope: make_token(state_of(app).engine, scope) for scope in ("report", "read", "admin")}


@pytest.fixture(scope="module")
def stored(client: TestClient, tokens: dict[str, str]) -> dict[str, Any]:
    report = synthetic_report(statuses={"ops.sort.default.float32": "failed"})
    res = client.post("/v1/reports", json=report, headers=_auth(tokens, "report"))
    assert res.status_code == 201, res.text
    return report


def _auth(tokens: dict[str, str], scope: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {tokens[scope]}"}


def test_a_raw_report_needs_a_read_token(client: TestClient, tokens: dict[str, str], stored: dict[str, Any]) -> None:
    url = f"/v1/reports/{stored['report_id']}"
    anonymous = client.get(url)
    assert anonymous.status_code == 401 and anonymous.json()["code"] == "unauthorized"
    assert "read" in anonymous.json()["hint"]
    assert client.get(url, headers=_auth(tokens, "report")).status_code == 403
    for scope in ("read", "admin"):
        res = client.get(url, headers=_auth(tokens, scope))
        assert res.status_code == 200, res.text
        assert res.json()["environment"]["host_fingerprint"] == stored["environment"]["host_fingerprint"]
        assert "public" not in res.headers["cache-control"] and "private" in res.headers["cache-control"]


def test_evidence_is_public_as_aggregates(client: TestClient, tokens: dict[str, str], stored: dict[str, Any]) -> None:
    public = client.get("/v1/evidence", params=CELL)
    assert public.status_code == 200, public.text
    body = public.json()
    assert body["reports"] >= 1 and body["failing_checks"][0]["id"] == "ops.sort.default.float32"
    assert body["recent_report_ids"] == []
    assert all(c["last_failure"] is None for c in body["checks"] + body["failing_checks"])
    assert "authorization" in public.headers["vary"].lower()
    # a report token reads what the public reads
    assert client.get("/v1/evidence", params=CELL, headers=_auth(tokens, "report")).json() == body

    raw = client.get("/v1/evidence", params=CELL, headers=_auth(tokens, "read"))
    assert raw.status_code == 200
    assert stored["report_id"] in raw.json()["recent_report_ids"]
    assert raw.json()["failing_checks"][0]["last_failure"] == "ops.sort.default.float32 failed on purpose"
    assert "private" in raw.headers["cache-control"]


def test_an_unknown_token_is_refused_not_ignored(client: TestClient) -> None:
    res = client.get("/v1/evidence", params=CELL, headers={"Authorization": "Bearer acv_nosuchtoken"})
    assert res.status_code == 401


def test_the_cli_creates_read_tokens(shared_database_url: str, app: FastAPI) -> None:
    result = CliRunner().invoke(cli_app, ["token", "create", "--scope", "read", "--database-url", shared_database_url])
    assert result.exit_code == 0, result.output
    assert "scope read" in result.output
