"""accelenv's one host detection, the I/O step: read driver files, run vendor tools, describe the host.

The probe uses it on the target host (torch tells it the backend; it looks up the driver), and the CLI
imports it for ``accelenv resolve --backend auto`` and ``accelenv doctor`` (no torch: ``detect_host`` finds
the accelerator itself). Parsing is in ``tool_parsers`` (pure, tested on captured outputs). Every source
consulted ends as an entry ``{"source", "outcome"}``: outcome ``value`` (with the ``value``), ``absent``
(file or tool not there) or ``failed: why`` (there but unreadable, timed out, exited non-zero, or its
output not understood). Nothing here raises on missing hardware.

Detection order of ``detect_host`` (first family with a value wins; every look is in ``sources``):

1. cuda: /sys/module/nvidia/version, /proc/driver/nvidia/version, then
   ``nvidia-smi --query-gpu=driver_version,compute_cap,name --format=csv,noheader`` (also the only source of
   the compute capability and the GPU name).
2. rocm: /sys/module/amdgpu/version, ``rocm-smi --showdriverversion`` (the amdgpu driver), then
   /opt/rocm/.info/version (the installed ROCm), ``rocminfo`` / ``rocm-smi --showproductname`` (gfx target).
3. xpu: ``sycl-ls`` (Level Zero GPUs).
4. npu: /usr/local/Ascend/driver/version.info, ``npu-smi info`` (driver, chip name), the CANN toolkit's
   ``ascend_toolkit_install.info`` (the runtime, under ascend-toolkit/latest or cann/).
5. mlu: ``cnmon`` (driver, card name).
6. otherwise mps on macOS arm64, else cpu.

Override variables (the one list; the README and the CLI point here), for CI and odd hosts:

- ``ACCELENV_BACKEND``: skip accelerator detection and report this backend (``detect_host`` only: the
  probe's backend is the torch device it tests).
- ``ACCELENV_DRIVER_VERSION``: replaces the detected driver version (probe and CLI).
- ``ACCELENV_GPU_ARCH``: replaces the detected GPU architecture, e.g. ``sm_90`` or ``gfx942`` (probe and
  CLI). ``ACCELENV_DEVICE_ARCH``, the probe's old name for it, is still read (deprecated).
"""

import os
import platform
import sys
import sysconfig

from probes.host import arch_compat
from probes.host import parsers as tool_parsers

BACKEND_OVERRIDE_ENV = "ACCELENV_BACKEND"
DRIVER_OVERRIDE_ENV = "ACCELENV_DRIVER_VERSION"
GPU_ARCH_OVERRIDE_ENV = "ACCELENV_GPU_ARCH"
#: deprecated alias of ACCELENV_GPU_ARCH (the probe read this name before detection was merged)
GPU_ARCH_OVERRIDE_ALIAS = "ACCELENV_DEVICE_ARCH"
TOOL_TIMEOUT_S = 10

NVIDIA_SMI_QUERY = (
    "nvidia-smi", "--query-gpu=" + ",".join(tool_parsers.NVIDIA_SMI_QUERY_FIELDS), "--format=csv,noheader",
)
#: drivers older than the compute_cap field reject the query above; this one works on all of them
NVIDIA_SMI_DRIVER_QUERY = ("nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader")

