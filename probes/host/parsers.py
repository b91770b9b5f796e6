"""Pure parsers for driver files and vendor tools: text in, facts out (no I/O).

Each parser takes the verbatim text a file or command produced and returns a value or ``None`` (never
raises on odd input): the probe reports what it could not read instead of crashing. The I/O step that
reads the files and runs the tools lives in ``host_facts``; tests feed these parsers captured outputs
kept under ``tests/data/host_tools/`` (one parser per file or tool output; ``tests/probes/test_tool_parsers.py``).
"""

import json
import re

_VERSION = r"\d+(?:\.[0-9A-Za-z]+)+"


def parse_nvidia_sysfs_version(text):
    """``/sys/module/nvidia/version`` holds only the version, e.g. ``550.144.03``."""
    match = re.match(r"\s*(" + _VERSION + r")\s*$", text or "")
    return match.group(1) if match else None


def parse_nvidia_proc_version(text):
    """First line of ``/proc/driver/nvidia/version``.

    ``NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.144.03  Release Build ...`` or the older
    ``NVRM version: NVIDIA UNIX x86_64 Kernel Module  375.74  <date>``: the version is the first field that
    looks like one after the module description.
    """
    for line in (text or "").splitlines():
        if line.startswith("NVRM version:"):
            match = re.search(r"Kernel Module(?: for \w+)?\s+(" + _VERSION + r")\b", line)
            return match.group(1) if match else None
    return None


#: the one nvidia-smi query host detection runs: driver, compute capability and name of every GPU
NVIDIA_SMI_QUERY_FIELDS = ("driver_version", "compute_cap", "name")


def parse_nvidia_smi_query(text, fields=NVIDIA_SMI_QUERY_FIELDS):
    """``nvidia-smi --query-gpu=F1,F2,... --format=csv[,noheader]``: one dict per GPU, ``{field: value}``.

    The first field must be numeric (``driver_version``): lines that do not start with a digit are the
    csv header or an error message and are skipped. Missing trailing fields and ``[N/A]`` (``compute_cap``
    on drivers that predate it) are ``None``; a ``compute_cap`` that is not ``X.Y`` is ``None`` too.
    """
    gpus = []
    for line in (text or "").splitlines():
        if not re.match(r"^\s*[0-9]", line):
            continue
        values = [v.strip() for v in line.split(",", len(fields) - 1)]
        values += [None] * (len(fields) - len(values))
        row = {}
        for name, value in zip(fields, values):
            if value in ("", "[N/A]", "N/A", "[Not Supported]"):
                value = None
            if name == "compute_cap" and value is not None and not re.match(r"^\d{1,2}\.\d$", value):
                value = None
            row[name] = value
        gpus.append(row)
    return gpus


def parse_nvidia_smi_banner(text):
    """Plain ``nvidia-smi``: the banner line ``Driver Version: 550.40.07   CUDA Version: 12.4``.

    Returns ``{'driver_version': ..., 'cuda_version': ...}`` with ``None`` for what is missing (old drivers
    print no CUDA version; 610+ print ``CUDA UMD Version``).
    """
    text = text or ""
    driver = re.search(r"(?:Driver|KMD) Version:\s*(" + _VERSION + r")", text)
    cuda = re.search(r"CUDA (?:UMD )?Version:\s*(\d+\.\d+)", text)
    return {
        "driver_version": driver.group(1) if driver else None,
        "cuda_version": cuda.group(1) if cuda else None,
    }


def parse_nvidia_smi_gpus(text):
    """GPU rows of plain ``nvidia-smi``: ``|   0  NVIDIA GeForce RTX 4070   Off | ...`` -> index and name."""
    gpus = []
    for line in (text or "").splitlines():
        match = re.match(r"^\|\s+(\d+)\s+(.+?)\s+(?:On|Off)\s+\|", line)
        if match:
            gpus.append({"index": int(match.group(1)), "name": match.group(2).strip()})
    return gpus


def parse_rocm_smi_driver(text):
    """``rocm-smi --showdriverversion`` (or ``-a``): ``Driver version: 6.7.0``; ``--json`` form too.

    The value is the amdgpu kernel module version, or the kernel version when amdgpu is built in
    (e.g. ``6.14.0-28-generic``), which is what rocm-smi itself prints.
    """
    text = text or ""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            payload = json.loads(stripped)
        except ValueError:
            payload = None
        if isinstance(payload, dict):
            for section in payload.values():
                if isinstance(section, dict) and section.get("Driver version"):
                    return str(section["Driver version"]).strip()
        return None
    match = re.search(r"^Driver version:\s*(\S+)\s*$", text, re.MULTILINE)
    return match.group(1) if match else None


