"""Report bodies that once got a 500 or were stored other than the schema says (issue 14, items 1, 2, 3, 5
and 11), on SQLite and PostgreSQL: each is now a 422 naming the problem, or stored exactly as documented,
and a batch item failing that way leaves the other items stored."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.testclient import TestClient

from compat_service.api.deps import state_of
from tests.evidence.conftest import make_token
from tests.synthetic_reports import synthetic_report

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "compat_service/schemas/probe-report.v1.json").read_text())


@pytest.fixture(scope="module")
def auth(app: FastAPI) -> dict[str, str]:
    return {"Authorization": f"Bearer {make_token(state_of(app).engine)}"}


@pytest.fixture(scope="module")
def http(client: TestClient, auth: dict[str, str]) -> Iterator[TestClient]:
    client.headers.update(auth)
    yield client


def _post(http: TestClient, body: bytes | str) -> Any:
    return http.post("/v1/reports", content=body, headers={"Content-Type": "application/json"})


def _assert_invalid(res: Any, *names: str) -> dict[str, Any]:
    assert res.status_code == 422, res.text
    body = res.json()
    assert body["code"] == "report-invalid" and body["hint"], body
    text = json.dumps(body)
    for name in names:
        assert name in text, (name, body)
    return body


def _stored(app: FastAPI, report_id: str) -> str | None:
    with state_of(app).engine.connect() as conn:
        return conn.execute(
            sa.text("SELECT body FROM probe_report WHERE report_id = :r"), {"r": report_id}
        ).scalar()


# ---------------------------------------------------------------- 1: deep nesting


@pytest.mark.parametrize(
    "body",
    ["[" * 10_000 + "]" * 10_000, '{"a":' * 10_000 + "1" + "}" * 10_000, "[" * 995 + "]" * 995],
    ids=["arrays-10000", "objects-10000", "arrays-995"],
)
def test_deeply_nested_body_is_a_named_422(http: TestClient, body: str) -> None:
    _assert_invalid(_post(http, body), "JSON")
    # the connection and the service carry on
    assert http.get("/healthz").status_code == 200


def test_deep_nesting_inside_check_data_is_a_named_422(http: TestClient) -> None:
    report = synthetic_report()
    report["checks"][0]["data"] = "__DATA__"
    text = json.dumps(report).replace('"__DATA__"', '{"a":' * 1000 + "1" + "}" * 1000)
    _assert_invalid(_post(http, text))


def test_deeply_nested_ndjson_line_is_one_invalid_item(app: FastAPI, http: TestClient) -> None:
    good = synthetic_report()
    lines = [json.dumps(good), "[" * 10_000 + "]" * 10_000, '{"a":' * 10_000 + "1" + "}" * 10_000]
    res = http.post(
        "/v1/reports/batch", content="\n".join(lines), headers={"Content-Type": "application/x-ndjson"}
    )
    assert res.status_code == 200, res.text
    statuses = [r["status"] for r in res.json()["results"]]
    assert statuses == ["created", "invalid", "invalid"]
    assert "line 2" in res.json()["results"][1]["error"]["message"]
    assert _stored(app, good["report_id"]) is not None


def test_deeply_nested_array_batch_is_a_named_422(http: TestClient) -> None:
    res = http.post("/v1/reports/batch", content="[" * 10_000 + "]" * 10_000,
                    headers={"Content-Type": "application/json"})
    _assert_invalid(res, "JSON")


# ---------------------------------------------------------------- 2: created_at at the edge of the range


@pytest.mark.parametrize("created_at", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00"])
def test_created_at_outside_the_utc_range_is_a_named_422(http: TestClient, created_at: str) -> None:
    report = synthetic_report()
    report["created_at"] = created_at
    _assert_invalid(_post(http, json.dumps(report)), "created_at")


def test_created_at_at_the_edge_leaves_the_rest_of_a_batch_stored(app: FastAPI, http: TestClient) -> None:
    edge, good = synthetic_report(), synthetic_report()
    edge["created_at"] = "9999-12-31T23:59:59-05:00"
    res = http.post("/v1/reports/batch", json=[edge, good])
    assert res.status_code == 200, res.text
    assert [r["status"] for r in res.json()["results"]] == ["invalid", "created"]
    assert "created_at" in json.dumps(res.json()["results"][0]["error"])
    assert _stored(app, good["report_id"]) is not None and _stored(app, edge["report_id"]) is None


# ---------------------------------------------------------------- 3: strings that grow when normalised


@pytest.mark.parametrize(("field", "limit"), [("backend", 32), ("arch", 32)])
def test_a_key_part_longer_than_its_column_once_lowercased_is_a_422(
    app: FastAPI, http: TestClient, field: str, limit: int
) -> None:
    report = synthetic_report()
    report["environment"][field] = "İ" * limit  # 32 characters; lowercased, 64
    assert len(report["environment"][field].lower()) > limit
    body = _assert_invalid(_post(http, json.dumps(report)), field)
    assert str(limit) in json.dumps(body)
    assert _stored(app, report["report_id"]) is None


# ---------------------------------------------------------------- 5: strict types, finite numbers


def _set(report: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    target: Any = report
    for part in parents:
        target = target[int(part)] if part.isdigit() else target[part]
    target[int(last) if last.isdigit() else last] = value


@pytest.mark.parametrize(
    ("path", "raw"),
    [
        ("checks.0.duration_s", "1e309"),
        ("checks.0.duration_s", "-1e309"),
        ("checks.0.duration_s", "NaN"),
        ("checks.0.duration_s", "true"),
        ("checks.0.duration_s", '"0.5"'),
        ("summary.ok", "0"),
        ("summary.total", '"5"'),
        ("created_at", "0"),
        ("devices.0.index", "true"),
        ("checks.3.data.max_abs_err", "1e309"),
        ("checks.3.data.max_abs_err", "Infinity"),
        ("environment.extra.x", "[NaN]"),
    ],
    ids=[
        "duration-inf", "duration-minus-inf", "duration-nan", "duration-bool", "duration-string", "ok-int",
        "total-string", "created-at-number", "index-bool", "data-inf", "data-infinity-literal", "extra-nan",
    ],
)
def test_coercible_or_non_finite_values_are_refused(app: FastAPI, http: TestClient, path: str, raw: str) -> None:
    report = synthetic_report()
    marker = "__VALUE__"
    _set(report, path, marker)
    text = json.dumps(report).replace(f'"{marker}"', raw)
    body = _assert_invalid(_post(http, text))
    assert path.split(".")[-1] in json.dumps(body) or path.split(".")[0] in json.dumps(body)
    assert _stored(app, report["report_id"]) is None


# ---------------------------------------------------------------- 11: empty key parts, derived summary


@pytest.mark.parametrize(
    ("field", "value"),
    [("torch_version", ""), ("torch_version", "+cu121"), ("python_version", " "), ("backend", ""),
     ("arch", ""), ("torch_version", "   ")],
    ids=["torch-empty", "torch-only-local", "python-blank", "backend-empty", "arch-empty", "torch-blank"],
)
def test_empty_cell_key_parts_are_refused(app: FastAPI, http: TestClient, field: str, value: str) -> None:
    report = synthetic_report()
    report["environment"][field] = value
    _assert_invalid(_post(http, json.dumps(report)), field)
    assert _stored(app, report["report_id"]) is None


def test_the_summary_is_derived_from_the_checks(app: FastAPI, http: TestClient) -> None:
    report = synthetic_report(statuses={"smoke.train_step": "crashed", "ops.sort.default.float32": "failed"})
    report["summary"] = {"total": 99, "counts": {"passed": 99}, "ok": True}  # what the client claims
    res = _post(http, json.dumps(report))
    assert res.status_code == 201, res.text
    stored = json.loads(_stored(app, report["report_id"]) or "null")
    assert stored["summary"] == {
        "total": 7, "counts": {"passed": 5, "crashed": 1, "failed": 1}, "ok": False
    }
    with state_of(app).engine.connect() as conn:
        ok = conn.execute(sa.text("SELECT ok FROM probe_report WHERE report_id = :r"),
                          {"r": report["report_id"]}).scalar()
    assert not ok
    # the same report sent again (any claimed summary) is the same report
    report["summary"] = {"total": 7, "counts": {"passed": 7}, "ok": True}
    assert _post(http, json.dumps(report)).status_code == 200


def test_every_stored_body_validates_against_the_published_schema(app: FastAPI, http: TestClient) -> None:
    report = synthetic_report()
    report["checks"][3]["data"]["max_abs_err"] = 1e308
    report["created_at"] = "2026-01-02T03:04:05+05:00"
    assert _post(http, json.dumps(report)).status_code == 201
    with state_of(app).engine.connect() as conn:
        bodies = conn.execute(sa.text("SELECT body FROM probe_report")).scalars().all()
    assert bodies
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for body in bodies:
        validator.validate(json.loads(body))
    stored = json.loads(_stored(app, report["report_id"]) or "null")
    assert stored["checks"][3]["data"]["max_abs_err"] == 1e308


def test_an_integral_float_is_the_integer(app: FastAPI, http: TestClient) -> None:
    """JSON Schema's integer includes 2.0; it is stored as 2 (a string or a bool is never a number)."""
    report = synthetic_report()
    report["devices"][0]["index"] = 2.0
    report["devices"][0]["total_memory_bytes"] = 1024.0
    assert _post(http, json.dumps(report)).status_code == 201
    stored = json.loads(_stored(app, report["report_id"]) or "null")
    assert stored["devices"][0]["index"] == 2 and isinstance(stored["devices"][0]["index"], int)
    assert stored["devices"][0]["total_memory_bytes"] == 1024
