"""One list each: the check statuses and the failing ones (the probes keep their own copy, since they cannot
import the service: pinned equal here), and the cell statuses every reader takes from the domain."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from compat_service.domain.evidence.report import CHECK_STATUSES, ProbeReport
from compat_service.domain.evidence.status import BAD_STATUSES, CELL_STATUSES
from compat_service.domain.resolver.resolution_schema import SCHEMA_FILE
from probes.checks import outcome


def test_the_probes_statuses_are_the_domains() -> None:
    assert outcome.STATUSES == CHECK_STATUSES
    assert set(outcome.BAD_STATUSES) == BAD_STATUSES and len(outcome.BAD_STATUSES) == len(BAD_STATUSES)
    assert BAD_STATUSES < set(CHECK_STATUSES)


def test_the_published_report_schema_lists_the_check_statuses() -> None:
    schema = ProbeReport.model_json_schema()
    check = schema["$defs"]["CheckResult"]["properties"]["status"]
    assert tuple(check["enum"]) == CHECK_STATUSES


def test_the_resolution_schema_and_the_matrix_filter_take_the_cell_statuses_from_the_domain(client: TestClient) -> None:
    resolution = json.loads(Path(SCHEMA_FILE).read_text())
    verdicts = resolution["$defs"]["EvidenceBody"]["properties"]["status"]["enum"]
    assert tuple(verdicts) + ("observed",) == CELL_STATUSES
    parameters = client.get("/openapi.json").json()["paths"]["/v1/matrix"]["get"]["parameters"]
    status = next(p for p in parameters if p["name"] == "status")
    enum = next(s["enum"] for s in status["schema"].get("anyOf", [status["schema"]]) if "enum" in s)
    assert tuple(enum) == CELL_STATUSES
