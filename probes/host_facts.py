"""The I/O step of host detection: read driver files, run vendor tools, describe the OS and CPU.

Parsing is in ``tool_parsers`` (pure). Every source ends as an entry saying what was consulted and
whether it was ``absent`` (file or tool not there), ``failed`` (there but unreadable, timed out, or its
output unparsed) or gave a ``value``. Nothing here raises on missing hardware.

Override: ``ACCELENV_DRIVER_VERSION`` replaces the detected driver version (CI, odd hosts).
"""

import os
import platform
import shutil
import subprocess
import sys
import sysconfig

from probes import tool_parsers

DRIVER_OVERRIDE_ENV = "ACCELENV_DRIVER_VERSION"
TOOL_TIMEOUT_S = 10

# Driver sources per backend, in the order consulted (first value wins). Paths and commands from the
# field survey, section 5: uv's accelerator.rs (NVIDIA sysfs/procfs), collect_env, gpustack parsers.
DRIVER_SOURCES = {
    "cuda": (
        ("file", "/sys/module/nvidia/version", "parse_nvidia_sysfs_version"),
        ("file", "/proc/driver/nvidia/version", "parse_nvidia_proc_version"),
        ("command", ("nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"), "first_of_query"),
    ),
    "rocm": (
        ("file", "/sys/module/amdgpu/version", "parse_amdgpu_sysfs_version"),
        ("command", ("rocm-smi", "--showdriverversion"), "parse_rocm_smi_driver"),
    ),
    "npu": (
        ("file", "/usr/local/Ascend/driver/version.info", "parse_ascend_version_info"),
        ("command", ("npu-smi", "info"), "npu_driver"),
    ),
    "mlu": (("command", ("cnmon",), "mlu_driver"),),
}


def _first_of_query(text):
    values = tool_parsers.parse_nvidia_smi_query(text)
    return values[0] if values else None


def _npu_driver(text):
    return tool_parsers.parse_npu_smi_info(text)["driver_version"]


def _mlu_driver(text):
    return tool_parsers.parse_cnmon(text)["driver_version"]


_LOCAL_PARSERS = {"first_of_query": _first_of_query, "npu_driver": _npu_driver, "mlu_driver": _mlu_driver}


def _parser(name):
    return _LOCAL_PARSERS.get(name) or getattr(tool_parsers, name)


def read_text(path, limit=65536):
    """(text, problem): problem is None, 'absent' or 'failed: ...'."""
    try:
        with open(path, "r", errors="replace") as handle:
            return handle.read(limit), None
    except FileNotFoundError:
        return None, "absent"
    except OSError as exc:
        return None, "failed: %s" % (exc.strerror or exc)


def run_tool(argv, timeout=TOOL_TIMEOUT_S):
    """(stdout, problem) for a vendor tool; never raises."""
    if shutil.which(argv[0]) is None:
        return None, "absent"
    try:
        proc = subprocess.run(
            list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            timeout=timeout, universal_newlines=True, errors="replace",
        )
    except subprocess.TimeoutExpired:
        return None, "failed: timed out after %ss" % timeout
    except OSError as exc:
        return None, "failed: %s" % (exc.strerror or exc)
    if proc.returncode != 0:
        return proc.stdout, "failed: exit code %d" % proc.returncode
    return proc.stdout, None


def driver_family(backend, hip_build):
    """Which driver table applies: CUDA-device probes on a ROCm build use the ROCm sources."""
    if backend == "cuda":
        return "rocm" if hip_build else "cuda"
    return backend


def detect_driver(family):
    """Return (version or None, [source entries])."""
    override = os.environ.get(DRIVER_OVERRIDE_ENV)
    if override:
        return override, [{"source": "env:" + DRIVER_OVERRIDE_ENV, "outcome": "value", "value": override}]
    entries = []
    version = None
    for kind, target, parser_name in DRIVER_SOURCES.get(family, ()):
        label = target if kind == "file" else " ".join(target)
        text, problem = read_text(target) if kind == "file" else run_tool(target)
        if problem:  # absent, unreadable, or a tool that exited non-zero: its output is not trusted
            entries.append({"source": label, "outcome": problem})
            continue
        value = _parser(parser_name)(text or "")
        if value:
            entries.append({"source": label, "outcome": "value", "value": value})
            version = version or value
        else:
            entries.append({"source": label, "outcome": "failed: output not understood"})
    return version, entries


def os_name():
    system = platform.system().lower()
    return {"linux": "linux", "windows": "windows", "darwin": "macos"}.get(system, "other")


def arch_name():
    """x86_64 / aarch64 (Linux) / arm64 (macOS), per the architecture doc's identifiers."""
    machine = platform.machine().lower()
    if machine in ("amd64", "x86_64", "x64"):
        return "x86_64"
    if machine in ("arm64", "aarch64"):
        return "arm64" if os_name() == "macos" else "aarch64"
    return machine or "unknown"


def python_version():
    """'3.11.7', or '3.13.1t' on a free-threaded build."""
    version = platform.python_version()
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        version += "t"
    return version


def cpu_model():
    text, _ = read_text("/proc/cpuinfo", limit=262144)
    if text:
        for line in text.splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")) and ":" in line:
                return line.split(":", 1)[1].strip()
    return platform.processor() or None


def glibc_version():
    """The C library's glibc version ('2.35'), or None where it is not glibc (musl, macOS, Windows): what
    manylinux wheels need (collect_env's "Libc version")."""
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, OSError, ValueError):
        return None
    return tool_parsers.parse_gnu_libc_version(text)


def host_summary():
    return {
        "os": os_name(),
        "arch": arch_name(),
        "python_version": python_version(),
        "python_implementation": platform.python_implementation(),
        "os_release": platform.release(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "executable_is_64bit": sys.maxsize > 2**32,
    }
