"""Real probe reports through the real service (SQLite and PostgreSQL): ingest, idempotency, statuses,
the matrix and evidence views, and refusals that store nothing."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import sqlalchemy as sa

from tests.evidence.conftest import Service, variant

BAD = {"failed", "timeout", "crashed", "error"}


def _cell_query(report: dict[str, Any]) -> dict[str, str]:
    """GET /v1/evidence parameters for the cell a report belongs to, spelled as the probe reported them."""
    env = report["environment"]
    query = {
        "torch": env["torch_version"], "python": env["python_version"], "os": env["os"], "arch": env["arch"],
        "backend": env["backend"],
    }
    optional = {
        "build": env["torch_build"], "runtime": env["runtime_version"], "driver": env["driver_version"],
        "device_arch": env["device_arch"],
    }
    return query | {k: v for k, v in optional.items() if v is not None}


def _stored_reports(service: Service) -> int:
    with service.engine.connect() as conn:
        return conn.execute(sa.text("SELECT count(*) FROM probe_report")).scalar_one()


def test_cpu_reports_turn_a_declared_cell_verified(service: Service, report_of) -> None:
    first = report_of("cpu")
    query = _cell_query(first)

    before = service.client.get("/v1/evidence", params=query)
    assert before.status_code == 200
    assert (before.json()["status"], before.json()["reports"]) == ("declared", 0)

    created = service.submit(first)
    assert created.status_code == 201, created.text
    assert created.json()["created"] is True
    one_host = service.client.get("/v1/evidence", params=query).json()
    # one host is not enough (verified_min_hosts = 2): still declared, the evidence is counted
    assert (one_host["status"], one_host["health"], one_host["reports"], one_host["hosts"]) == (
        "declared", "unconfirmed", 1, 1)

    again = service.submit(first)
    assert again.status_code == 200 and again.json()["created"] is False
    assert service.client.get("/v1/evidence", params=query).json()["reports"] == 1

    second = variant(first, host="second")
    assert service.submit(second).status_code == 201
    detail = service.client.get("/v1/evidence", params=query, headers=service.read_auth).json()
    assert (detail["status"], detail["reports"], detail["hosts"], detail["passing_hosts"]) == ("verified", 2, 2, 2)
    expected = Counter(c["status"] for c in first["checks"] + second["checks"])
    assert {k: v for k, v in detail["counts"].items() if v} == dict(expected)
    assert detail["failing_checks"] == []
    assert set(detail["recent_report_ids"]) == {first["report_id"], second["report_id"]}
    assert detail["first_seen"] <= detail["last_seen"]

    env = first["environment"]
    page = service.client.get(
        "/v1/matrix",
        params={"torch": env["torch_version"].split("+")[0], "build": env["torch_build"],
                "python": query["python"].rsplit(".", 1)[0], "os": env["os"], "arch": env["arch"]},
    ).json()
    rows = [r for r in page["items"] if r["backend"] == "cpu"]
    assert [(r["status"], r["reports"], r["hosts"]) for r in rows] == [("verified", 2, 2)]

    stored = service.client.get(f"/v1/reports/{first['report_id']}", headers=service.read_auth)
    assert stored.status_code == 200
    assert stored.json()["report_id"] == first["report_id"]
    assert stored.json()["checks"] == first["checks"]


@pytest.mark.parametrize(
    ("case", "health", "failing_prefix", "failing_status"),
    [
        pytest.param("refdev", "verified", None, None, id="refdev-healthy"),
        pytest.param("refdev_missing_op", "partial", "ops.sort.", "unsupported", id="missing-op-partial"),
        # the probe reports an OOM in a check as failed or error depending on where it surfaced
        pytest.param("refdev_oom", "broken", "smoke.train_step", None, id="oom-in-smoke-broken"),
        pytest.param("refdev_smoke_crash", "broken", "smoke.train_step", "crashed", id="crash-in-smoke-broken"),
    ],
)
def test_refdev_reports_are_observed_with_their_health(
    service: Service, report_of, case: str, health: str, failing_prefix: str | None, failing_status: str | None
) -> None:
    report = report_of(case)
    for host in ("a", "b"):
        assert service.submit(variant(report, host=host)).status_code == 201

    detail = service.client.get("/v1/evidence", params=_cell_query(report), headers=service.read_auth).json()
    # refdev is not in the declared matrix: observed, whatever its health
    assert (detail["declared"], detail["status"], detail["health"], detail["hosts"]) == (False, "observed", health, 2)
    failing = {f["id"]: f for f in detail["failing_checks"]}
    if failing_prefix is None:
        assert failing == {}
    else:
        named = [fid for fid in failing if fid.startswith(failing_prefix)]
        assert named, failing
        assert {fid: failing[fid]["bad"] for fid in named} == dict.fromkeys(named, 2)
        if failing_status is not None:
            checks = {c["id"]: c for c in detail["checks"]}
            assert {fid: checks[fid]["counts"][failing_status] for fid in named} == dict.fromkeys(named, 2)
        assert all(failing[fid]["last_failure"] for fid in named)

    observed = service.client.get("/v1/matrix", params={"status": "observed", "backend": "refdev"}).json()
    assert [(r["health"], r["reports"]) for r in observed["items"]] == [(health, 2)]
    if failing_prefix is not None:
        assert any(c.startswith(failing_prefix) for c in observed["items"][0]["failing_checks"])


def _schema_violation(report: dict[str, Any]) -> dict[str, Any]:
    report["checks"][0]["status"] = "exploded"
    return report


def _missing_environment(report: dict[str, Any]) -> dict[str, Any]:
    del report["environment"]
    return report


@pytest.mark.parametrize(
    ("mutate", "status", "code", "names"),
    [
        pytest.param(_schema_violation, 422, "report-invalid", "checks.0.status", id="bad-check-status"),
        pytest.param(_missing_environment, 422, "report-invalid", "environment", id="no-environment"),
    ],
)
def test_invalid_reports_are_refused_naming_the_problem(
    service: Service, report_of, mutate, status: int, code: str, names: str
) -> None:
    response = service.submit(mutate(report_of("cpu")))
    assert response.status_code == status
    body = response.json()
    assert body["code"] == code
    assert any(names in cause["origin"] for cause in body["causes"]), body
    assert _stored_reports(service) == 0


def test_malformed_oversized_and_unauthenticated_bodies_store_nothing(service: Service, report_of) -> None:
    report = report_of("cpu")
    not_json = service.client.post("/v1/reports", content=b"{not json", headers=service.auth)
    assert (not_json.status_code, not_json.json()["code"]) == (422, "report-invalid")
    assert "not valid JSON" in not_json.json()["message"]

    huge = service.client.post("/v1/reports", content=b" " * 1_100_000, headers=service.auth)
    assert (huge.status_code, huge.json()["code"]) == (413, "body-too-large")

    anonymous = service.client.post("/v1/reports", json=report)
    assert (anonymous.status_code, anonymous.json()["code"]) == (401, "unauthorized")
    wrong_token = service.client.post("/v1/reports", json=report, headers={"Authorization": "Bearer acv_nope"})
    assert wrong_token.status_code == 401
    assert _stored_reports(service) == 0


def test_nul_characters_are_refused_on_every_database(service: Service, report_of) -> None:
    """PostgreSQL text cannot hold U+0000: such a report is a 422 naming where, never a 500, on both stores."""
    report = report_of("cpu")
    report["environment"]["driver_version"] = "550\x00.54"
    report["checks"][0]["detail"] = "garbage \x00 from a vendor tool"
    response = service.submit(report)
    assert (response.status_code, response.json()["code"]) == (422, "report-invalid"), response.text
    origins = {cause["origin"] for cause in response.json()["causes"]}
    assert origins == {"report.environment.driver_version", "report.checks.0.detail"}

    clean = variant(report_of("cpu"))
    batch = service.client.post("/v1/reports/batch", json=[report, clean], headers=service.auth)
    assert [item["status"] for item in batch.json()["results"]] == ["invalid", "created"], batch.text
    assert _stored_reports(service) == 1


def test_a_reused_report_id_with_other_content_is_a_conflict(service: Service, report_of) -> None:
    report = report_of("cpu")
    assert service.submit(report).status_code == 201
    tampered = variant(report)
    tampered["report_id"] = report["report_id"]
    tampered["checks"] = tampered["checks"][:1]
    tampered["summary"]["total"] = 1
    response = service.submit(tampered)
    assert (response.status_code, response.json()["code"]) == (409, "report-id-conflict")
    stored = service.client.get(f"/v1/reports/{report['report_id']}", headers=service.read_auth)
    assert stored.json()["checks"] == report["checks"]
    assert _stored_reports(service) == 1


def test_lookups_that_find_nothing_answer_with_error_bodies(service: Service, report_of) -> None:
    missing = service.client.get("/v1/reports/00000000-0000-4000-8000-000000000000", headers=service.read_auth)
    assert (missing.status_code, missing.json()["code"]) == (404, "not-found")
    not_uuid = service.client.get("/v1/reports/not-a-uuid")  # names no report: the path takes only UUIDs
    assert (not_uuid.status_code, not_uuid.json()["code"]) == (404, "not-found")
    unknown = service.client.get(
        "/v1/evidence", params={"torch": "2.13.0", "python": "3.11", "os": "linux", "arch": "x86_64",
                                "backend": "nosuchdevice"},
    )
    assert (unknown.status_code, unknown.json()["code"]) == (404, "not-found")
    bad_status = service.client.get("/v1/matrix", params={"status": "great"})
    assert (bad_status.status_code, bad_status.json()["code"]) == (422, "invalid-request")


def test_matrix_pages_carry_an_etag_that_changes_with_evidence(service: Service, report_of) -> None:
    query = {"torch": "2.13", "python": "3.11", "os": "linux", "limit": 5}
    first = service.client.get("/v1/matrix", params=query)
    etag = first.headers["etag"]
    assert service.client.get("/v1/matrix", params=query, headers={"If-None-Match": etag}).status_code == 304
    assert first.json()["limit"] == 5 and len(first.json()["items"]) <= 5
    assert service.submit(report_of("cpu")).status_code == 201
    assert service.client.get("/v1/matrix", params=query).headers["etag"] != etag
