"""GET /v1/probe serves the runnable bundle and GET /v1/schemas/probe-report the published schema, and
the service's POST /v1/reports takes what the probe writes (201, then 200 on resend), through the real
app (create_app over a fresh SQLite database) and the CLI's submit/spool code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cli import report_spool
from cli.service_client import ServiceClient
from compat_service.api.app import create_app
from compat_service.api.deps import state_of
from compat_service.config import Settings
from compat_service.db.matrix.tables import ApiTokenCreate
from compat_service.db.tokens import create_token
from probes.harness import bundle
from tests.probes.conftest import SCHEMA_FILE, run_probe, validate_report


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    db = tmp_path_factory.mktemp("db") / "accelenv.sqlite3"
    with TestClient(create_app(Settings(database_url=f"sqlite:///{db}"))) as test_client:
        yield test_client


def test_schema_endpoint_serves_the_published_file(client: TestClient) -> None:
    response = client.get("/v1/schemas/probe-report")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/schema+json")
    assert response.json() == json.loads(SCHEMA_FILE.read_text())


def test_probe_endpoint_serves_the_bundle_as_a_download(client: TestClient) -> None:
    response = client.get("/v1/probe")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/x-python")
    assert f'filename="{bundle.BUNDLE_NAME}"' in response.headers["content-disposition"]
    assert response.text == bundle.build_bundle_source()
    assert "etag" in response.headers


@pytest.mark.torch
def test_the_served_bundle_runs_isolated(client: TestClient, tmp_path: Path) -> None:
    path = tmp_path / bundle.BUNDLE_NAME
    path.write_text(client.get("/v1/probe").text)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELENV_", "PYTHON"))}
    env["ACCELENV_CONFIG_DIR"] = str(tmp_path / "config")
    proc = subprocess.run([sys.executable, "-I", str(path), "--device", "cpu", "--checks", "detect", "--quiet"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    validate_report(json.loads(proc.stdout))


@pytest.fixture(scope="module")
def report_token(client: TestClient) -> str:
    _, secret = create_token(state_of(client.app).engine, ApiTokenCreate(scope="report", note="probe tests"))
    return secret


@pytest.mark.torch
def test_the_service_stores_a_real_probe_report_once(client: TestClient, report_token: str, tmp_path: Path) -> None:
    run = run_probe(tmp_path, "--device", "cpu", "--checks", "detect,smoke,amp")
    body = json.dumps(run.report).encode()
    service = ServiceClient("http://testserver", token=report_token, client=client)
    assert service.post_report(body) == 201
    assert service.post_report(body) == 200
    _, reader = create_token(state_of(client.app).engine, ApiTokenCreate(scope="read", note="probe tests"))
    stored = client.get(f"/v1/reports/{run.report['report_id']}", headers={"Authorization": f"Bearer {reader}"})
    assert stored.status_code == 200 and stored.json()["report_id"] == run.report["report_id"]


@pytest.mark.torch
def test_spooled_reports_reach_the_service(client: TestClient, report_token: str, tmp_path: Path) -> None:
    run = run_probe(tmp_path, "--device", "cpu", "--checks", "detect")
    spool = tmp_path / "spool"
    report_spool.spool(run.report, spool)
    refused = report_spool.submit_spooled("http://testserver", "not-a-token", spool, client=client)
    assert refused.sent == [] and refused.kept[0][1].code == "unauthorized"
    result = report_spool.submit_spooled("http://testserver", report_token, spool, client=client)
    assert [p.stem for p in result.sent] == [run.report["report_id"]] and result.kept == []
    assert list(spool.iterdir()) == []
