"""Evidence no one submitter can forge (issue 14, item 9), on SQLite and PostgreSQL.

A cell is `verified` by passing reports from ACCELENV_VERIFIED_MIN_HOSTS distinct hosts AND
ACCELENV_VERIFIED_MIN_SUBMITTERS distinct tokens: one token inventing a second host fingerprint no longer
verifies anything. An admin withdraws a token's evidence (API and CLI): its reports and everything they
added to the counters go, the token is revoked, and every counter equals a recount of what is left.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from cli.main import app as cli_app
from compat_service.api.deps import state_of
from tests.evidence.conftest import make_token
from tests.evidence.recount import assert_counters_equal_a_recount
from tests.synthetic_reports import synthetic_report

CELL = {"torch": "2.13.0", "build": "cpu", "python": "3.11", "os": "linux", "arch": "x86_64", "backend": "cpu"}


@dataclass
class Trust:
    client: TestClient
    app: Any
    tokens: dict[str, str]

    def post(self, who: str, report: dict[str, Any]) -> Any:
        return self.client.post("/v1/reports", json=report, headers={"Authorization": f"Bearer {self.tokens[who]}"})

    def cell(self) -> dict[str, Any]:
        res = self.client.get("/v1/evidence", params=CELL)
        assert res.status_code == 200, res.text
        return res.json()

    def heatmap_status(self) -> str:
        """The status of the 2.13.0 x cpu square of the matrix page for CELL's platform and Python."""
        page = self.client.get("/matrix", params={"platform": "linux-x86_64", "python": CELL["python"]})
        assert page.status_code == 200, page.text
        found = re.search(r'data-torch="2\.13\.0" data-build="cpu" data-status="(\w+)"', page.text)
        assert found, page.text[:300]
        return found[1]

    def resolve_verified(self) -> Any:
        """GET /v1/resolve for CELL's torch and Python with require_verified: 200 only on a verified cell."""
        return self.client.get("/v1/resolve", params={"torch": CELL["torch"], "python": CELL["python"],
                                                      "require_verified": "true"})

    def matrix_status(self) -> str:
        rows = self.client.get("/v1/matrix", params={k: CELL[k] for k in ("torch", "build", "python", "os")}).json()
        (row,) = [r for r in rows["items"] if r["arch"] == "x86_64" and r["backend"] in ("cpu", None)]
        return row["status"]


def _trust(database_url: str, **settings: Any) -> Iterator[Trust]:
    from compat_service.api.app import create_app
    from compat_service.config import Settings

    app = create_app(Settings(database_url=database_url, auto_migrate=True, matrix_refresh_s=0,
                              token_cache_s=0, **settings))
    with TestClient(app) as client:
        engine = state_of(app).engine
        tokens = {name: make_token(engine, scope) for name, scope in
                  (("alice", "report"), ("bob", "report"), ("admin", "admin"))}
        yield Trust(client=client, app=app, tokens=tokens)


@pytest.fixture
def trust(database_url: str) -> Iterator[Trust]:
    yield from _trust(database_url)


def test_one_token_with_made_up_fingerprints_does_not_verify(trust: Trust) -> None:
    for host in ("a", "b", "c"):
        assert trust.post("alice", synthetic_report(host=host)).status_code == 201
    cell = trust.cell()
    assert (cell["hosts"], cell["passing_hosts"], cell["submitters"], cell["passing_submitters"]) == (3, 3, 1, 1)
    assert cell["status"] == "declared" and cell["health"] == "unconfirmed"
    assert trust.matrix_status() == "declared"
    assert trust.heatmap_status() == "declared"  # the matrix page applies the same thresholds
    resolved = trust.resolve_verified()
    assert resolved.status_code == 409, resolved.text


def test_two_tokens_on_two_hosts_verify(trust: Trust) -> None:
    assert trust.post("alice", synthetic_report(host="a")).status_code == 201
    assert trust.post("bob", synthetic_report(host="b")).status_code == 201
    cell = trust.cell()
    assert (cell["passing_hosts"], cell["passing_submitters"], cell["status"]) == (2, 2, "verified")
    resolved = trust.resolve_verified()
    assert resolved.status_code == 200, resolved.text


def _owned_token(trust: Trust, name: str, owner: str) -> None:
    from compat_service.db.matrix.tables import ApiTokenCreate
    from compat_service.db.tokens import create_token

    trust.tokens[name] = create_token(state_of(trust.app).engine, ApiTokenCreate(scope="report", owner=owner))[1]


