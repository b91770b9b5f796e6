"""`/metrics` counts submitted probe reports by outcome, single and batch, from real probe reports."""

from __future__ import annotations

from tests.evidence.conftest import Service, variant


def test_metrics_count_reports_by_outcome(service: Service, report_of) -> None:
    report = report_of("cpu")
    assert service.submit(report).status_code == 201
    assert service.submit(report).status_code == 200
    batch = [variant(report), {"report_id": "not-a-report"}]
    res = service.client.post("/v1/reports/batch", json=batch, headers=service.auth)
    assert [r["status"] for r in res.json()["results"]] == ["created", "invalid"]
    text = service.client.get("/metrics").text
    assert 'accelenv_reports_ingested_total{outcome="created"} 2.0' in text
    assert 'accelenv_reports_ingested_total{outcome="exists"} 1.0' in text
    assert 'accelenv_reports_ingested_total{outcome="invalid"} 1.0' in text
