"""The service's side of issue 23: a report whose smoke or models group failed (``unsupported`` included) never
counts as passing for its cell; a cell keeps the perf figures of its newest report and /matrix shows them."""

from __future__ import annotations

import datetime as dt
from typing import Any

from tests.evidence.conftest import Service
from tests.synthetic_reports import synthetic_report


def _with_models(report: dict[str, Any], status: str) -> dict[str, Any]:
    report["checks"].append({"id": "models.resnet.train.float32", "group": "models", "status": status,
                             "duration_s": 0.1, "detail": None if status == "passed" else
                             "resnet train_float32 on refdev needs aten::max_pool2d_with_indices_backward",
                             "data": {}})
    return report


def _with_perf(report: dict[str, Any], matmul: float, created: dt.datetime) -> dict[str, Any]:
    report["created_at"] = created.isoformat()
    report["checks"].append({"id": "perf.matmul", "group": "perf", "status": "passed", "duration_s": 0.2,
                             "detail": "128x128 matmul", "data": {}})
    report["perf"] = {"figures": [
        {"name": "matmul.float32", "unit": "FLOP/s", "value": matmul, "cpu_value": 1.0e11, "peak_fraction": 0.25,
         "check": "perf.matmul"},
        {"name": "models.resnet.step", "unit": "s", "value": 0.004, "cpu_value": 0.009, "check": "perf.model_steps"},
    ]}
    return report


def _query(report: dict[str, Any]) -> dict[str, str]:
    env = report["environment"]
    return {"torch": env["torch_version"], "build": env["torch_build"], "python": env["python_version"],
            "os": env["os"], "arch": env["arch"], "backend": env["backend"]}


def test_a_report_whose_models_group_is_unsupported_is_not_passing(service: Service) -> None:
    for host in ("a", "b"):
        report = _with_models(synthetic_report(host=host, backend="refdev", build="cpu"), "unsupported")
        assert service.submit(report).status_code == 201
    detail = service.client.get("/v1/evidence", params=_query(report), headers=service.read_auth).json()
    # unsupported in a train group is bad: the device cannot train, so the cell is broken, never verified
    assert (detail["health"], detail["passing_hosts"]) == ("broken", 0)
    assert [f["id"] for f in detail["failing_checks"]] == ["models.resnet.train.float32"]
    stored = service.client.get(f"/v1/reports/{report['report_id']}", headers=service.read_auth).json()
    assert stored["summary"]["ok"] is False  # the summary the service derives follows the same rule


def test_passing_models_leave_the_cell_verifiable(service: Service) -> None:
    for host in ("a", "b"):
        report = _with_models(synthetic_report(host=host, backend="refdev", build="cpu"), "passed")
        assert service.submit(report).status_code == 201
    detail = service.client.get("/v1/evidence", params=_query(report)).json()
    assert (detail["health"], detail["passing_hosts"]) == ("verified", 2)


def test_a_cell_keeps_the_newest_reports_perf_figures_and_the_matrix_page_shows_them(service: Service) -> None:
    day = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)
    newer = _with_perf(synthetic_report(host="a", backend="refdev", build="cpu"), 2.5e12, day)
    older = _with_perf(synthetic_report(host="b", backend="refdev", build="cpu"), 1.0e9, day - dt.timedelta(days=3))
    assert service.submit(newer).status_code == 201
    assert service.submit(older).status_code == 201  # arrives later, measured earlier: the figures stay
    detail = service.client.get("/v1/evidence", params=_query(newer)).json()
    figures = {f["name"]: f for f in detail["perf"]}
    assert figures["matmul.float32"]["value"] == 2.5e12 and figures["matmul.float32"]["peak_fraction"] == 0.25
    assert figures["models.resnet.step"]["cpu_value"] == 0.009
    rows = service.client.get("/v1/matrix", params={"status": "observed", "backend": "refdev"}).json()["items"]
    assert rows[0]["perf"][0]["name"] == "matmul.float32"
    page = service.client.get("/matrix", params={"torch": rows[0]["torch_version"], "build": rows[0]["torch_build"]})
    assert page.status_code == 200
    assert "How fast (newest report with perf figures)" in page.text
    assert "matmul.float32 2.5 TFLOP/s (cpu 100 GFLOP/s, 25% of peak)" in page.text
    assert "models.resnet.step 4 ms (cpu 9 ms)" in page.text


def test_a_report_without_perf_leaves_the_figures(service: Service) -> None:
    day = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)
    first = _with_perf(synthetic_report(host="a", backend="refdev", build="cpu"), 3.0e12, day)
    plain = synthetic_report(host="b", backend="refdev", build="cpu")
    assert service.submit(first).status_code == 201
    assert service.submit(plain).status_code == 201
    detail = service.client.get("/v1/evidence", params=_query(first)).json()
    assert detail["perf"][0]["value"] == 3.0e12


def test_the_report_page_lists_the_perf_figures_and_a_train_gap_as_failing(service: Service) -> None:
    day = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)
    report = _with_perf(_with_models(synthetic_report(host="a", backend="refdev", build="cpu"), "unsupported"),
                        2.5e12, day)
    assert service.submit(report).status_code == 201
    page = service.client.get(f"/reports/{report['report_id']}", headers=service.read_auth)
    assert page.status_code == 200, page.text[:300]
    assert "How fast" in page.text and "matmul.float32 2.5 TFLOP/s (cpu 100 GFLOP/s, 25% of peak)" in page.text
    assert "1 checks failed" in page.text  # the models check the device could not run
