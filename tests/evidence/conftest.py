"""Fixtures for the evidence loop: real probe reports, and the real service over a fresh database.

Reports come from the real probe CLI run once per test session in a subprocess (CPU, and the bundled
refdev backend with injected faults). When the probe suite cannot produce them the tests that need them
skip with the reason.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from compat_service.api.deps import state_of
from tests.conftest import REPO_ROOT

#: name -> `accelenv probe` arguments; what each is expected to become is asserted by the tests
PROBE_CASES: dict[str, list[str]] = {
    "cpu": ["--device", "cpu"],
    "refdev": ["--device", "refdev"],
    # the probe reports a missing kernel as `unsupported`; sort is not used by the smoke train step
    "refdev_missing_op": ["--device", "refdev", "--inject", "missing:aten::sort"],
    "refdev_oom": ["--device", "refdev", "--inject", "oom"],
    # addmm is what nn.Linear runs: the smoke train step itself crashes. Each crash costs a worker
    # restart, so only the smoke group runs.
    "refdev_smoke_crash": ["--device", "refdev", "--inject", "crash:aten::addmm", "--checks", "smoke"],
}
PROBE_TIMEOUT_S = 180


def _run_probe(name: str, args: list[str], out_dir: Path) -> dict[str, Any] | str:
    """The report JSON, or a reason why the probe could not produce one."""
    out = out_dir / f"{name}.json"
    cmd = [sys.executable, "-m", "cli.main", "probe", *args, "--output", str(out)]
    try:
        proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"`accelenv probe {' '.join(args)}` ran past {PROBE_TIMEOUT_S}s"
    if not out.is_file():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return f"`accelenv probe {' '.join(args)}` wrote no report (exit {proc.returncode}): {' | '.join(tail)}"
    return json.loads(out.read_text())


def _run_probes(out_dir: Path) -> dict[str, dict[str, Any] | str]:
    # The crash case restarts its worker per crashed check (slow); run the probes side by side.
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {name: pool.submit(_run_probe, name, args, out_dir) for name, args in PROBE_CASES.items()}
        return {name: future.result() for name, future in futures.items()}


@pytest.fixture(scope="session")
def probe_reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any] | str]:
    """Each report once per run: under pytest-xdist the first worker to get here runs the probes, under a lock
    in the temp folder the workers share, and the others read what it wrote (the xdist docs' recipe)."""
    import fcntl

    shared = tmp_path_factory.getbasetemp().parent  # the run's folder: each xdist worker's basetemp is under it
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return _run_probes(tmp_path_factory.mktemp("probe-reports"))
    written = shared / "evidence-probe-reports.json"
    with open(shared / "evidence-probe-reports.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if written.is_file():
            return json.loads(written.read_text())
        reports = _run_probes(tmp_path_factory.mktemp("probe-reports"))
        written.write_text(json.dumps(reports))
        return reports


@pytest.fixture
def report_of(probe_reports: dict[str, dict[str, Any] | str]):
    """``report_of(name)``: a deep copy of that probe report, or skip saying why it is missing."""

    def get(name: str) -> dict[str, Any]:
        found = probe_reports[name]
        if isinstance(found, str):
            pytest.skip(f"probe suite not available for {name!r}: {found}")
        return copy.deepcopy(found)

    return get


def variant(report: dict[str, Any], *, host: str | None = None) -> dict[str, Any]:
    """The same probe run as if made again (new report_id) on host ``host`` (fingerprint)."""
    copied = copy.deepcopy(report)
    copied["report_id"] = str(uuid.uuid4())
    if host is not None:
        copied["environment"]["host_fingerprint"] = f"host-{host}".ljust(16, "0")
    return copied


def as_cpu_cell(report: dict[str, Any]) -> dict[str, Any]:
    """A refdev report relabelled as the CPU backend of the same torch build (see test_resolver_evidence)."""
    report["environment"]["backend"] = "cpu"
    report["environment"]["device_arch"] = None
    return report


@dataclass
class Service:
    client: TestClient
    engine: Engine
    token: str
    #: a `read` token: raw reports, report ids and failure texts (docs/service.md)
    read_token: str = ""
    #: a second `report` token: a second submitter (the trust model counts tokens too)
    other_token: str = ""

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    @property
    def read_auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.read_token}"}

    def submit(self, report: dict[str, Any], *, other: bool = False):
        """POST the report with the report token (``other``: the second submitter's)."""
        token = self.other_token if other else self.token
        return self.client.post("/v1/reports", json=report, headers={"Authorization": f"Bearer {token}"})


def make_token(engine: Engine, scope: str = "report") -> str:
    from compat_service.db.matrix.tables import ApiTokenCreate
    from compat_service.db.tokens import create_token

    _public, secret = create_token(engine, ApiTokenCreate(scope=scope, note="evidence tests"))
    return secret


@pytest.fixture
def service(database_url: str) -> Iterator[Service]:
    """The real app over a fresh database (migrated, bundled matrix loaded), and a `report` token."""
    from compat_service.api.app import create_app
    from compat_service.config import Settings

    # matrix_refresh_s=0: the resolve cache sees new evidence at once
    # one token submits everything here: these tests count hosts; the submitter rule (how many tokens make
    # a cell verified) has its own tests in test_trust_model.py
    settings = Settings(
        database_url=database_url, auto_migrate=True, verified_min_hosts=2, verified_min_submitters=1,
        matrix_refresh_s=0,
    )
    app = create_app(settings)
    with TestClient(app) as client:
        engine = state_of(app).engine
        yield Service(client=client, engine=engine, token=make_token(engine), read_token=make_token(engine, "read"),
                      other_token=make_token(engine))
