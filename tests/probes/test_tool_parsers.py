"""The host-detection parsers on captured real outputs (tests/data/host_tools, see its README), one parser
per driver file or tool, and the driver lookup against fake driver files and fake vendor tools on PATH
(the process boundary). The whole detection on fake hosts: test_host_detection.py."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from probes.host import facts as host_facts
from probes.host import parsers as tool_parsers
from tests.conftest import REPO_ROOT

DATA = REPO_ROOT / "tests" / "data" / "host_tools"


def captured(name: str) -> str:
    return (DATA / name).read_text()


@pytest.mark.parametrize(
    ("name", "driver", "cuda"),
    [
        pytest.param("nvidia-smi_550.40.07_rtx4070.txt", "550.40.07", "12.4", id="550-cuda12.4"),
        pytest.param("nvidia-smi_450.57_titan-xp.txt", "450.57", "11.0", id="450-cuda11.0"),
        pytest.param("nvidia-smi_331.62_gtx680.txt", "331.62", None, id="331-no-cuda-in-banner"),
    ],
)
def test_nvidia_smi_banner(name: str, driver: str, cuda: str | None) -> None:
    assert tool_parsers.parse_nvidia_smi_banner(captured(name)) == {"driver_version": driver, "cuda_version": cuda}


@pytest.mark.parametrize(
    ("name", "gpus"),
    [
        pytest.param("nvidia-smi_550.40.07_rtx4070.txt", [(0, "NVIDIA GeForce RTX 4070")], id="one-gpu"),
        pytest.param("nvidia-smi_331.62_gtx680.txt", [(0, "GeForce GTX 680"), (1, "GeForce GTX 680")], id="two-gpus"),
    ],
)
def test_nvidia_smi_gpu_rows(name: str, gpus: list[tuple[int, str]]) -> None:
    parsed = tool_parsers.parse_nvidia_smi_gpus(captured(name))
    assert [(g["index"], g["name"]) for g in parsed] == gpus


def test_nvidia_smi_query_gives_one_value_per_gpu() -> None:
    one_field = ("driver_version",)
    parsed = tool_parsers.parse_nvidia_smi_query(captured("nvidia-smi_query_driver_version_2gpus.txt"), one_field)
    assert [g["driver_version"] for g in parsed] == ["572.60", "572.60"]
    assert tool_parsers.parse_nvidia_smi_query("driver_version\n550.54.15\n", one_field) == [
        {"driver_version": "550.54.15"}]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("535.104.05, 9.0, NVIDIA H100 80GB HBM3\n", [("535.104.05", "9.0", "NVIDIA H100 80GB HBM3")]),
        ("470.82.01, [N/A], Tesla T4\n", [("470.82.01", None, "Tesla T4")]),
        ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", []),
        ("572.60\n", [("572.60", None, None)]),
    ],
    ids=["h100", "no-compute-cap-field", "driver-not-loaded", "fields-missing"],
)
def test_nvidia_smi_detection_query(text: str, expected: list[tuple[str, str | None, str | None]]) -> None:
    parsed = tool_parsers.parse_nvidia_smi_query(text)
    assert [(g["driver_version"], g["compute_cap"], g["name"]) for g in parsed] == expected


@pytest.mark.parametrize(
    ("name", "version"),
    [
        pytest.param("proc_driver_nvidia_version_open_555.58.02.txt", "555.58.02", id="open-module"),
        pytest.param("proc_driver_nvidia_version_legacy_535.216.03.txt", "535.216.03", id="proprietary-module"),
        pytest.param("proc_driver_nvidia_version.proprietary_440.txt", "440.95.01", id="proprietary-440"),
    ],
)
def test_proc_driver_nvidia_version(name: str, version: str) -> None:
    assert tool_parsers.parse_nvidia_proc_version(captured(name)) == version


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("550.144.03\n", "550.144.03", id="sysfs-version"),
        pytest.param("", None, id="empty"),
        pytest.param("garbage", None, id="garbage"),
    ],
)
def test_nvidia_sysfs_version(text: str, expected: str | None) -> None:
    assert tool_parsers.parse_nvidia_sysfs_version(text) == expected


@pytest.mark.parametrize(
    ("name", "version"),
    [
        pytest.param("rocm-smi_showdriverversion_6.14.0-28-generic.txt", "6.14.0-28-generic", id="in-kernel-amdgpu"),
        pytest.param("rocm-smi_showallinfo_mi300x_6.7.0.txt", "6.7.0", id="dkms-amdgpu-mi300x"),
    ],
)
def test_rocm_smi_driver_version(name: str, version: str) -> None:
    assert tool_parsers.parse_rocm_smi_driver(captured(name)) == version


def test_rocm_smi_json_driver_version() -> None:
    assert tool_parsers.parse_rocm_smi_driver('{"system": {"Driver version": "6.12.12"}}') == "6.12.12"
    assert tool_parsers.parse_rocm_smi_driver("{not json") is None


def test_rocminfo_capture_gives_gfx_target() -> None:
    assert tool_parsers.parse_rocminfo_gfx(captured("rocminfo.gfx1100_agent2.txt")) == ["gfx1100"]


@pytest.mark.parametrize(("text", "value"), [("6.0.2-115\n", "6.0.2"), ("garbage", None)], ids=["release", "garbage"])
def test_rocm_version_file(text: str, value: str | None) -> None:
    assert tool_parsers.parse_rocm_version_file(text) == value


def test_sycl_ls_capture_lists_level_zero_gpus() -> None:
    assert tool_parsers.parse_sycl_ls_gpus(captured("sycl-ls.arc_b70.txt")) == [
        "Intel(R) Arc(TM) Pro B70 Graphics 20.2.0 [1.15.38646]",
        "Intel(R) Graphics 12.70.4 [1.15.38646]",
    ]


def test_rocm_smi_product_gfx_targets() -> None:
    assert tool_parsers.parse_rocm_smi_gfx(captured("rocm-smi_showproductname_mi300x-vf.txt")) == ["gfx942", "gfx942"]


@pytest.mark.parametrize(
    ("name", "version", "npus", "hbm"),
    [
        pytest.param("npu-smi_info_910b4_24.1.1.txt", "24.1.1", 2, 32768, id="910b4"),
        pytest.param("npu-smi_info_atlas800-9010_24.1.RC2_head.txt", "24.1.RC2", 8, 32768, id="atlas800-8npu"),
    ],
)
def test_npu_smi_info(name: str, version: str, npus: int, hbm: int) -> None:
    parsed = tool_parsers.parse_npu_smi_info(captured(name))
    assert parsed["driver_version"] == version
    assert len(parsed["npus"]) == npus
    assert {n["hbm_total_mb"] for n in parsed["npus"]} == {hbm}


def test_npu_smi_310b4_chip_row_is_not_an_npu() -> None:
    """The 310B4 layout's chip row ("| 0  0 | NA |") has the NPU row's shape; it is still one NPU."""
    parsed = tool_parsers.parse_npu_smi_info(captured("npu-smi_info.310b4.txt"))
    assert parsed["driver_version"] == "23.0.rc3"
    assert [n["name"] for n in parsed["npus"]] == ["310B4"]


def test_npu_smi_health_column_is_read() -> None:
    parsed = tool_parsers.parse_npu_smi_info(captured("npu-smi_info_atlas800-9010_24.1.RC2_head.txt"))
    assert [n["npu"] for n in parsed["npus"] if n["health"] == "Warning"] == [3, 7]


@pytest.mark.parametrize(
    ("name", "version", "cards"),
    [
        pytest.param("cnmon_5.10.22_mlu370-x8.txt", "5.10.22", ["MLU370-X8"] * 2, id="driver5-banner"),
        pytest.param("cnmon_4.20.11_mlu370-x4.txt", "4.20.11", ["MLU370-X4"] * 3, id="driver4-per-card"),
    ],
)
def test_cnmon(name: str, version: str, cards: list[str]) -> None:
    parsed = tool_parsers.parse_cnmon(captured(name))
    assert parsed["driver_version"] == version
    assert [c["name"] for c in parsed["cards"]] == cards


@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("ascend_toolkit_install.info_8.0.0_aarch64.txt", "8.0.0"),
        ("ascend_toolkit_install.info_8.1.RC1_x86_64.txt", "8.1.RC1"),
    ],
)
def test_cann_toolkit_install_info(name: str, version: str) -> None:
    """The CANN version (not the ``innerversion`` or ``compatible_version`` lines)."""
    assert tool_parsers.parse_ascend_toolkit_install_info(captured(name)) == version


def test_ascend_version_info() -> None:
    assert tool_parsers.parse_ascend_version_info("Version=23.0.rc3\nascendhal_version=7.35.19\n") == "23.0.rc3"


def _fake_tool(bindir: Path, name: str, output_file: Path, exit_code: int = 0) -> None:
    script = bindir / name
    script.write_text(f"#!/bin/sh\n/bin/cat '{output_file}'\nexit {exit_code}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def fake_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH with only our fake tools, and the driver tables pointed at files under tmp_path."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.delenv(host_facts.DRIVER_OVERRIDE_ENV, raising=False)
    monkeypatch.setitem(host_facts.DRIVER_SOURCES, "cuda", (
        ("file", str(tmp_path / "sys_module_nvidia_version"), "parse_nvidia_sysfs_version"),
        ("file", str(tmp_path / "proc_driver_nvidia_version"), "parse_nvidia_proc_version"),
        ("command", host_facts.NVIDIA_SMI_QUERY, "nvidia_smi_driver"),
    ))
    return tmp_path


@pytest.mark.skipif(os.name != "posix", reason="fake tools are shell scripts")
def test_driver_falls_through_absent_files_to_the_tool(fake_host: Path) -> None:
    _fake_tool(fake_host / "bin", "nvidia-smi", DATA / "nvidia-smi_query_driver_version_2gpus.txt")
    version, sources = host_facts.detect_driver("cuda")
    assert version == "572.60"
    assert [s["outcome"] for s in sources] == ["absent", "absent", "value"]


@pytest.mark.skipif(os.name != "posix", reason="fake tools are shell scripts")
def test_driver_prefers_sysfs_and_reports_a_failing_tool(fake_host: Path) -> None:
    (fake_host / "sys_module_nvidia_version").write_text("550.144.03\n")
    _fake_tool(fake_host / "bin", "nvidia-smi", DATA / "nvidia-smi_query_driver_version_2gpus.txt", exit_code=9)
    version, sources = host_facts.detect_driver("cuda")
    assert version == "550.144.03"
    assert sources[0] == {"source": str(fake_host / "sys_module_nvidia_version"), "outcome": "value",
                          "value": "550.144.03"}
    assert sources[2]["outcome"] == "failed: exit code 9"


def test_no_driver_anywhere_is_a_list_of_absences(fake_host: Path) -> None:
    version, sources = host_facts.detect_driver("cuda")
    assert version is None
    assert {s["outcome"] for s in sources} == {"absent"}


def test_driver_override_variable_wins(fake_host: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(host_facts.DRIVER_OVERRIDE_ENV, "535.104.05")
    version, sources = host_facts.detect_driver("cuda")
    assert version == "535.104.05"
    assert sources == [{"source": "env:ACCELENV_DRIVER_VERSION", "outcome": "value", "value": "535.104.05"}]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("glibc 2.36", "2.36", id="debian-12"),
        pytest.param("glibc 2.17", "2.17", id="centos-7"),
        pytest.param("", None, id="empty"),
        pytest.param(None, None, id="musl-has-none"),
    ],
)
def test_gnu_libc_version(text: str | None, expected: str | None) -> None:
    assert tool_parsers.parse_gnu_libc_version(text) == expected


def test_glibc_version_of_this_host_is_a_version_or_none() -> None:
    version = host_facts.glibc_version()
    assert version is None or version.count(".") == 1 and all(p.isdigit() for p in version.split("."))
