"""Helpers for the probe tests: run the real probe (``python -m probes``) in a subprocess, read its report.

Every run gets its own config directory (the fingerprint salt) so tests never touch the user's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT

SCHEMA_FILE = REPO_ROOT / "compat_service" / "schemas" / "probe-report.v1.json"


@dataclass
class ProbeRun:
    returncode: int
    #: the JSON report the probe wrote (None when it wrote none: the tests assert on both)
    report: Any
    stderr: str

    def check(self, check_id: str) -> dict[str, Any]:
        assert self.report is not None, self.stderr
        found = [c for c in self.report["checks"] if c["id"] == check_id]
        assert found, f"{check_id} not in report: {[c['id'] for c in self.report['checks']]}"
        return found[0]

    def statuses(self) -> dict[str, str]:
        assert self.report is not None, self.stderr
        return {c["id"]: c["status"] for c in self.report["checks"]}


def run_probe(tmp_path: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 240) -> ProbeRun:
    out = tmp_path / "report.json"
    full_env = dict(os.environ)
    full_env["ACCELENV_CONFIG_DIR"] = str(tmp_path / "config")
    full_env.pop("ACCELENV_PROBE_TEST_FAULTS", None)
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-m", "probes", "--output", str(out), *args],
        cwd=REPO_ROOT, env=full_env, capture_output=True, text=True, timeout=timeout,
    )
    report = json.loads(out.read_text()) if out.exists() else None
    return ProbeRun(proc.returncode, report, proc.stderr)


def validate_report(report: dict[str, Any]) -> None:
    """Both ways the service will: the published JSON Schema and the pydantic model."""
    import jsonschema

    from compat_service.domain.evidence.report import ProbeReport

    schema = json.loads(SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator(schema).validate(report)
    ProbeReport.model_validate(report)


def quiet_torch() -> Any:
    """Import torch in the test process; a venv without numpy makes that warn, and warnings are errors."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
        import torch
    return torch


def refdev_available() -> tuple[bool, str]:
    quiet_torch()
    from probes import refdev

    return refdev.availability()


needs_refdev = pytest.mark.skipif(not refdev_available()[0], reason=refdev_available()[1])


def old_python(version: str) -> str | None:
    """An interpreter of ``version`` (e.g. '3.8') on this machine, or None; used to run the bundle there."""
    import shutil

    pyenv = sorted(Path("/root/.pyenv/versions").glob(f"{version}.*/bin/python"))
    for candidate in (shutil.which(f"python{version}"), *pyenv):
        if not candidate:
            continue
        try:
            proc = subprocess.run([str(candidate), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                  capture_output=True, text=True, timeout=30)
        except OSError:
            continue
        if proc.returncode == 0 and proc.stdout.strip() == version:
            return str(candidate)
    return None
