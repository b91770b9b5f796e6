"""Backends and targets: the build-label grammar, the families, the platforms and their normalisation.

The one home of these rules; the matrix schema, the resolver, the evidence keys and `doctor` all read them
here. Plain Python (no pydantic): the resolver's fast path imports this module.

- **Build label**: ``cpu``, ``cuXYZ`` (cu121), ``rocmX.Y[.Z]``, ``xpu``. The family of a label the matrix
  lists is the ``family`` its row in ``matrix_data/build_variants.yaml`` gives (`Matrix.build_variant`);
  `label_family` reads the label itself, for labels met outside the matrix (a probe report's local tag, an
  installed torch). The matrix validation checks every build_variants row against this grammar, so the
  two never disagree.
- **Families** a request may name: the label families plus ``mps`` (the macOS default wheel) and the
  PrivateUse1 vendor plugins (``npu``, ``mlu``) that run on the CPU build (`PLUGINS`).
- **Platform** ``{os}-{arch}``. ``arm64`` and ``aarch64`` are one CPU, said per OS: ``aarch64`` on Linux,
  ``arm64`` on macOS and Windows (the wheel tags ``macosx_*_arm64`` / ``win_arm64``); `normalise_arch`
  is the one normalisation, for requests and probe reports alike.
- **Python**: ``3.11``; free-threaded ``3.13t``, ordered right after ``3.13`` (`python_sort_key`).
"""

from __future__ import annotations

import re
from typing import Literal, get_args

from compat_service.domain.record import Record

#: the grammar of a build label (also the pydantic pattern of build_variants.yaml's ``label``)
BUILD_LABEL_PATTERN = r"^(cpu|cu\d{3}|rocm\d+\.\d+(\.\d+)?|xpu)$"
_BUILD_LABEL_RE = re.compile(BUILD_LABEL_PATTERN)
#: label prefix -> family, in the order the grammar lists them
LABEL_PREFIXES: tuple[tuple[str, str], ...] = (
    ("cpu", "cpu"), ("cu", "cuda"), ("rocm", "rocm"), ("xpu", "xpu")
)

BackendFamily = Literal["cpu", "cuda", "rocm", "xpu", "mps", "npu", "mlu"]
#: families a build label has (build_variants.yaml ``family``)
LABEL_FAMILIES: tuple[str, ...] = tuple(family for _, family in LABEL_PREFIXES)
#: families a request may name: "the best build of that family for the target"
REQUEST_FAMILIES: tuple[str, ...] = ("cuda", "rocm", "xpu", "mps", "npu", "mlu")
#: families whose torch wheel is the CPU build plus something else (a plugin, or MPS inside the CPU wheel)
CPU_WHEEL_FAMILIES: tuple[str, ...] = ("cpu", "mps", "npu", "mlu")


class VendorPlugin(Record):
    """A PrivateUse1 vendor backend: a plugin package on a CPU torch, declared in vendor_backends.yaml."""

    __slots__ = ("family", "table", "version_field", "package", "install_note")
    family: str
    #: the list in vendor_backends.yaml (and the `Matrix` method that returns it)
    table: str
    #: the column of that list holding the plugin's version
    version_field: str
    #: the plugin's name as users read it
    package: str
    #: the key of its install note in the matrix
    install_note: str

    def __init__(self, family: str, table: str, version_field: str, package: str, install_note: str) -> None:
        self.family = family
        self.table = table
        self.version_field = version_field
        self.package = package
        self.install_note = install_note


PLUGINS: dict[str, VendorPlugin] = {
    "npu": VendorPlugin("npu", "ascend_npu", "torch_npu", "torch-npu", "ascend"),
    "mlu": VendorPlugin("mlu", "cambricon_mlu", "torch_mlu", "torch_mlu", "cambricon"),
}
PLUGIN_FAMILIES: tuple[str, ...] = tuple(PLUGINS)

#: what ``--runtime`` names for each family that takes one (the host's vendor runtime), and where the matrix
#: keeps it: the plugin row's column (npu, mlu) or the build's ROCm release (rocm, matched on major.minor)
RUNTIME_NAMES: dict[str, str] = {"npu": "CANN", "rocm": "ROCm", "mlu": "Cambricon toolkit"}
RUNTIME_COLUMNS: dict[str, str] = {"npu": "cann", "mlu": "toolkit"}

#: torch device types each label family drives (the evidence side: a probe report names a device type).
#: A ROCm build exposes its GPUs as ``cuda``; the macOS default wheel (label ``cpu``) drives ``mps``;
#: every build runs on the CPU.
DEVICE_TYPES_BY_FAMILY: dict[str, frozenset[str]] = {
    "cpu": frozenset({"cpu", "mps"}),
    "cuda": frozenset({"cpu", "cuda"}),
    "rocm": frozenset({"cpu", "cuda", "rocm"}),
    "xpu": frozenset({"cpu", "xpu"}),
}
#: the host side: the backend host detection names -> the label families that drive it as an accelerator
#: (detection says ``rocm`` for an AMD GPU, so ``cuda`` here is NVIDIA only; plugins run on the CPU build)
FAMILIES_FOR_HOST_BACKEND: dict[str, tuple[str, ...]] = {
    "cuda": ("cuda",), "rocm": ("rocm",), "xpu": ("xpu",), "mps": ("cpu",),
    **{family: ("cpu",) for family in PLUGINS},
    "cpu": ("cpu", "cuda", "rocm", "xpu"),
}

Platform = Literal["linux-x86_64", "linux-aarch64", "windows-x86_64", "macos-arm64", "macos-x86_64"]
PLATFORMS: tuple[str, ...] = get_args(Platform)
OSES: tuple[str, ...] = ("linux", "windows", "macos")
ARCHES: tuple[str, ...] = ("x86_64", "aarch64", "arm64")
#: other spellings of the same CPU architecture
ARCH_ALIASES: dict[str, str] = {"amd64": "x86_64", "x64": "x86_64", "x86-64": "x86_64"}
#: how each OS says the 64-bit ARM CPU
_ARM_BY_OS: dict[str, str] = {"linux": "aarch64", "macos": "arm64", "windows": "arm64"}


def is_build_label(text: str) -> bool:
    return _BUILD_LABEL_RE.match(text) is not None


def label_family(label: str) -> str | None:
    """The family a build label's grammar names (``cu121`` -> ``cuda``); None for what is not a label."""
    if not is_build_label(label):
        return None
    return next(family for prefix, family in LABEL_PREFIXES if label.startswith(prefix))


def normalise_arch(os_name: str, arch: str) -> str:
    """The arch as the platform key says it on ``os_name`` (aliases folded, arm64/aarch64 per OS)."""
    value = arch.strip().lower()
    value = ARCH_ALIASES.get(value, value)
    if value in ("arm64", "aarch64"):
        return _ARM_BY_OS.get(os_name, value)
    return value


def python_sort_key(version: str) -> tuple[int, int, int]:
    """Order of CPython versions: 3.9 < 3.10 < 3.13 < 3.13t < 3.14."""
    free_threaded = version.endswith("t")
    major, _, minor = version.rstrip("t").partition(".")
    return int(major), int(minor), int(free_threaded)
