"""`accelenv doctor` on fake hosts: the host through the documented override variables (what CI and odd
hosts use), the installed packages through a fake site-packages holding only package metadata, the matrix
and evidence real."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli.main import app
from tests.evidence.conftest import Service, as_cpu_cell, variant

HOST_VARS = ("ACCELENV_BACKEND", "ACCELENV_DRIVER_VERSION", "ACCELENV_GPU_ARCH")


def site_packages(tmp_path: Path, **versions: str) -> Path:
    """A directory with a .dist-info per package: what importlib.metadata reads in a real environment."""
    root = tmp_path / "site-packages"
    root.mkdir(exist_ok=True)
    for name, version in versions.items():
        info = root / f"{name}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return root


def _host(
    monkeypatch: pytest.MonkeyPatch, backend: str, driver: str | None = None, gpu_arch: str | None = None
) -> None:
    for name, value in zip(HOST_VARS, (backend, driver, gpu_arch), strict=True):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)


def _doctor(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(app, ["doctor", "--format", "json", *args])
    return result.exit_code, json.loads(result.stdout)


def _failed(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["check"]: f for f in report["findings"] if f["severity"] == "error"}


@pytest.mark.parametrize(
    ("host", "packages", "failing", "fix_has"),
    [
        pytest.param(("cuda", "580.95.05", "sm_90"), {"torch": "2.13.0+cpu"}, "build",
                     "pip uninstall -y torch\npip install torch==2.13.0",
                     id="cpu-build-on-nvidia-host"),
        pytest.param(("cuda", "580.95.05", "sm_120"), {"torch": "2.13.0+cu126"}, "gpu-arch",
                     "pip install torch==2.13.0",
                     id="build-without-kernels-for-the-gpu"),
        pytest.param(("cuda", "470.57.02", "sm_90"), {"torch": "2.13.0+cu126"}, "driver", "upgrade the driver",
                     id="driver-below-floor"),
        pytest.param(("cpu", None, None), {"torch": "2.13.0+cpu", "torchvision": "0.20.0+cpu"}, "torchvision",
                     "torchvision==0.28.0", id="companion-of-another-release"),
        pytest.param(("cpu", None, None), {"torch": "2.13.0+cpu", "torchvision": "0.28.0+cu126"}, "torchvision",
                     "cpu index", id="companion-of-another-build"),
        pytest.param(("cpu", None, None), {}, "torch", "pip install", id="torch-missing"),
    ],
)
def test_doctor_names_the_problem_and_its_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host: tuple[str, str | None, str | None],
    packages: dict[str, str], failing: str, fix_has: str,
) -> None:
    _host(monkeypatch, *host)
    code, report = _doctor("--site-packages", str(site_packages(tmp_path, **packages)))
    assert code == 1
    assert report["ok"] is False
    problems = _failed(report)
    assert list(problems) == [failing], problems
    assert fix_has in problems[failing]["fix"]


def test_a_matching_install_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _host(monkeypatch, "cuda", "580.95.05", "sm_90")
    packages = site_packages(tmp_path, torch="2.13.0+cu130", torchvision="0.28.0+cu130")
    code, report = _doctor("--site-packages", str(packages))
    assert (code, report["ok"], report["build"]) == (0, True, "cu130")
    assert {f["check"] for f in report["findings"]} >= {"torch", "build", "gpu-arch", "driver", "torchvision"}


def test_a_combination_reports_mark_broken_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, service: Service, report_of, database_url: str
) -> None:
    report = as_cpu_cell(report_of("refdev_oom"))
    for host in ("one", "two"):
        assert service.submit(variant(report, host=host)).status_code == 201
    env = report["environment"]  # probed by this interpreter, so its Python is the host's
    _host(monkeypatch, "cpu")
    packages = site_packages(tmp_path, torch=env["torch_version"])
    code, result = _doctor("--site-packages", str(packages), "--database", database_url)
    assert code == 1
    problem = _failed(result)["evidence"]
    assert "broken" in problem["message"] and "smoke.train_step" in problem["message"]
    assert problem["fix"]


def test_a_missing_site_packages_dir_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["doctor", "--site-packages", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert "is not a directory" in result.stderr