def parse_rocminfo_gfx(text):
    """``rocminfo``: the gfx target of every GPU agent (``Name: gfx1100``), in agent order, without repeats."""
    seen = []
    for target in re.findall(r"^\s*Name:\s+(gfx[0-9a-f]{3,5})\b", text or "", re.MULTILINE):
        if target not in seen:
            seen.append(target)
    return seen


def parse_rocm_version_file(text):
    """``/opt/rocm/.info/version`` (the installed ROCm, not the kernel driver): ``6.0.2-115`` -> ``6.0.2``."""
    match = re.match(r"^(\d+\.\d+(?:\.\d+)?)", (text or "").strip())
    return match.group(1) if match else None


def parse_sycl_ls_gpus(text):
    """``sycl-ls``: the names of the Level Zero GPUs (the devices torch's XPU backend drives)."""
    names = []
    for line in (text or "").splitlines():
        if line.startswith("[level_zero:gpu]"):
            rest = line.split("]", 2)[-1].strip()
            names.append(rest.split(", ", 1)[-1])
    return names


def parse_rocm_smi_gfx(text):
    """``GPU[0] : GFX Version: gfx942`` lines of ``rocm-smi --showproductname`` -> ['gfx942', ...]."""
    return re.findall(r"GFX Version:\s*(gfx[0-9a-f]+)", text or "")


def parse_npu_smi_info(text):
    """``npu-smi info``: the banner ``| npu-smi 24.1.RC2   Version: 24.1.RC2 |`` and one row pair per NPU.

    Returns ``{'driver_version', 'npus': [{'npu', 'name', 'health', 'hbm_total_mb'}]}``.
    """
    text = text or ""
    version = re.search(r"npu-smi\s+\S+\s+Version:\s*(\S+)", text)
    npus = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        # the NPU row names the chip (it has a letter: 910B4, 310P3); the row under it (chip, device,
        # bus id) is its usage row, never an NPU of its own even where its columns look alike (310B4)
        head = re.match(r"^\|\s*(\d+)\s+(\S*[A-Za-z]\S*)\s*\|\s*(OK|Warning|Alarm|Critical|\w+)\s*\|", lines[i])
        if not head:
            i += 1
            continue
        entry = {"npu": int(head.group(1)), "name": head.group(2), "health": head.group(3), "hbm_total_mb": None}
        if i + 1 < len(lines):
            usage = re.findall(r"(\d+)\s*/\s*(\d+)", lines[i + 1])
            if usage:
                entry["hbm_total_mb"] = int(usage[-1][1])
        npus.append(entry)
        i += 2
    return {"driver_version": version.group(1) if version else None, "npus": npus}


def parse_ascend_version_info(text):
    """``/usr/local/Ascend/driver/version.info``: a ``Version=23.0.rc3`` line."""
    match = re.search(r"^\s*[Vv]ersion\s*=\s*(\S+)\s*$", text or "", re.MULTILINE)
    return match.group(1) if match else None


def parse_ascend_toolkit_install_info(text):
    """CANN's ``ascend_toolkit_install.info``: ``version=8.0.0`` (or ``8.0.RC3``) among key=value lines."""
    match = re.search(r"^\s*version\s*=\s*(\S+)\s*$", text or "", re.MULTILINE)
    return match.group(1) if match else None


def parse_cnmon(text):
    """Plain ``cnmon``: ``Driver v5.10.22`` in the banner (driver 5+), or per card (4.x: ``On  v4.20.11``).

    Returns ``{'driver_version', 'cards': [{'card', 'name'}]}``; the version without its leading ``v``.
    """
    text = text or ""
    version = re.search(r"Driver\s+v(\d+\.\d+\.\d+)", text)
    if not version:
        version = re.search(r"\|\s*On\s+v(\d+\.\d+\.\d+)\s*\|", text)
    cards = []
    for line in text.splitlines():
        match = re.match(r"^\|\s*(\d+)\s+\S+\s+(MLU[0-9A-Za-z\-]+)\s", line)
        if match:
            cards.append({"card": int(match.group(1)), "name": match.group(2)})
    return {"driver_version": version.group(1) if version else None, "cards": cards}


def parse_amdgpu_sysfs_version(text):
    """``/sys/module/amdgpu/version``: the amdgpu kernel-mode driver version, e.g. ``6.7.0``."""
    match = re.match(r"\s*(\d+\.\d+(?:\.\d+)*)\s*$", text or "")
    return match.group(1) if match else None


def parse_gnu_libc_version(text):
    """``os.confstr('CS_GNU_LIBC_VERSION')``, e.g. ``glibc 2.35``: the glibc version, or None (musl, other)."""
    match = re.match(r"\s*glibc\s+(\d+\.\d+)", text or "")
    return match.group(1) if match else None
