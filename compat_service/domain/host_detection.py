"""Detect this host's accelerator for `--backend auto` and the defaults: the I/O step.

Order (first hit wins; every look is recorded in `HostFacts.probes`):

0. Override variables, read first: ``ACCELENV_BACKEND`` (skip detection and use this backend),
   ``ACCELENV_DRIVER_VERSION`` and ``ACCELENV_GPU_ARCH`` (replace the detected driver / architecture).
1. NVIDIA: /sys/module/nvidia/version, /proc/driver/nvidia/version, then
   ``nvidia-smi --query-gpu=driver_version,compute_cap,name --format=csv,noheader`` (the only source of
   the compute capability).
2. AMD ROCm: /opt/rocm/.info/version, then ``rocminfo`` for the gfx target.
3. Intel XPU: ``sycl-ls`` (Level Zero GPUs), else /sys/class/drm/card*/device/vendor == 0x8086.
4. Ascend: /usr/local/Ascend/driver/version.info, then ``npu-smi info``.
5. Cambricon: ``cnmon`` present.
6. Apple silicon: macOS on arm64 → mps.
7. Otherwise cpu.

Each probe is "found", "absent" (file or tool not there) or "failed" (there, but errored, timed out or
printed something the parser could not read). Tests pass a `root` directory and a `run` callable so only
those boundaries are faked. The parsers are in host_tool_parsers.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from compat_service.domain import host_tool_parsers as parse

OVERRIDE_BACKEND = "ACCELENV_BACKEND"
OVERRIDE_DRIVER = "ACCELENV_DRIVER_VERSION"
OVERRIDE_GPU_ARCH = "ACCELENV_GPU_ARCH"
TOOL_TIMEOUT_S = 10.0

ProbeStatus = Literal["found", "absent", "failed"]


@dataclass(frozen=True)
class Probe:
    source: str
    status: ProbeStatus
    detail: str | None = None


@dataclass(frozen=True)
class ToolRun:
    returncode: int
    stdout: str


#: runs argv, returns its result; raises FileNotFoundError when the tool is absent, TimeoutError on timeout
Runner = Callable[[Sequence[str]], ToolRun]


def subprocess_runner(argv: Sequence[str]) -> ToolRun:
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as exc:
        raise TimeoutError(f"{argv[0]} did not answer within {TOOL_TIMEOUT_S:.0f} s") from exc
    return ToolRun(done.returncode, done.stdout)


@dataclass(frozen=True)
class HostFacts:
    os: str
    arch: str
    python: str
    #: cpu, cuda, rocm, xpu, mps, npu, mlu, or what ACCELENV_BACKEND says
    backend: str
    driver: str | None = None
    gpu_arch: str | None = None
    gpu_name: str | None = None
    probes: tuple[Probe, ...] = field(default=())


def host_os() -> str:
    return {"Linux": "linux", "Windows": "windows", "Darwin": "macos"}.get(
        platform.system(), platform.system().lower()
    )


def host_arch() -> str:
    machine = platform.machine().lower()
    machine = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    return "arm64" if host_os() == "macos" and machine == "aarch64" else machine


def host_python() -> str:
    free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    return f"{sys.version_info.major}.{sys.version_info.minor}{'t' if free_threaded else ''}"


def detect_host(
    *,
    root: Path = Path("/"),
    run: Runner = subprocess_runner,
    env: Mapping[str, str] | None = None,
    os_name: str | None = None,
    arch: str | None = None,
) -> HostFacts:
    env = os.environ if env is None else env
    d = _Detector(root, run)
    base = {"os": os_name or host_os(), "arch": arch or host_arch(), "python": host_python()}
    override_driver = env.get(OVERRIDE_DRIVER) or None
    override_arch = env.get(OVERRIDE_GPU_ARCH) or None
    forced = env.get(OVERRIDE_BACKEND) or None
    if forced:
        d.note(OVERRIDE_BACKEND, "found", forced)
        return HostFacts(
            backend=forced, driver=override_driver, gpu_arch=override_arch, probes=tuple(d.probes), **base
        )
    for step in (d.nvidia, d.amd, d.intel, d.ascend, d.cambricon):
        found = step()
        if found is not None:
            backend, driver, gpu_arch, name = found
            return HostFacts(
                backend=backend,
                driver=override_driver or driver,
                gpu_arch=override_arch or gpu_arch,
                gpu_name=name,
                probes=tuple(d.probes),
                **base,
            )
    backend = "mps" if base["os"] == "macos" and base["arch"] == "arm64" else "cpu"
    d.note("platform", "found", f"{base['os']}-{base['arch']}")
    return HostFacts(
        backend=backend, driver=override_driver, gpu_arch=override_arch, probes=tuple(d.probes), **base
    )


class _Detector:
    def __init__(self, root: Path, run: Runner) -> None:
        self.root = root
        self.run = run
        self.probes: list[Probe] = []

    def note(self, source: str, status: ProbeStatus, detail: str | None = None) -> None:
        self.probes.append(Probe(source, status, detail))

    def read(self, path: str, parser: Callable[[str], object]) -> object | None:
        """Read root/path and parse it; record found / absent / failed."""
        full = self.root / path.lstrip("/")
        try:
            text = full.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            self.note(path, "absent")
            return None
        except OSError as exc:
            self.note(path, "failed", str(exc))
            return None
        value = parser(text)
        if value is None or value == []:
            self.note(path, "failed", f"unreadable content: {text[:80]!r}")
            return None
        self.note(path, "found", str(value))
        return value

    def tool(self, argv: Sequence[str], parser: Callable[[str], object]) -> object | None:
        try:
            result = self.run(argv)
        except FileNotFoundError:
            self.note(argv[0], "absent")
            return None
        except (TimeoutError, OSError) as exc:
            self.note(argv[0], "failed", str(exc))
            return None
        if result.returncode != 0:
            self.note(argv[0], "failed", f"exit {result.returncode}: {result.stdout.strip()[:120]}")
            return None
        value = parser(result.stdout)
        if value is None or value == [] or value == (None, []):
            self.note(argv[0], "failed", f"unreadable output: {result.stdout[:80]!r}")
            return None
        self.note(argv[0], "found", str(value))
        return value

    def nvidia(self) -> tuple[str, str | None, str | None, str | None] | None:
        driver = self.read("/sys/module/nvidia/version", parse.nvidia_module_version)
        if driver is None:
            driver = self.read("/proc/driver/nvidia/version", parse.proc_nvidia_version)
        gpus = self.tool(
            ["nvidia-smi", "--query-gpu=driver_version,compute_cap,name", "--format=csv,noheader"],
            parse.nvidia_smi_gpus,
        )
        if not gpus and driver is None:
            return None
        if gpus:
            first_driver, cc, name = gpus[0]  # type: ignore[index]
            return "cuda", str(driver or first_driver), cc, name
        return "cuda", str(driver), None, None

    def amd(self) -> tuple[str, str | None, str | None, str | None] | None:
        version = self.read("/opt/rocm/.info/version", parse.rocm_version)
        gfx = self.tool(["rocminfo"], parse.rocminfo_gfx)
        if version is None and not gfx:
            return None
        return "rocm", str(version) if version else None, gfx[0] if gfx else None, None  # type: ignore[index]

    def intel(self) -> tuple[str, str | None, str | None, str | None] | None:
        gpus = self.tool(["sycl-ls"], parse.sycl_ls_intel_gpus)
        if gpus:
            return "xpu", None, None, gpus[0]  # type: ignore[index]
        drm = self.root / "sys/class/drm"
        vendors = sorted(drm.glob("card*/device/vendor")) if drm.is_dir() else []
        for vendor in vendors:
            if parse.drm_vendor_is_intel(vendor.read_text(errors="replace")):
                self.note(str(vendor.relative_to(self.root)), "found", "0x8086")
                # An Intel display adapter alone is not an XPU: integrated graphics are common. Only report it.
        if not vendors:
            self.note("/sys/class/drm", "absent")
        return None

    def ascend(self) -> tuple[str, str | None, str | None, str | None] | None:
        version = self.read("/usr/local/Ascend/driver/version.info", parse.ascend_version_info)
        info = self.tool(["npu-smi", "info"], parse.npu_smi_info)
        if version is None and info is None:
            return None
        chips = info[1] if info else []  # type: ignore[index]
        return "npu", str(version or (info[0] if info else None)), None, chips[0] if chips else None  # type: ignore[index]

    def cambricon(self) -> tuple[str, str | None, str | None, str | None] | None:
        present = self.tool(["cnmon"], lambda text: text.strip() or None)
        return ("mlu", None, None, None) if present else None
