"""Pure parsers: the text a driver file or vendor tool prints → facts. No I/O here (see host_detection).

Each returns None (or an empty list) when the text does not hold the fact; the caller reports that as
"failed to read", which differs from "not present". Tested on captured real outputs in
tests/data/host_tools/.
"""

from __future__ import annotations

import re

_DRIVER_RE = re.compile(r"\b(\d{2,4}\.\d{1,3}(?:\.\d{1,3})?)\b")
_PROC_NVIDIA_RE = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)")
_CC_RE = re.compile(r"^(\d{1,2})\.(\d)$")
_ROCM_RE = re.compile(r"^(\d+\.\d+(?:\.\d+)?)")
_GFX_RE = re.compile(r"^\s*Name:\s+(gfx[0-9a-f]{3,5})\b", re.MULTILINE)
_NPU_SMI_RE = re.compile(r"npu-smi\s+(\S+)")
_NPU_CHIP_RE = re.compile(r"^\|\s*\d+\s+(\d{3}[A-Za-z0-9]*)\s", re.MULTILINE)
_VERSION_INFO_RE = re.compile(r"^\s*Version\s*=\s*(\S+)", re.MULTILINE)


def nvidia_module_version(text: str) -> str | None:
    """/sys/module/nvidia/version: the bare driver version."""
    match = _DRIVER_RE.search(text.strip())
    return match.group(1) if match and text.strip().startswith(match.group(1)) else None


def proc_nvidia_version(text: str) -> str | None:
    """/proc/driver/nvidia/version: 'NVRM version: NVIDIA UNIX [Open ]Kernel Module [for x86_64]  555.58.02 ...'."""
    match = _PROC_NVIDIA_RE.search(text)
    return match.group(1) if match else None


def nvidia_smi_gpus(text: str) -> list[tuple[str, str | None, str]]:
    """`nvidia-smi --query-gpu=driver_version,compute_cap,name --format=csv,noheader` →
    [(driver, sm_XY or None, name)] per GPU. compute_cap is "[N/A]" on drivers that predate the field."""
    gpus = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",", 2)]
        if len(parts) != 3 or not _DRIVER_RE.fullmatch(parts[0]):
            continue
        cc = _CC_RE.match(parts[1])
        gpus.append((parts[0], f"sm_{cc.group(1)}{cc.group(2)}" if cc else None, parts[2]))
    return gpus


def rocm_version(text: str) -> str | None:
    """/opt/rocm/.info/version: '6.0.2-115' → '6.0.2'."""
    match = _ROCM_RE.match(text.strip())
    return match.group(1) if match else None


def rocminfo_gfx(text: str) -> list[str]:
    """`rocminfo`: the gfx target of every GPU agent ('Name: gfx1100'), in agent order, without repeats."""
    return list(dict.fromkeys(_GFX_RE.findall(text)))


def sycl_ls_intel_gpus(text: str) -> list[str]:
    """`sycl-ls`: the names of the Level Zero GPUs (the devices torch's XPU backend drives)."""
    names = []
    for line in text.splitlines():
        if line.startswith("[level_zero:gpu]"):
            rest = line.split("]", 2)[-1].strip()
            names.append(rest.split(", ", 1)[-1])
    return names


def npu_smi_info(text: str) -> tuple[str | None, list[str]]:
    """`npu-smi info`: (npu-smi/driver version, chip names such as '910B3' or '310B4')."""
    version = _NPU_SMI_RE.search(text)
    return (version.group(1) if version else None), _NPU_CHIP_RE.findall(text)


def ascend_version_info(text: str) -> str | None:
    """/usr/local/Ascend/driver/version.info: 'Version=23.0.rc3'."""
    match = _VERSION_INFO_RE.search(text)
    return match.group(1) if match else None


def drm_vendor_is_intel(text: str) -> bool:
    """/sys/class/drm/card*/device/vendor: '0x8086' is Intel."""
    return text.strip().lower() == "0x8086"
