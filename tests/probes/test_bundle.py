"""The single-file probe runs with `python -I` and nothing but torch, from a directory outside the repo."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from probes.harness import bundle
from tests.probes.conftest import needs_refdev, old_python, validate_report

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def bundle_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bundle") / bundle.BUNDLE_NAME
    bundle.write_bundle(str(path))
    return path


def _isolated(args: list[str], cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELENV_", "PYTHON"))}
    env["ACCELENV_CONFIG_DIR"] = str(cwd / "config")
    return subprocess.run([sys.executable, "-I", *args], cwd=cwd, env=env, text=True, capture_output=True,
                          timeout=timeout)


def test_bundle_imports_nothing_but_the_stdlib_and_torch() -> None:
    """Every import statement of every embedded module names the stdlib, torch or the probes themselves.

    (Vendor plugins are imported by name at run time, through device_activation's table.)
    """
    allowed = set(sys.stdlib_module_names) | {"torch", "probes", "__future__"}
    for _, relpath, source in bundle.collect_sources().values():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                roots = {node.module.split(".")[0]}
            else:
                continue
            assert roots <= allowed, f"{relpath} imports {roots - allowed}"


def test_bundle_embeds_every_probe_module(bundle_file: Path) -> None:
    embedded = set(bundle.collect_sources())
    expected = {"probes", "probes.harness.entry", "probes.harness.worker", "probes.harness.runner", "probes.checks.ops",
                "probes.checks.op_table", "probes.refdev"}
    assert expected <= embedded
    text = bundle_file.read_text()
    compile(text, str(bundle_file), "exec")
    for name in expected:
        assert repr(name) in text


def test_bundle_runs_isolated_and_writes_a_valid_report(bundle_file: Path) -> None:
    out = bundle_file.parent / "report.json"
    proc = _isolated([str(bundle_file), "--device", "cpu", "--checks", "detect,smoke,distributed",
                      "--output", str(out)], bundle_file.parent)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    validate_report(report)
    assert {c["group"] for c in report["checks"]} == {"detect", "smoke", "distributed"}
    assert report["summary"]["ok"] is True
    # The installed package is importable in this venv too; the workers must still run the bundle's code.
    assert report["environment"]["extra"]["probe_origin"] == "bundle"


def test_bundle_workers_recover_from_a_crash_in_isolation(bundle_file: Path) -> None:
    env_faults = "crash:smoke.train_step"
    cwd = bundle_file.parent
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELENV_", "PYTHON"))}
    env.update(ACCELENV_PROBE_TEST_FAULTS=env_faults, ACCELENV_CONFIG_DIR=str(cwd / "config"))
    proc = subprocess.run([sys.executable, "-I", str(bundle_file), "--device", "cpu", "--checks", "smoke", "--quiet"],
                          cwd=cwd, env=env, text=True, capture_output=True, timeout=240)
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    statuses = {c["id"]: c["status"] for c in report["checks"]}
    assert statuses == {"smoke.train_step": "crashed", "smoke.cpu_agreement": "passed", "smoke.checkpoint": "passed"}


@needs_refdev
def test_bundle_carries_the_reference_backend(bundle_file: Path) -> None:
    out = bundle_file.parent / "refdev.json"
    proc = _isolated([str(bundle_file), "--device", "refdev", "--checks", "detect", "--output", str(out)],
                     bundle_file.parent)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["environment"]["backend"] == "refdev"


@pytest.mark.parametrize("version", ["3.8", "3.9"])
def test_bundle_runs_on_old_python_and_reports_what_is_missing(bundle_file: Path, version: str) -> None:
    """On an interpreter without torch the probe still runs end to end and says why nothing was probed."""
    python = old_python(version)
    if python is None:
        pytest.skip(f"no Python {version} on this machine")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELENV_", "PYTHON"))}
    env["ACCELENV_CONFIG_DIR"] = str(bundle_file.parent / "config")
    proc = subprocess.run([python, "-I", str(bundle_file), "--device", "cpu", "--quiet"], cwd=bundle_file.parent,
                          env=env, capture_output=True, text=True, timeout=120)
    report = json.loads(proc.stdout)
    validate_report(report)
    assert report["environment"]["python_version"].startswith(version + ".")
    if report["environment"]["torch_version"] == "unknown":
        assert proc.returncode == 1
        assert report["checks"][0]["id"] == "detect.torch_build" and report["checks"][0]["status"] == "error"
        assert "torch cannot be imported" in report["checks"][0]["detail"]
    else:  # that interpreter has torch: then the whole suite ran there
        from probes.checks.registry import DEFAULT

        assert {c["group"] for c in report["checks"]} == set(DEFAULT)


def test_a_failed_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.mkdir()  # os.replace onto a directory fails: what `--bundle /tmp` used to hit
    with pytest.raises(IsADirectoryError):
        bundle.write_bundle(str(target))
    assert [p.name for p in tmp_path.iterdir()] == ["taken"] and list(target.iterdir()) == []
