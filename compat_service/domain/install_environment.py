"""What `accelenv doctor` reports beside the checks, as collect_env does: the facts of an installed torch
that bear on whether it can work here.

Pure: the caller reads the files (the torch wheel's ``WHEEL`` tags, ``torch/version.py``, package metadata,
the host's glibc through ``probes.host.facts``) and passes the text in. The findings: the wheel's manylinux
floor against the host's glibc (a wheel for a newer glibc fails at ``import torch``), the CUDA / ROCm
runtime torch was built with against its build label, and the cuDNN the CUDA wheels load.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from packaging.version import InvalidVersion, Version

from compat_service.domain.diagnosis import Finding
from compat_service.domain.json_types import JsonObject

#: PEP 600: the legacy manylinux tags are aliases of manylinux_2_5, _2_12 and _2_17 (a standard's grammar,
#: like the build-label one, not product data)
_LEGACY_MANYLINUX = {"manylinux1": "2.5", "manylinux2010": "2.12", "manylinux2014": "2.17"}
_MANYLINUX_TAG = re.compile(r"^(manylinux_(\d+)_(\d+)|manylinux1|manylinux2010|manylinux2014)_")
#: packages collect_env lists under "Versions of relevant libraries", by name prefix (normalised names)
RELEVANT_PREFIXES = ("torch", "triton", "pytorch-triton", "nvidia-", "numpy", "intel-extension-for-pytorch",
                     "onnx", "optree", "mkl")
_CUDNN_PACKAGE = re.compile(r"^nvidia-cudnn-cu\d+$")
_BUILD_CONSTANTS = ("cuda", "hip", "rocm", "xpu", "debug")


@dataclass(frozen=True)
class InstalledEnvironment:
    """Facts read from the environment; None = not known (not read, or not there)."""

    #: the host's glibc ('2.35'); None on musl, macOS, Windows or when unreadable
    glibc: str | None = None
    #: the ``Tag:`` lines of torch's WHEEL file, e.g. ('cp311-cp311-manylinux_2_28_x86_64',)
    wheel_tags: tuple[str, ...] = ()
    #: torch.version constants as built: {'cuda': '12.6', 'hip': None, ...} (from torch/version.py)
    torch_build: JsonObject = field(default_factory=dict)
    #: relevant installed packages (see RELEVANT_PREFIXES): normalised name -> version
    packages: dict[str, str] = field(default_factory=dict)

    @property
    def manylinux_floor(self) -> str | None:
        return manylinux_floor(self.wheel_tags)

    @property
    def cudnn(self) -> tuple[str, str] | None:
        """(package, version) of the cuDNN the CUDA wheels load (nvidia-cudnn-cuXX), if installed."""
        found = sorted((name, version) for name, version in self.packages.items() if _CUDNN_PACKAGE.match(name))
        return found[-1] if found else None

    def to_json(self) -> JsonObject:
        cudnn = self.cudnn
        return {
            "glibc": self.glibc,
            "wheel_tags": list(self.wheel_tags),
            "manylinux_floor": self.manylinux_floor,
            "torch_cuda": self.torch_build.get("cuda"),
            "torch_hip": self.torch_build.get("hip"),
            "cudnn": {"package": cudnn[0], "version": cudnn[1]} if cudnn else None,
            "packages": dict(sorted(self.packages.items())),
        }


def normalise_name(name: str) -> str:
    """PEP 503 normalisation: ``Torch_NPU`` -> ``torch-npu``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def is_relevant(name: str) -> bool:
    return normalise_name(name).startswith(RELEVANT_PREFIXES)


def wheel_tags(wheel_text: str | None) -> tuple[str, ...]:
    """The ``Tag:`` values of a ``.dist-info/WHEEL`` file."""
    return tuple(line.split(":", 1)[1].strip() for line in (wheel_text or "").splitlines()
                 if line.lower().startswith("tag:"))


def manylinux_floor(tags: tuple[str, ...]) -> str | None:
    """The lowest glibc a wheel's manylinux platform tags accept ('2.28'), or None (not a manylinux wheel)."""
    floors = []
    for tag in tags:
        platform = tag.split("-")[-1]
        for part in platform.split("."):  # compressed tag sets: manylinux_2_17_x86_64.manylinux2014_x86_64
            match = _MANYLINUX_TAG.match(part)
            if match:
                floors.append(f"{match.group(2)}.{match.group(3)}" if match.group(2) else
                              _LEGACY_MANYLINUX[match.group(1)])
    return min(floors, key=Version) if floors else None


def torch_build_constants(version_py: str | None) -> JsonObject:
    """The build constants of ``torch/version.py`` (``cuda = '12.6'``, ``hip: Optional[str] = None``), read
    without importing torch; unreadable text gives {}."""
    try:
        tree = ast.parse(version_py or "")
    except SyntaxError:
        return {}
    found: JsonObject = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else (
            node.target if isinstance(node, ast.AnnAssign) else None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and target.id in _BUILD_CONSTANTS and isinstance(value, ast.Constant):
            found[target.id] = value.value
    return found


def _version(text: str | None) -> Version | None:
    try:
        return Version(text) if text else None
    except InvalidVersion:
        return None


def _glibc_finding(env: InstalledEnvironment, floor: str) -> Finding:
    """Whether the host's glibc meets the installed wheel's manylinux floor."""
    glibc = env.glibc
    if glibc is None:
        return Finding(
            "glibc", "warning", f"torch's wheel is manylinux (glibc >= {floor}), and this host's C library "
            "is not glibc or could not be read: `import torch` may fail",
            "on musl (Alpine) use a glibc-based image, or build torch from source")
    if (_version(glibc) or Version("0")) < (_version(floor) or Version("0")):
        return Finding(
            "glibc", "error", f"torch's wheel needs glibc >= {floor} ({', '.join(env.wheel_tags)}), "
            f"this host has glibc {glibc}: `import torch` fails",
            f"use a distribution with glibc >= {floor}, or an older torch whose wheels target this glibc")
    return Finding("glibc", "ok", f"glibc {glibc} meets the wheel's manylinux floor {floor}")


def environment_findings(env: InstalledEnvironment, *, os_name: str, build: str | None) -> list[Finding]:
    """The collect_env facts that decide whether the installed torch can work here, as findings."""
    findings = []
    floor = env.manylinux_floor
    if os_name == "linux" and floor is not None:
        findings.append(_glibc_finding(env, floor))
    cuda, hip = env.torch_build.get("cuda"), env.torch_build.get("hip")
    if build and build.startswith("cu") and cuda:
        built = "cu" + cuda.replace(".", "")
        if built != build:
            findings.append(Finding(
                "cuda-runtime", "warning", f"torch says it was built with CUDA {cuda} ({built}), its build label "
                f"is {build}: the install mixes builds", f"reinstall torch from the {build} index"))
        else:
            findings.append(Finding("cuda-runtime", "ok", f"built with CUDA {cuda}"))
    elif hip:
        findings.append(Finding("cuda-runtime", "ok", f"built with ROCm (HIP {hip})"))
    cudnn = env.cudnn
    if cuda and cudnn:
        findings.append(Finding("cudnn", "ok", f"cuDNN {cudnn[1]} from {cudnn[0]}"))
    return findings
