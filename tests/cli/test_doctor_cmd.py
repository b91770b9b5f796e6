"""`accelenv doctor` through the real command: the host through the documented override variables, the
installed packages through a fake site-packages holding real-shaped package metadata (METADATA, WHEEL,
torch/version.py), the matrix and the resolver real."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli.main import app
from compat_service.domain.matrix.loading.snapshot import load_matrix_cached
from compat_service.domain.resolver.install_formats import render
from compat_service.domain.resolver.request import ResolveRequest
from compat_service.domain.resolver.stages import resolve
from probes.host.facts import glibc_version

HOST_VARS = ("ACCELENV_BACKEND", "ACCELENV_DRIVER_VERSION", "ACCELENV_GPU_ARCH")


def install(root: Path, name: str, version: str, *, wheel_tag: str | None = None,
            cuda: str | None = None) -> None:
    """A .dist-info as pip leaves it; for torch also torch/version.py with its build constants."""
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    if wheel_tag:
        (info / "WHEEL").write_text(f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {wheel_tag}\n")
    if name == "torch":
        (root / "torch").mkdir()
        (root / "torch" / "version.py").write_text(
            "from typing import Optional\n\n"
            f"__version__ = '{version}'\ndebug = False\ncuda: Optional[str] = {cuda!r}\n"
            "git_version = 'abc'\nhip: Optional[str] = None\n"
        )


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch):
    def set_host(backend: str | None, driver: str | None = None, gpu_arch: str | None = None) -> None:
        for name, value in zip(HOST_VARS, (backend, driver, gpu_arch), strict=True):
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, value)

    return set_host


def doctor(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(app, ["doctor", "--json", *args])
    return result.exit_code, json.loads(result.stdout)


def by_check(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["check"]: f for f in report["findings"]}


def test_json_and_the_older_format_json_agree(tmp_path: Path, host) -> None:
    host("cpu")
    install(tmp_path, "torch", "2.13.0+cpu", wheel_tag="cp311-cp311-manylinux_2_28_x86_64")
    new = CliRunner().invoke(app, ["doctor", "--json", "--site-packages", str(tmp_path)])
    old = CliRunner().invoke(app, ["doctor", "--format", "json", "--site-packages", str(tmp_path)])
    assert new.exit_code == old.exit_code == 0, new.output
    assert json.loads(new.stdout) == json.loads(old.stdout)
    bad = CliRunner().invoke(app, ["doctor", "--format", "xml"])
    assert bad.exit_code == 2 and "--format 'xml' is not an output format" in bad.stderr


@pytest.mark.parametrize("value", ["bogus", "auto", "cu 126"], ids=["bogus", "auto", "spaced"])
def test_a_bogus_backend_override_is_refused_naming_the_variable(host, value: str) -> None:
    host(value)
    result = CliRunner().invoke(app, ["doctor"])
    assert result.exit_code == 2
    assert f"ACCELENV_BACKEND={value!r} is not a backend" in result.stderr
    code, body = doctor()
    assert code == 2 and body["code"] == "invalid-request"
    assert body["causes"][0]["origin"] == "environment: ACCELENV_BACKEND"


def test_a_build_label_override_is_read_as_its_family(tmp_path: Path, host) -> None:
    host("cu126", "580.95.05", "sm_90")
    install(tmp_path, "torch", "2.13.0+cu126", cuda="12.6")
    code, report = doctor("--site-packages", str(tmp_path))
    assert report["host"]["backend"] == "cuda"
    assert by_check(report)["build"]["severity"] == "ok" and code == 0


def test_a_release_no_build_of_which_runs_here_gets_what_to_install_instead(tmp_path: Path, host) -> None:
    host("cuda", "580.95.05", "sm_120")
    install(tmp_path, "torch", "2.5.1+cu124", cuda="12.4")
    code, report = doctor("--site-packages", str(tmp_path))
    assert code == 1
    fix = by_check(report)["gpu-arch"]["fix"]
    python = report["host"]["python"]
    instead = render(resolve(ResolveRequest.from_strings(torch="latest", python=python, os="linux",
                                                         arch=report["host"]["arch"], backend="cuda",
                                                         driver="580.95.05", gpu_arch="sm_120"),
                             load_matrix_cached(None)), "pip")
    # doctor gives the commands alone (its finding says why), without resolve's `# warning:` lines
    instead = "\n".join(line for line in instead.splitlines() if not line.startswith("#")).strip()
    assert fix.startswith("no build of torch 2.5.1 works here (")
    assert fix.endswith("install instead:\npip uninstall -y torch\n" + instead)


needs_glibc = pytest.mark.skipif(glibc_version() is None, reason="this host's C library is not glibc")


@needs_glibc
def test_a_wheel_for_a_newer_glibc_is_an_error(tmp_path: Path, host) -> None:
    host("cpu")
    install(tmp_path, "torch", "2.13.0+cpu", wheel_tag="cp311-cp311-manylinux_2_99_x86_64")
    code, report = doctor("--site-packages", str(tmp_path))
    assert code == 1
    finding = by_check(report)["glibc"]
    assert finding["severity"] == "error" and "needs glibc >= 2.99" in finding["message"]
    assert f"this host has glibc {glibc_version()}" in finding["message"]
    assert report["environment"]["manylinux_floor"] == "2.99" and report["environment"]["glibc"] == glibc_version()


@needs_glibc
def test_a_legacy_manylinux_tag_is_within_this_hosts_glibc(tmp_path: Path, host) -> None:
    host("cpu")
    install(tmp_path, "torch", "2.3.1+cpu", wheel_tag="cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64")
    code, report = doctor("--site-packages", str(tmp_path))
    assert by_check(report)["glibc"]["severity"] == "ok" and report["environment"]["manylinux_floor"] == "2.17"


def test_the_cuda_runtime_cudnn_and_companion_packages_are_reported(tmp_path: Path, host) -> None:
    host("cuda", "580.95.05", "sm_90")
    install(tmp_path, "torch", "2.5.1+cu124", cuda="12.4")
    install(tmp_path, "nvidia-cudnn-cu12", "9.1.0.70")
    install(tmp_path, "triton", "3.1.0")
    install(tmp_path, "requests", "2.32.0")
    code, report = doctor("--site-packages", str(tmp_path))
    env = report["environment"]
    assert env["torch_cuda"] == "12.4" and env["cudnn"] == {"package": "nvidia-cudnn-cu12", "version": "9.1.0.70"}
    assert env["packages"] == {"nvidia-cudnn-cu12": "9.1.0.70", "torch": "2.5.1+cu124", "triton": "3.1.0"}
    checks = by_check(report)
    assert checks["cuda-runtime"]["message"] == "built with CUDA 12.4"
    assert "cuDNN 9.1.0.70" in checks["cudnn"]["message"]
    text = CliRunner().invoke(app, ["doctor", "--site-packages", str(tmp_path)])
    assert "packages: nvidia-cudnn-cu12 9.1.0.70, torch 2.5.1+cu124, triton 3.1.0" in text.stdout


def test_a_torch_built_for_another_cuda_than_its_label_is_flagged(tmp_path: Path, host) -> None:
    host("cuda", "580.95.05", "sm_90")
    install(tmp_path, "torch", "2.5.1+cu124", cuda="12.1")
    _, report = doctor("--site-packages", str(tmp_path))
    finding = by_check(report)["cuda-runtime"]
    assert finding["severity"] == "warning" and "built with CUDA 12.1 (cu121)" in finding["message"]