def test_two_tokens_of_one_owner_cannot_verify_a_cell(trust: Trust) -> None:
    """Issue 34: one person holding two tokens (the admin gave both the same --owner) on two hosts is one
    submitter; a report of another owner verifies the cell."""
    _owned_token(trust, "carol-1", "carol")
    _owned_token(trust, "carol-2", "carol")
    assert trust.post("carol-1", synthetic_report(host="a")).status_code == 201
    assert trust.post("carol-2", synthetic_report(host="b")).status_code == 201
    cell = trust.cell()
    assert (cell["passing_hosts"], cell["submitters"], cell["passing_submitters"]) == (2, 1, 1)
    assert cell["status"] == "declared" and trust.matrix_status() == "declared"
    assert trust.resolve_verified().status_code == 409

    _owned_token(trust, "dave", "dave")
    assert trust.post("dave", synthetic_report(host="c")).status_code == 201
    assert (trust.cell()["passing_submitters"], trust.cell()["status"]) == (2, "verified")
    # withdrawing one of carol's tokens leaves her other token's report counting for her
    carol_1 = _token_id(trust, "carol-1")
    assert trust.client.post(f"/v1/tokens/{carol_1}/withdraw", headers=_auth(trust, "admin")).status_code == 200
    assert (trust.cell()["passing_submitters"], trust.cell()["status"]) == (2, "verified")
    assert_counters_equal_a_recount(state_of(trust.app).engine)


def test_two_tokens_on_one_host_do_not_verify(trust: Trust) -> None:
    assert trust.post("alice", synthetic_report(host="a")).status_code == 201
    assert trust.post("bob", synthetic_report(host="a")).status_code == 201
    assert trust.cell()["status"] == "declared"


def test_the_thresholds_are_settings(database_url: str) -> None:
    for trust in _trust(database_url, verified_min_submitters=1, verified_min_hosts=3):
        for host in ("a", "b"):
            trust.post("alice", synthetic_report(host=host))
        assert trust.cell()["status"] == "declared"
        trust.post("alice", synthetic_report(host="c"))
        assert trust.cell()["status"] == "verified"


def test_an_admin_withdraws_a_tokens_evidence(trust: Trust) -> None:
    assert trust.post("alice", synthetic_report(host="a")).status_code == 201
    forged = [synthetic_report(host=h) for h in ("x", "y")]
    forged.append(synthetic_report(host="x", statuses={"ops.mm.default.float32": "failed"}))
    for report in forged:
        assert trust.post("bob", report).status_code == 201
    assert trust.cell()["status"] == "partial"

    bob_id = _token_id(trust, "bob")
    refused = trust.client.post(f"/v1/tokens/{bob_id}/withdraw", headers=_auth(trust, "alice"))
    assert refused.status_code == 403
    res = trust.client.post(f"/v1/tokens/{bob_id}/withdraw", headers=_auth(trust, "admin"))
    assert res.status_code == 200, res.text
    assert res.json()["reports_withdrawn"] == 3 and res.json()["token"]["revoked_at"]

    cell = trust.cell()
    assert (cell["reports"], cell["hosts"], cell["passing_hosts"], cell["submitters"]) == (1, 1, 1, 1)
    assert cell["status"] == "declared" and cell["failing_checks"] == []
    assert trust.post("bob", synthetic_report(host="z")).status_code == 401
    for report in forged:
        assert trust.client.get(f"/v1/reports/{report['report_id']}", headers=_auth(trust, "admin")).status_code == 404
    assert_counters_equal_a_recount(state_of(trust.app).engine)
    # withdrawing again finds nothing more
    again = trust.client.post(f"/v1/tokens/{bob_id}/withdraw", headers=_auth(trust, "admin"))
    assert again.json()["reports_withdrawn"] == 0


def test_the_cli_withdraws_too(trust: Trust, database_url: str) -> None:
    for host in ("a", "b"):
        assert trust.post("bob", synthetic_report(host=host)).status_code == 201
    assert trust.post("alice", synthetic_report(host="c")).status_code == 201
    result = CliRunner().invoke(
        cli_app, ["token", "withdraw", str(_token_id(trust, "bob")), "--database-url", database_url]
    )
    assert result.exit_code == 0, result.output
    assert "2 report(s)" in result.output
    assert trust.cell()["reports"] == 1
    assert_counters_equal_a_recount(state_of(trust.app).engine)
    missing = CliRunner().invoke(cli_app, ["token", "withdraw", "999", "--database-url", database_url])
    assert missing.exit_code == 3


def _auth(trust: Trust, who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {trust.tokens[who]}"}


def _token_id(trust: Trust, who: str) -> int:
    from compat_service.db.tokens import list_tokens

    rows = list_tokens(state_of(trust.app).engine)
    order = list(trust.tokens)
    return rows[order.index(who)].id
