"""Host detection: pure parsers on captured real outputs; the I/O step with files in tmp_path and fake
executables on PATH (the only faked boundaries)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from compat_service.domain import host_tool_parsers as parse
from compat_service.domain.host_detection import ToolRun, detect_host, subprocess_runner

#: resolved before the tests narrow PATH to the fake tools
CAT = shutil.which("cat") or "/bin/cat"
CAPTURES = Path(__file__).resolve().parent.parent / "data" / "host_tools"


def _capture(name: str) -> str:
    return (CAPTURES / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("capture", "version"),
    [
        ("proc_driver_nvidia_version.open_555.txt", "555.58.02"),
        ("proc_driver_nvidia_version.proprietary_440.txt", "440.95.01"),
    ],
)
def test_proc_nvidia_version_on_captures(capture: str, version: str) -> None:
    assert parse.proc_nvidia_version(_capture(capture)) == version


def test_rocminfo_capture_gives_gfx_target() -> None:
    assert parse.rocminfo_gfx(_capture("rocminfo.gfx1100_agent2.txt")) == ["gfx1100"]


def test_sycl_ls_capture_lists_level_zero_gpus() -> None:
    assert parse.sycl_ls_intel_gpus(_capture("sycl-ls.arc_b70.txt")) == [
        "Intel(R) Arc(TM) Pro B70 Graphics 20.2.0 [1.15.38646]",
        "Intel(R) Graphics 12.70.4 [1.15.38646]",
    ]


def test_npu_smi_capture_gives_version_and_chip() -> None:
    assert parse.npu_smi_info(_capture("npu-smi_info.310b4.txt")) == ("23.0.rc3", ["310B4"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("535.104.05, 9.0, NVIDIA H100 80GB HBM3\n", [("535.104.05", "sm_90", "NVIDIA H100 80GB HBM3")]),
        ("470.82.01, [N/A], Tesla T4\n", [("470.82.01", None, "Tesla T4")]),
        ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", []),
    ],
    ids=["h100", "no-compute-cap-field", "driver-not-loaded"],
)
def test_nvidia_smi_csv(text: str, expected: list[tuple[str, str | None, str]]) -> None:
    assert parse.nvidia_smi_gpus(text) == expected


@pytest.mark.parametrize(("text", "value"), [("6.0.2-115\n", "6.0.2"), ("garbage", None)])
def test_rocm_version_file(text: str, value: str | None) -> None:
    assert parse.rocm_version(text) == value


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


def _status(facts, source: str) -> str:  # type: ignore[no-untyped-def]
    return next(p.status for p in facts.probes if p.source == source)


def test_nvidia_host_from_proc_and_nvidia_smi(tmp_path: Path, fake_bin: Path) -> None:
    _write(tmp_path, "proc/driver/nvidia/version", _capture("proc_driver_nvidia_version.open_555.txt"))
    _tool(fake_bin, "nvidia-smi", "555.58.02, 8.9, NVIDIA GeForce RTX 4090\n")
    facts = detect_host(root=tmp_path, env={}, os_name="linux", arch="x86_64")
    assert (facts.backend, facts.driver, facts.gpu_arch) == ("cuda", "555.58.02", "sm_89")
    assert _status(facts, "/sys/module/nvidia/version") == "absent"
    assert _status(facts, "/proc/driver/nvidia/version") == "found"


def test_absent_differs_from_failed(tmp_path: Path, fake_bin: Path) -> None:
    _write(tmp_path, "proc/driver/nvidia/version", "garbled\n")
    _tool(
        fake_bin,
        "nvidia-smi",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
        code=9,
    )
    facts = detect_host(root=tmp_path, env={}, os_name="linux", arch="x86_64")
    assert _status(facts, "/proc/driver/nvidia/version") == "failed"
    assert _status(facts, "nvidia-smi") == "failed"
    assert _status(facts, "rocminfo") == "absent"
    assert facts.backend == "cpu"


def test_amd_host_from_rocm_files(tmp_path: Path, fake_bin: Path) -> None:
    _write(tmp_path, "opt/rocm/.info/version", "6.0.2-115\n")
    _tool(fake_bin, "rocminfo", _capture("rocminfo.gfx1100_agent2.txt"))
    facts = detect_host(root=tmp_path, env={}, os_name="linux", arch="x86_64")
    assert (facts.backend, facts.driver, facts.gpu_arch) == ("rocm", "6.0.2", "gfx1100")


def test_ascend_host(tmp_path: Path, fake_bin: Path) -> None:
    _tool(fake_bin, "npu-smi", _capture("npu-smi_info.310b4.txt"))
    facts = detect_host(root=tmp_path, env={}, os_name="linux", arch="aarch64")
    assert (facts.backend, facts.gpu_name) == ("npu", "310B4")


def test_timeout_is_a_failed_probe(tmp_path: Path) -> None:
    def slow(argv):  # type: ignore[no-untyped-def]
        if argv[0] == "nvidia-smi":
            raise TimeoutError("nvidia-smi did not answer within 10 s")
        raise FileNotFoundError(argv[0])

    facts = detect_host(root=tmp_path, run=slow, env={}, os_name="linux", arch="x86_64")
    assert _status(facts, "nvidia-smi") == "failed" and facts.backend == "cpu"


def test_override_variables_win(tmp_path: Path, fake_bin: Path) -> None:
    _tool(fake_bin, "nvidia-smi", "535.104.05, 9.0, NVIDIA H100\n")
    env = {"ACCELENV_DRIVER_VERSION": "550.54.15", "ACCELENV_GPU_ARCH": "sm_80"}
    facts = detect_host(root=tmp_path, env=env, os_name="linux", arch="x86_64")
    assert (facts.backend, facts.driver, facts.gpu_arch) == ("cuda", "550.54.15", "sm_80")
    forced = detect_host(root=tmp_path, env={"ACCELENV_BACKEND": "cpu"}, os_name="linux", arch="x86_64")
    assert forced.backend == "cpu" and forced.probes[0].source == "ACCELENV_BACKEND"


def test_apple_silicon_is_mps(tmp_path: Path, fake_bin: Path) -> None:
    assert detect_host(root=tmp_path, env={}, os_name="macos", arch="arm64").backend == "mps"


def test_subprocess_runner_reports_absent_tools(fake_bin: Path) -> None:
    with pytest.raises(FileNotFoundError):
        subprocess_runner(["nvidia-smi"])
    _tool(fake_bin, "cnmon", "Card 0 MLU370\n")
    assert subprocess_runner(["cnmon"]) == ToolRun(0, "Card 0 MLU370\n")
    assert os.environ["PATH"] == str(fake_bin)
