"""The hostile-report set, on SQLite and PostgreSQL: each case is sent alone and inside a batch with a valid
report; it is either refused with a 4xx naming the problem (the batch's valid item stored all the same) or
stored as documented. Afterwards every stored row traces to an acknowledged report and every counter
equals a recount from the stored reports (tests/evidence/recount.py)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from fastapi.testclient import TestClient

from compat_service.api.deps import state_of
from tests.evidence.conftest import make_token
from tests.evidence.recount import assert_counters_equal_a_recount
from tests.synthetic_reports import synthetic_report

Mutation = Callable[[dict[str, Any]], Any]


def _set(path: str, value: Any) -> Mutation:
    def mutate(report: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = report
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[int(last) if last.isdigit() else last] = value
    return mutate


def _delete(path: str) -> Mutation:
    def mutate(report: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = report
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        del target[int(last) if last.isdigit() else last]
    return mutate


def _raw(text: str) -> Mutation:
    return lambda _report: text


#: name -> (mutation, expected): "refused" (4xx naming the problem) or "stored"
CASES: dict[str, tuple[Mutation, str]] = {
    "not-json": (_raw("{nope"), "refused"),
    "array": (_raw("[]"), "refused"),
    "string": (_raw('"report"'), "refused"),
    "null": (_raw("null"), "refused"),
    "nested-10000": (_raw("[" * 10_000 + "]" * 10_000), "refused"),
    "objects-10000": (_raw('{"a":' * 10_000 + "1" + "}" * 10_000), "refused"),
    "no-environment": (_delete("environment"), "refused"),
    "no-checks": (_delete("checks"), "refused"),
    "extra-field": (_set("hostname", "box.example"), "refused"),
    "schema-v2": (_set("schema_version", "2"), "refused"),
    "bad-uuid": (_set("report_id", "not-a-uuid"), "refused"),
    "created-at-number": (_set("created_at", 0), "refused"),
    "created-at-edge-low": (_set("created_at", "0001-01-01T00:00:00+05:00"), "refused"),
    "created-at-edge-high": (_set("created_at", "9999-12-31T23:59:59-05:00"), "refused"),
    "created-at-garbage": (_set("created_at", "yesterday"), "refused"),
    "os-unknown": (_set("environment.os", "beos"), "refused"),
    "backend-grows-lowercased": (_set("environment.backend", "İ" * 32), "refused"),
    "arch-grows-lowercased": (_set("environment.arch", "İ" * 32), "refused"),
    "backend-empty": (_set("environment.backend", ""), "refused"),
    "torch-only-local": (_set("environment.torch_version", "+cu121"), "refused"),
    "python-blank": (_set("environment.python_version", "   "), "refused"),
    "fingerprint-short": (_set("environment.host_fingerprint", "abc"), "refused"),
    "fingerprint-huge": (_set("environment.host_fingerprint", "f" * 10_000), "refused"),
    "nul-in-detail": (_set("checks.0.detail", "a\x00b"), "refused"),
    "nul-in-key": (_set("checks.0.data", {"a\x00": 1}), "refused"),
    "duration-inf": (_set("checks.0.duration_s", float("inf")), "refused"),
    "duration-negative": (_set("checks.0.duration_s", -1.0), "refused"),
    "duration-bool": (_set("checks.0.duration_s", True), "refused"),
    "duration-string": (_set("checks.0.duration_s", "0.1"), "refused"),
    "data-nan": (_set("checks.3.data.err", float("nan")), "refused"),
    "total-string": (_set("summary.total", "7"), "refused"),
    "ok-int": (_set("summary.ok", 1), "refused"),
    "status-unknown": (_set("checks.0.status", "fine"), "refused"),
    "group-unknown": (_set("checks.0.group", "magic"), "refused"),
    "check-id-spaces": (_set("checks.0.id", "rm -rf /"), "refused"),
    "too-many-devices": (_set("devices", [{"index": i, "type": "cpu"} for i in range(65)]), "refused"),
    "detail-huge": (_set("checks.0.detail", "x" * 5000), "refused"),
    "index-negative": (_set("devices.0.index", -1), "refused"),
    "summary-lies": (_set("summary", {"total": 1, "counts": {"passed": 1}, "ok": True}), "stored"),
    "unicode-everywhere": (_set("environment.device_name", "GPU 🚀 \u202e ﷽"), "stored"),
    "sql-in-strings": (_set("checks.0.detail", "'; DROP TABLE probe_report;--"), "stored"),
    "integral-floats": (_set("devices.0.index", 3.0), "stored"),
    "offset-timestamp": (_set("created_at", "2026-01-02T03:04:05+14:00"), "stored"),
    "naive-timestamp": (_set("created_at", "2026-01-02T03:04:05"), "stored"),
    "big-finite-number": (_set("checks.3.data.err", 1.7e308), "stored"),
    "deep-but-allowed": (_set("checks.3.data.tree", json.loads('{"a":' * 50 + "1" + "}" * 50)), "stored"),
    "failing-ops": (lambda r: r.update(synthetic_report(statuses={"ops.mm.default.float32": "crashed"},
                                                        report_id=r["report_id"])), "stored"),
}


def _body(name: str) -> tuple[str, str]:
    report = synthetic_report(host=name[:10])
    report_id = report["report_id"]
    mutation, _ = CASES[name]
    replaced = mutation(report)
    text = replaced if isinstance(replaced, str) else json.dumps(report)
    return report_id, text


def test_hostile_reports_are_refused_by_name_or_stored_as_documented(database_url: str) -> None:
    from compat_service.api.app import create_app
    from compat_service.config import Settings

    app = create_app(Settings(database_url=database_url, auto_migrate=True, load_matrix_on_start=False))
    acknowledged: set[str] = set()
    with TestClient(app, raise_server_exceptions=False) as client:
        auth = {"Authorization": f"Bearer {make_token(state_of(app).engine)}", "Content-Type": "application/json"}
        for name, (_, expected) in CASES.items():
            report_id, text = _body(name)
            single = client.post("/v1/reports", content=text.encode("utf-8", "surrogatepass"), headers=auth)
            if expected == "refused":
                assert 400 <= single.status_code < 500, (name, single.status_code, single.text[:300])
                error = single.json()
                assert error["code"] and error["message"] and error["hint"], (name, error)
            else:
                assert single.status_code in (200, 201), (name, single.text[:500])
                acknowledged.add(report_id)
            # the same case as an NDJSON line beside a valid report: items are independent
            good = synthetic_report(host="batch")
            _, line = _body(name)  # a new report_id
            batch = client.post("/v1/reports/batch", content=(json.dumps(good) + "\n" + line).encode(),
                                headers=auth | {"Content-Type": "application/x-ndjson"})
            assert batch.status_code == 200, (name, batch.text[:300])
            first, second = batch.json()["results"]
            assert first["status"] == "created", (name, first)
            acknowledged.add(good["report_id"])
            if expected == "refused":
                assert second["status"] == "invalid" and second["error"]["message"], (name, second)
            else:
                assert second["status"] in ("created", "exists"), (name, second)
                acknowledged.add(second["report_id"])
    engine = state_of(app).engine
    with engine.connect() as conn:
        stored = set(conn.execute(sa.text("SELECT report_id FROM probe_report")).scalars())
        bodies = [json.loads(b) for b in conn.execute(sa.text("SELECT body FROM probe_report")).scalars()]
    assert stored == acknowledged
    for body in bodies:  # the stored summary is the one the checks add up to
        statuses = [c["status"] for c in body["checks"]]
        assert body["summary"]["total"] == len(statuses)
        assert body["summary"]["ok"] == (not {"failed", "timeout", "crashed", "error"} & set(statuses))
    assert assert_counters_equal_a_recount(engine) == len(acknowledged)
    engine.dispose()


def test_the_set_is_what_the_issue_lists() -> None:
    """Cases and their expectations stay a readable table: no case without a verdict."""
    assert len(CASES) >= 45
    assert {expected for _, expected in CASES.values()} == {"refused", "stored"}
    assert copy.deepcopy(synthetic_report())  # the base report itself is valid (sent by every batch)
