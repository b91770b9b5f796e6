"""Host detection without torch (`resolve --backend auto`, `doctor`): the I/O step of probes/host/facts with
driver files under tmp_path and fake executables on PATH (the only faked boundaries). The parsers on
captured outputs: test_tool_parsers.py."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from probes.host import facts as host_facts
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.skipif(os.name != "posix", reason="fake tools are shell scripts")

#: resolved before the tests narrow PATH to the fake tools
CAT = shutil.which("cat") or "/bin/cat"
SLEEP = shutil.which("sleep") or "/bin/sleep"
CAPTURES = REPO_ROOT / "tests" / "data" / "host_tools"


def _capture(name: str) -> str:
    return (CAPTURES / name).read_text(encoding="utf-8")


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def fake_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty PATH directory; tests drop fake vendor tools into it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


def _tool(bin_dir: Path, name: str, stdout: str, code: int = 0) -> None:
    out = bin_dir / f"{name}.out"
    out.write_text(stdout)
    script = bin_dir / name
    # PATH holds only the fake tools, so the script names cat by its absolute path.
    script.write_text(f"#!/bin/sh\n{CAT} '{out}'\nexit {code}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def _outcome(host: dict[str, Any], source: str) -> str:
    """The outcome of the first source whose label starts with ``source`` (a path or a tool's name)."""
    return next(s["outcome"] for s in host["sources"] if s["source"].split(" ")[0] == source)


def _detect(root: Path, env: dict[str, str] | None = None, **kw: Any) -> dict[str, Any]:
    kw.setdefault("host_os", "linux")
    kw.setdefault("host_arch", "x86_64")
    return host_facts.detect_host(env=env or {}, root=str(root), **kw)


def test_nvidia_host_from_proc_and_nvidia_smi(tmp_path: Path, fake_bin: Path) -> None:
    _write(tmp_path, "proc/driver/nvidia/version", _capture("proc_driver_nvidia_version_open_555.58.02.txt"))
    _tool(fake_bin, "nvidia-smi", "555.58.02, 8.9, NVIDIA GeForce RTX 4090\n")
    host = _detect(tmp_path)
    assert (host["backend"], host["driver_version"], host["device_arch"]) == ("cuda", "555.58.02", "sm_89")
    assert host["device_name"] == "NVIDIA GeForce RTX 4090"
    assert _outcome(host, "/sys/module/nvidia/version") == "absent"
    assert _outcome(host, "/proc/driver/nvidia/version") == "value"


def test_a_multi_gpu_host_reports_the_lowest_capability_and_says_so(tmp_path: Path, fake_bin: Path) -> None:
    _tool(fake_bin, "nvidia-smi",
          "535.104.05, 8.9, NVIDIA GeForce RTX 4090\n535.104.05, 8.6, NVIDIA GeForce RTX 3090\n")
    host = _detect(tmp_path)
    assert host["device_arch"] == "sm_86"
    assert host["device_name"].startswith("NVIDIA GeForce RTX 3090 (lowest capability of 2 GPUs")


def test_nvidia_smi_runs_once_for_driver_and_device(tmp_path: Path, fake_bin: Path) -> None:
    counter = tmp_path / "runs"
    script = fake_bin / "nvidia-smi"
    script.write_text(f"#!/bin/sh\necho run >> '{counter}'\necho '550.54.15, 9.0, NVIDIA H100'\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    host = _detect(tmp_path)
    assert (host["driver_version"], host["device_arch"]) == ("550.54.15", "sm_90")
    assert counter.read_text().count("run") == 1


def test_a_driver_without_the_compute_cap_field_still_gives_its_version(tmp_path: Path, fake_bin: Path) -> None:
    """Old drivers reject --query-gpu=...,compute_cap,...; the driver-only query is asked then."""
    script = fake_bin / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        "case \"$1\" in *compute_cap*) echo 'Field \"compute_cap\" is not a valid field to query.'; exit 2;; esac\n"
        "echo 470.82.01\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    host = _detect(tmp_path)
    assert (host["backend"], host["driver_version"], host["device_arch"]) == ("cuda", "470.82.01", None)
    assert [s["outcome"] for s in host["sources"] if s["source"].startswith("nvidia-smi")][:2] == [
        "failed: exit code 2", "value"]


def test_absent_differs_from_failed(tmp_path: Path, fake_bin: Path) -> None:
    _write(tmp_path, "proc/driver/nvidia/version", "garbled\n")
    _tool(
        fake_bin,
        "nvidia-smi",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
        code=9,
    )
    host = _detect(tmp_path)
    assert _outcome(host, "/proc/driver/nvidia/version").startswith("failed")
    assert _outcome(host, "nvidia-smi") == "failed: exit code 9"
    assert _outcome(host, "rocminfo") == "absent"
    assert host["backend"] == "cpu"


def test_amd_host_from_rocm_files(tmp_path: Path, fake_bin: Path) -> None:
    """/opt/rocm/.info/version is the installed ROCm, reported as the runtime: the driver is amdgpu's."""
    _write(tmp_path, "opt/rocm/.info/version", "6.0.2-115\n")
    _tool(fake_bin, "rocminfo", _capture("rocminfo.gfx1100_agent2.txt"))
    host = _detect(tmp_path)
    assert (host["backend"], host["runtime_version"], host["device_arch"]) == ("rocm", "6.0.2", "gfx1100")
    assert host["driver_version"] is None
    _write(tmp_path, "sys/module/amdgpu/version", "6.7.0\n")
    assert _detect(tmp_path)["driver_version"] == "6.7.0"


def test_ascend_host_reports_its_cann_version_as_the_runtime(tmp_path: Path, fake_bin: Path) -> None:
    """npu-smi gives the driver; CANN's ascend_toolkit_install.info the runtime that --runtime matches."""
    _tool(fake_bin, "npu-smi", _capture("npu-smi_info_910b4_24.1.1.txt"))
    _write(
        tmp_path,
        "usr/local/Ascend/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info",
        _capture("ascend_toolkit_install.info_8.0.0_aarch64.txt"),
    )
    host = _detect(tmp_path)
    assert (host["backend"], host["runtime_version"]) == ("npu", "8.0.0")
    assert host["driver_version"] == "24.1.1"


def test_amd_gfx_from_rocm_smi_when_rocminfo_is_absent(tmp_path: Path, fake_bin: Path) -> None:
    _tool(fake_bin, "rocm-smi", _capture("rocm-smi_showproductname_mi300x-vf.txt"))
    host = _detect(tmp_path)
    assert (host["backend"], host["device_arch"]) == ("rocm", "gfx942")


def test_intel_host_from_sycl_ls(tmp_path: Path, fake_bin: Path) -> None:
    _tool(fake_bin, "sycl-ls", _capture("sycl-ls.arc_b70.txt"))
    host = _detect(tmp_path)
    assert (host["backend"], host["device_name"]) == ("xpu", "Intel(R) Arc(TM) Pro B70 Graphics 20.2.0 [1.15.38646]")


def test_ascend_host(tmp_path: Path, fake_bin: Path) -> None:
    _tool(fake_bin, "npu-smi", _capture("npu-smi_info.310b4.txt"))
    host = _detect(tmp_path, host_arch="aarch64")
    assert (host["backend"], host["device_name"], host["driver_version"]) == ("npu", "310B4", "23.0.rc3")


def test_cambricon_host(tmp_path: Path, fake_bin: Path) -> None:
    _tool(fake_bin, "cnmon", _capture("cnmon_5.10.22_mlu370-x8.txt"))
    host = _detect(tmp_path)
    assert (host["backend"], host["driver_version"], host["device_name"]) == ("mlu", "5.10.22", "MLU370-X8")


def test_timeout_is_a_failed_probe(tmp_path: Path, fake_bin: Path) -> None:
    script = fake_bin / "nvidia-smi"
    script.write_text(f"#!/bin/sh\nexec {SLEEP} 10\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    host = _detect(tmp_path, timeout=0.5)
    assert _outcome(host, "nvidia-smi") == "failed: timed out after 0.5s"
    assert host["backend"] == "cpu"


def test_override_variables_win(tmp_path: Path, fake_bin: Path) -> None:
    _tool(fake_bin, "nvidia-smi", "535.104.05, 9.0, NVIDIA H100\n")
    env = {"ACCELENV_DRIVER_VERSION": "550.54.15", "ACCELENV_GPU_ARCH": "sm_80"}
    host = _detect(tmp_path, env)
    assert (host["backend"], host["driver_version"], host["device_arch"]) == ("cuda", "550.54.15", "sm_80")
    forced = _detect(tmp_path, {"ACCELENV_BACKEND": "cpu"})
    assert forced["backend"] == "cpu" and forced["sources"][0]["source"] == "env:ACCELENV_BACKEND"
    assert not any(s["source"].startswith("nvidia-smi") for s in forced["sources"])


def test_the_old_device_arch_variable_is_a_deprecated_alias(tmp_path: Path, fake_bin: Path) -> None:
    assert _detect(tmp_path, {"ACCELENV_DEVICE_ARCH": "sm_86"})["device_arch"] == "sm_86"
    both = {"ACCELENV_DEVICE_ARCH": "sm_86", "ACCELENV_GPU_ARCH": "sm_90"}
    assert host_facts.gpu_arch_override(both) == "sm_90"


def test_apple_silicon_is_mps(tmp_path: Path, fake_bin: Path) -> None:
    assert _detect(tmp_path, host_os="macos", host_arch="arm64")["backend"] == "mps"


def test_run_tool_reports_absent_tools(fake_bin: Path) -> None:
    assert host_facts.run_tool(["nvidia-smi"]) == (None, "absent")
    _tool(fake_bin, "cnmon", "Card 0 MLU370\n")
    assert host_facts.run_tool(["cnmon"]) == ("Card 0 MLU370\n", None)
    assert os.environ["PATH"] == str(fake_bin)