# Driver sources per backend family, in the order consulted (all are consulted, except a "fallback" one
# when an earlier source gave a value; the first value wins).
# Paths and commands from the field survey, section 5: uv's accelerator.rs (NVIDIA sysfs/procfs),
# collect_env, gpustack parsers.
DRIVER_SOURCES = {
    "cuda": (
        ("file", "/sys/module/nvidia/version", "parse_nvidia_sysfs_version"),
        ("file", "/proc/driver/nvidia/version", "parse_nvidia_proc_version"),
        ("command", NVIDIA_SMI_QUERY, "nvidia_smi_driver"),
        ("command", NVIDIA_SMI_DRIVER_QUERY, "nvidia_smi_driver", "fallback"),
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
# The installed vendor runtime, where the host has one apart from the driver (torch wheels bundle their own).
RUNTIME_SOURCES = {
    "rocm": (("file", "/opt/rocm/.info/version", "parse_rocm_version_file"),),
    # CANN's toolkit records its version in ascend_toolkit_install.info: under ascend-toolkit/latest up to
    # 8.3, under cann/ from 8.5 (Ascend's install guide); one per CPU architecture
    "npu": tuple(
        ("file", "/usr/local/Ascend/%s/%s-linux/ascend_toolkit_install.info" % (where, cpu),
         "parse_ascend_toolkit_install_info", "fallback")
        for where in ("ascend-toolkit/latest", "cann") for cpu in ("aarch64", "x86_64")
    ),
}
# What names the device: each parser gives {"arch", "name"} of the first device; the first source with a
# value wins (a tool already run for the driver is not run again).
DEVICE_SOURCES = {
    "cuda": (("command", NVIDIA_SMI_QUERY, "nvidia_smi_device"),),
    "rocm": (
        ("command", ("rocminfo",), "rocminfo_device"),
        ("command", ("rocm-smi", "--showproductname"), "rocm_smi_device"),
    ),
    "xpu": (("command", ("sycl-ls",), "sycl_ls_device"),),
    "npu": (("command", ("npu-smi", "info"), "npu_device"),),
    "mlu": (("command", ("cnmon",), "mlu_device"),),
}
#: the families detect_host looks for, in order
DETECTION_ORDER = ("cuda", "rocm", "xpu", "npu", "mlu")


def _nvidia_smi_driver(text):
    gpus = tool_parsers.parse_nvidia_smi_query(text)
    return gpus[0]["driver_version"] if gpus else None


def _nvidia_smi_device(text):
    """The host's GPU for resolving: on a multi-GPU host the lowest compute capability (a build must run on
    every GPU), its name saying so ("NVIDIA A100 ... (lowest of 2 GPUs: ...)")."""
    gpus = [g for g in tool_parsers.parse_nvidia_smi_query(text) if g["compute_cap"] or g["name"]]
    if not gpus:
        return None
    lowest = min(gpus, key=_capability)
    cap = lowest["compute_cap"]
    arch = arch_compat.cuda_arch_name(_capability(lowest)) if cap and _capability(lowest) != (99, 9) else None
    return {"arch": arch, "name": _lowest_name(lowest, gpus)}


def _capability(gpu):
    """A GPU's compute capability as a tuple; (99, 9), above every real one, when it is not known."""
    cap = gpu["compute_cap"]
    try:
        return tuple(int(p) for p in cap.split(".")) if cap else (99, 9)
    except ValueError:
        return (99, 9)


def _lowest_name(lowest, gpus):
    """The lowest GPU's name; on a host with several kinds of GPU, saying it is the lowest of them."""
    name = lowest["name"]
    kinds = sorted({(g["name"], g["compute_cap"]) for g in gpus}, key=lambda k: (k[0] or "", k[1] or ""))
    if len(kinds) > 1:
        listed = ", ".join("%s (%s)" % (n, c) for n, c in kinds)
        name = "%s (lowest capability of %d GPUs: %s)" % (name, len(gpus), listed)
    return name


def _first_gfx(parse):
    def device(text):
        targets = parse(text)
        return {"arch": targets[0], "name": None} if targets else None
    return device


def _sycl_ls_device(text):
    names = tool_parsers.parse_sycl_ls_gpus(text)
    return {"arch": None, "name": names[0]} if names else None


def _npu_driver(text):
    return tool_parsers.parse_npu_smi_info(text)["driver_version"]


def _npu_device(text):
    npus = tool_parsers.parse_npu_smi_info(text)["npus"]
    return {"arch": None, "name": npus[0]["name"]} if npus else None


def _mlu_driver(text):
    return tool_parsers.parse_cnmon(text)["driver_version"]


def _mlu_device(text):
    cards = tool_parsers.parse_cnmon(text)["cards"]
    return {"arch": None, "name": cards[0]["name"]} if cards else None


_LOCAL_PARSERS = {
    "nvidia_smi_driver": _nvidia_smi_driver, "nvidia_smi_device": _nvidia_smi_device,
    "rocminfo_device": _first_gfx(tool_parsers.parse_rocminfo_gfx),
    "rocm_smi_device": _first_gfx(tool_parsers.parse_rocm_smi_gfx),
    "sycl_ls_device": _sycl_ls_device, "npu_driver": _npu_driver, "npu_device": _npu_device,
    "mlu_driver": _mlu_driver, "mlu_device": _mlu_device,
}


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
    # imported here: `accelenv resolve` with its target named runs no tool and need not pay for them (~2 ms)
    import shutil
    import subprocess

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


class _Looker:
    """Reads files under ``root`` and runs tools, each at most once per detection."""

    def __init__(self, root="/", timeout=TOOL_TIMEOUT_S):
        self.root = root
        self.timeout = timeout
        self._seen = {}

    def fetch(self, kind, target):
        key = (kind, target)
        if key not in self._seen:
            if kind == "file":
                self._seen[key] = read_text(os.path.join(self.root, target.lstrip("/")))
            else:
                self._seen[key] = run_tool(target, self.timeout)
        return self._seen[key]

    def consult(self, sources, first_only=False):
        """(first value or None, [source entries]) over ``sources`` of (kind, target, parser name[, "fallback"])."""
        entries = []
        found = None
        for source in sources:
            kind, target, parser_name = source[:3]
            if found and source[3:] == ("fallback",):
                continue
            label = target if kind == "file" else " ".join(target)
            text, problem = self.fetch(kind, target)
            if problem:  # absent, unreadable, or a tool that exited non-zero: its output is not trusted
                entries.append({"source": label, "outcome": problem})
                continue
            value = _parser(parser_name)(text or "")
            if value:
                entries.append({"source": label, "outcome": "value", "value": value})
                found = found or value
                if first_only:
                    break
            else:
                entries.append({"source": label, "outcome": "failed: output not understood"})
        return found, entries


def _environ(env):
    return os.environ if env is None else env


def override(name, env=None):
    """The value of an override variable, or None when unset or empty."""
    return _environ(env).get(name) or None


def gpu_arch_override(env=None):
    """ACCELENV_GPU_ARCH, else its deprecated alias ACCELENV_DEVICE_ARCH."""
    return override(GPU_ARCH_OVERRIDE_ENV, env) or override(GPU_ARCH_OVERRIDE_ALIAS, env)


def driver_family(backend, hip_build):
    """Which driver table applies: CUDA-device probes on a ROCm build use the ROCm sources."""
    if backend == "cuda":
        return "rocm" if hip_build else "cuda"
    return backend


def detect_driver(family, env=None, root="/", looker=None):
    """Return (version or None, [source entries])."""
    forced = override(DRIVER_OVERRIDE_ENV, env)
    if forced:
        return forced, [{"source": "env:" + DRIVER_OVERRIDE_ENV, "outcome": "value", "value": forced}]
    return (looker or _Looker(root)).consult(DRIVER_SOURCES.get(family, ()))


def _detect_family(host, looker):
    """Fill ``host`` with the first accelerator family whose driver, runtime or device is found; else the
    platform's default (mps on arm64 macOS, cpu)."""
    for family in DETECTION_ORDER:
        driver, entries = looker.consult(DRIVER_SOURCES.get(family, ()))
        runtime, more = looker.consult(RUNTIME_SOURCES.get(family, ()))
        device, most = looker.consult(DEVICE_SOURCES.get(family, ()), first_only=True)
        host["sources"] += entries + more + most
        if driver or runtime or device:
            host.update(backend=family, driver_version=driver, runtime_version=runtime,
                        device_arch=(device or {}).get("arch"), device_name=(device or {}).get("name"))
            return
    host["backend"] = "mps" if (host["os"], host["arch"]) == ("macos", "arm64") else "cpu"
    host["sources"].append({"source": "platform", "outcome": "value",
                            "value": "%s-%s" % (host["os"], host["arch"])})


def detect_host(env=None, root="/", host_os=None, host_arch=None, timeout=TOOL_TIMEOUT_S):
    """This host without torch: the accelerator, its driver and first device, and what was consulted.

    Returns ``{"os", "arch", "python", "backend", "driver_version", "runtime_version", "device_arch",
    "device_name", "sources"}``; ``backend`` is a family (cuda, rocm, xpu, npu, mlu, mps, cpu) or what
    ACCELENV_BACKEND says. ``root``, ``host_os`` and ``host_arch`` let tests describe another host.
    """
    host = {
        "os": host_os or os_name(), "arch": host_arch or arch_name(), "python": python_minor(),
        "backend": None, "driver_version": None, "runtime_version": None,
        "device_arch": None, "device_name": None, "sources": [],
    }
    forced = override(BACKEND_OVERRIDE_ENV, env)
    if forced:
        host["backend"] = forced
        host["sources"].append({"source": "env:" + BACKEND_OVERRIDE_ENV, "outcome": "value", "value": forced})
    if not forced:
        _detect_family(host, _Looker(root, timeout))
    forced_driver = override(DRIVER_OVERRIDE_ENV, env)
    if forced_driver:
        host["driver_version"] = forced_driver
        host["sources"].append({"source": "env:" + DRIVER_OVERRIDE_ENV, "outcome": "value", "value": forced_driver})
    forced_arch = gpu_arch_override(env)
    if forced_arch:
        host["device_arch"] = forced_arch
        host["sources"].append({"source": "env:" + GPU_ARCH_OVERRIDE_ENV, "outcome": "value", "value": forced_arch})
    return host


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


def python_minor():
    """'3.11', or '3.13t' on a free-threaded build: the form the matrix and the resolver use."""
    return "%d.%d%s" % (sys.version_info[0], sys.version_info[1],
                        "t" if sysconfig.get_config_var("Py_GIL_DISABLED") else "")


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
