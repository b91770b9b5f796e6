"""The schema of matrix_data: one pydantic model per file and per row.

Conventions every file follows:
- ``null`` means *unknown* (no source gives it). A key that is required must be present, even if null,
  so an omission is an error and never silently "unknown".
- Every row carries ``source``: one or more keys defined in ``sources.yaml``.
- Versions are strings (``"12.1"``, ``"530.30.02"``, ``"2.3.1"``); they are checked with ``packaging``.
- Platforms are ``{os}-{arch}``: ``linux-x86_64``, ``linux-aarch64``, ``windows-x86_64``, ``macos-arm64``,
  ``macos-x86_64``.
- Unknown keys are errors (``extra="forbid"``): a typo must not turn into a silently ignored fact.

Every check of a single field is written once, as a reusable annotated type (`VersionStr`,
`OptionalVersion`, `DriverVersion`, `TorchSpecifier`, `PythonList`, `SourceKeys`), and the rows use them.
Cross-file rules (dangling source keys, a CUDA variant without a driver row, duplicates, ...) live in
``validation``; this module only describes the shape of each file.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Literal

from packaging.version import InvalidVersion, Version
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from compat_service.domain.backends import (
    BUILD_LABEL_PATTERN,
    PLATFORMS,
    BackendFamily,
    Platform,
    python_sort_key,
)
from compat_service.domain.versions import parse_specifier, parse_version

__all__ = ["PLATFORMS", "BackendFamily", "Platform", "python_sort_key"]
Confidence = Literal["primary", "secondary", "third-party"]

_PYTHON_RE = re.compile(r"^3\.\d{1,2}t?$")
_ARCH_RE = re.compile(r"^(sm_\d{2,3}[af]?|gfx[0-9a-f]{3,5}|compute_\d{2,3})$")
#: an Intel GPU device family as Intel's compute runtime names its configurations (BmgHwConfig -> bmg)
_INTEL_FAMILY_RE = re.compile(r"^(pvc|dg2|bmg|mtl|arl|lnl|ptl)$")


def _check_version(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        Version(value)
    except InvalidVersion as exc:
        raise ValueError(f"{value!r} is not a valid version string") from exc
    return value


def _check_python_list(versions: list[str]) -> list[str]:
    for v in versions:
        if not _PYTHON_RE.match(v):
            raise ValueError(f"{v!r} is not a Python version like '3.11' or '3.13t'")
    keys = [python_sort_key(v) for v in versions]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{versions} lists a Python version twice")
    if keys != sorted(keys):
        wanted = sorted(versions, key=python_sort_key)
        raise ValueError(f"{versions} is not in ascending order; write {wanted}")
    return versions


def _check_driver(value: str | None) -> str | None:
    if value is not None and parse_version(value) is None:
        raise ValueError(f"{value!r} is not a valid driver version")
    return value


def _check_specifier(value: str) -> str:
    if parse_specifier(value) is None:
        raise ValueError(f"{value!r} is not a version specifier like '>=2.5'")
    return value


def _one_or_many(value: object) -> object:
    """``source: key`` is short for ``source: [key]``; null is an empty list."""
    if value is None:
        return []
    return [value] if isinstance(value, str) else value


# The reusable field types of every file: each check is written once, here.
#: a version string ``packaging`` accepts ("12.1", "530.30.02", "2.3.1")
VersionStr = Annotated[str, AfterValidator(_check_version)]
#: a version string, or null = unknown
OptionalVersion = Annotated[str | None, AfterValidator(_check_version)]
#: a driver version ("535.104.05"), or null = unknown
DriverVersion = Annotated[str | None, AfterValidator(_check_driver)]
#: a PEP 440 specifier over torch versions (">=2.5,<2.7")
TorchSpecifier = Annotated[str, AfterValidator(_check_specifier)]
#: CPython versions ("3.11", "3.13t"), ascending, each once
PythonList = Annotated[list[str], AfterValidator(_check_python_list)]
#: source keys; one key may be written without the list
SourceKeys = Annotated[list[str], BeforeValidator(_one_or_many)]


class IndexOverride(BaseModel):
    """A curated value kept over what the package index states (matrix_data/index/): why, and who says so."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    field: str
    reason: str = Field(min_length=1)
    source: SourceKeys = Field(min_length=1)


class Row(BaseModel):
    """Base of every data row: strict keys, and a source that is never empty."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: SourceKeys = Field(min_length=1, description="keys into sources.yaml")
    note: str | None = None


class Versioned(BaseModel):
    """A single sourced value: ``{version: "0.18.1", source: [...]}``; version null = unknown."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: OptionalVersion
    source: SourceKeys = Field(default_factory=list)
    note: str | None = None
    #: the requirement as the wheel declares it (``triton~=3.9.0``) and its PEP 508 marker, where read
    requirement: str | None = None
    marker: str | None = None
    #: platform -> the Pythons of the release's wheels for which the marker holds (evaluated at load)
    applies: dict[Platform, list[str]] | None = None


# --------------------------------------------------------------------------- sources.yaml


class Source(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str = Field(pattern=r"^[a-z0-9_]+$")
    title: str
    url: str | None = None
    confidence: Confidence
    retrieved: dt.date | None = None
    note: str | None = None


class SourcesFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_: Literal["sources/v1"] = Field(alias="schema")
    sources: list[Source]


# --------------------------------------------------------------------------- build_variants.yaml


class BuildVariant(Row):
    """A build label and the wheel index it lives on, e.g. cu121 -> .../whl/cu121."""

    label: str = Field(pattern=BUILD_LABEL_PATTERN)
    family: Literal["cpu", "cuda", "rocm", "xpu"]
    #: toolkit/runtime version the label stands for: "12.1" for cu121, "6.0" for rocm6.0; null for cpu/xpu
    runtime: OptionalVersion
    #: the full toolkit the binaries were built with where sourced (e.g. "12.8.1"), else null
    runtime_full: OptionalVersion = None
    index_url: str


class BuildVariantsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_: Literal["build_variants/v1"] = Field(alias="schema")
    variants: list[BuildVariant]


# --------------------------------------------------------------------------- torch_releases.yaml


class VariantAvailability(Row):
    """One build variant of a torch minor and the platforms it was published for."""

    label: str
    platforms: list[Platform] = Field(min_length=1)
    #: patches of the minor that have this variant; null = all patches of the minor
    patches: list[str] | None = None


class PythonSupport(Row):
    """The CPython versions (``3.13t`` = free-threaded) with wheels; ``platforms`` limits an entry."""

    versions: PythonList = Field(min_length=1)
    #: null = every platform the release has wheels for
    platforms: list[Platform] | None = None


class WheelFiles(BaseModel):
    """What one pinned package's wheels on one platform ask of a host, read from their file names on the index.

    Filled by the index layer (``matrix_data/index/<package>.yaml``) for torch and the companions it pins; the
    resolver checks the host's platform tags (glibc, musl, macOS) and full Python against them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    package: str
    version: VersionStr
    platform: Platform
    #: the Pythons with a wheel here (``3.12``, ``3.13t``; ``3.10+`` for abi3; ``any``)
    pythons: list[str]
    #: the distinct platform tags of those wheels (``manylinux_2_28_x86_64``, ``macosx_14_0_arm64``)
    platform_tags: list[str] = Field(min_length=1)
    #: the release's Requires-Python (PEP 440); null = none declared
    requires_python: str | None = None
    source: SourceKeys = Field(default_factory=list)


class TorchPatch(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: VersionStr
    release_date: dt.date | None
    release_date_source: SourceKeys = Field(default_factory=list)
    torchvision: Versioned
    torchaudio: Versioned
    triton: Versioned
    #: replaces the minor's ``python`` list for this patch only (2.12.0 has 3.13t, 2.12.1 does not)
    python_override: list[PythonSupport] | None = None
    note: str | None = None
    index_overrides: list[IndexOverride] = Field(default_factory=list)
    #: the wheels of torch and of the companions pinned with it, per platform (from the package index)
    wheels: list[WheelFiles] = Field(default_factory=list)


class DefaultIndexEntry(Row):
    """Which build the plain default package index serves for a platform (no index option)."""

    platform: Platform
    #: build label, e.g. "cu121" on linux-x86_64 for torch 2.3, "cpu" on windows; null = unknown
    label: str | None
    #: the toolkit release the default wheels pin (cuda-toolkit==13.2.2), where they pin one
    runtime_full: str | None = None
    index_overrides: list[IndexOverride] = Field(default_factory=list)


class TorchMinor(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    minor: str = Field(pattern=r"^\d+\.\d+$")
    status: Literal["released", "partial"] = "released"
    #: platforms whose variant list no source gives: a label missing there is unknown, not "not published"
    platforms_unsourced: list[Platform] = Field(default_factory=list)
    #: the option the official install commands use: "--index-url" or "--extra-index-url"
    index_option: Literal["--index-url", "--extra-index-url"] | None
    index_option_source: list[str] = Field(default_factory=list)
    python: list[PythonSupport]
    variants: list[VariantAvailability]
    default_index: list[DefaultIndexEntry]
    patches: list[TorchPatch] = Field(min_length=1)
    note: str | None = None


class TorchReleasesFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_: Literal["torch_releases/v1"] = Field(alias="schema")
    minors: list[TorchMinor]


# --------------------------------------------------------------------------- cuda.yaml


class CudaToolkit(Row):
    """A CUDA toolkit release and the driver that shipped with it (no minor-version compatibility)."""

    version: VersionStr
    min_driver_linux: DriverVersion
    min_driver_windows: DriverVersion


class MinorVersionCompat(Row):
    """NVIDIA minor-version compatibility: CUDA ``major``.x runs on a driver >= floor (with caveats)."""

    cuda_major: int
    min_driver_linux: DriverVersion
    min_driver_windows: DriverVersion
    #: first driver branch that belongs to the next major; null = open-ended
    below_driver: DriverVersion = None


class ToolkitArchRange(Row):
    """What one CUDA toolkit's nvcc can compile SASS for (offline compilation): ``min_arch`` … ``max_arch``."""

    #: PEP 440 specifier over CUDA versions, e.g. ">=12.8,<12.9"
    cuda: TorchSpecifier
    min_arch: str
    max_arch: str

    @field_validator("min_arch", "max_arch")
    @classmethod
    def _arch(cls, arch: str) -> str:
        if not re.match(r"^sm_\d{2,3}$", arch):
            raise ValueError(f"{arch!r} is not an NVIDIA architecture like 'sm_90'")
        return arch


class GpuName(Row):
    """A GPU product name (as nvidia-smi / rocminfo print it, matched without case) -> its architecture."""

    #: words that all appear in the product name, e.g. "RTX 5090" or "A100"
    name: str = Field(min_length=2)
    arch: str

    @field_validator("arch")
    @classmethod
    def _arch(cls, arch: str) -> str:
        if not (_ARCH_RE.match(arch) or _INTEL_FAMILY_RE.match(arch)):
            raise ValueError(f"{arch!r} is not a GPU architecture like 'sm_90', 'gfx942' or an Intel family 'bmg'")
        return arch


class CudaFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_: Literal["cuda/v1"] = Field(alias="schema")
    toolkits: list[CudaToolkit]
    minor_version_compatibility: list[MinorVersionCompat]
    #: per CUDA release, the sm_ range its nvcc compiles for
    toolkit_archs: list[ToolkitArchRange] = Field(default_factory=list)
    #: NVIDIA product names -> compute capability (sm_XY)
    gpu_names: list[GpuName] = Field(default_factory=list)


# --------------------------------------------------------------------------- gpu_archs.yaml


class ArchList(Row):
    """The GPU architectures a build variant ships kernels (and PTX) for, for a range of torch releases."""

    #: PEP 440 specifier over torch versions, e.g. ">=2.11,<2.12"
    torch: str
    variant: str
    platforms: list[Platform] = Field(min_length=1)
    archs: list[str] = Field(min_length=1)
    #: the newest arch shipped as PTX (runs on newer GPUs via JIT); null = none or unknown
    ptx: str | None = None

    @field_validator("archs")
    @classmethod
    def _archs(cls, archs: list[str]) -> list[str]:
        for a in archs:
            if not _ARCH_RE.match(a):
                raise ValueError(f"{a!r} is not a GPU architecture like 'sm_90' or 'gfx942'")
        return archs


class ArchSearch(Row):
    """Builds whose arch list no reachable source states: what was searched, so "unknown" is an answer.

    The builds stay unknown (no ``arch_lists`` row); ``accelenv matrix validate`` lists them with this text.
    """

    #: PEP 440 specifier over torch versions
    torch: str
    variants: list[str] = Field(min_length=1)
    platforms: list[Platform] = Field(min_length=1)
    searched: str = Field(min_length=1)


class GpuArchsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_: Literal["gpu_archs/v1"] = Field(alias="schema")
    arch_lists: list[ArchList]
    #: searched and not found (the builds stay unknown)
    searched: list[ArchSearch] = Field(default_factory=list)


# --------------------------------------------------------------------------- rocm.yaml, xpu.yaml, mps.yaml


class RocmRelease(Row):
    version: VersionStr
    #: gfx targets AMD lists as supported for this ROCm release on Linux; null = unknown
    gfx_targets: list[str] | None
    #: minimum amdgpu kernel driver where sourced
    min_driver: str | None = None
    #: torch minors AMD's third-party support matrix lists as tested with this ROCm; null = not in that table
    amd_tested_torch: list[str] | None = None


class KernelUserSpace(Row):
    """AMD's user and kernel-space support matrix: the ROCm user space releases (major.minor) tested with the
    kernel-mode driver (KMD) of one ROCm release. A pip ROCm wheel bundles its user space, so a host whose
    driver is that KMD runs a build of any listed release."""

    #: the ROCm release whose amdgpu kernel driver the host runs, major.minor ("6.3" for 6.3.x)
    kmd: VersionStr
    #: the ROCm user space releases, major.minor, AMD lists for that driver
    user_space: list[VersionStr] = Field(min_length=1)


class RocmFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_: Literal["rocm/v1"] = Field(alias="schema")
    releases: list[RocmRelease]
    #: AMD product names -> gfx target
    gpu_names: list[GpuName] = Field(default_factory=list)
    #: kernel driver -> user space releases (AMD's compatibility window); a driver not listed: same minor only
    kernel_user_space: list[KernelUserSpace] = Field(default_factory=list)


class XpuSupport(Row):
    torch: TorchSpecifier
    driver_requirement: str | None
    hardware: list[str] | None
    #: what a binary (pip) install needs on the host besides the wheels: the Intel GPU driver alone, or also
    #: Intel's support package with its environment activated (2.5); null = not sourced
    binary_prerequisite: Literal["driver", "driver-and-support-package"] | None = None
    #: the platforms whose xpu index has no torchvision/torchaudio wheels for these releases (build from source)
    no_companion_wheels: list[Platform] = Field(default_factory=list)


class XpuFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_: Literal["xpu/v1"] = Field(alias="schema")
    support: list[XpuSupport]
    #: Intel GPU product names -> device family (pvc, dg2, bmg, ...); every one is an xpu target
    gpu_names: list[GpuName] = Field(default_factory=list)


class MpsSupport(Row):
    torch: TorchSpecifier
    min_macos: OptionalVersion


class MpsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_: Literal["mps/v1"] = Field(alias="schema")
    support: list[MpsSupport]


# --------------------------------------------------------------------------- host_rules.yaml


class WheelFloor(Row):
    """The platform tag of builds whose wheel files the package-index layer does not record (the
    ``/whl/<label>`` indexes): what those wheels ask of the host's C library."""

    torch: TorchSpecifier
    variants: list[str] = Field(min_length=1)
    platforms: list[Platform] = Field(min_length=1)
    #: the wheels' platform tag without its architecture (``manylinux_2_28``, ``manylinux2014``); the host needs
    #: the glibc it names
    platform_tag: str = Field(pattern=r"^(manylinux_\d+_\d+|manylinux1|manylinux2010|manylinux2014)$")


class CapabilityFloor(Row):
    """A part of a CUDA build that needs a newer GPU than the build's own kernels: the cuDNN it bundles, the
    Triton that torch.compile uses. A GPU below ``min_arch`` runs the build, but not that part."""

    torch: TorchSpecifier
    #: what needs the floor, as the answer names it ("cuDNN 9", "torch.compile (Triton)")
    component: str = Field(min_length=1)
    min_arch: str = Field(pattern=r"^sm_\d{2,3}$")
    platforms: list[Platform] = Field(min_length=1)
    #: what fails below the floor, in one line
    effect: str = Field(min_length=1)
    #: the build labels of the range that bundle this part (a cuDNN differs by build: 2.11's cu126 keeps cuDNN
    #: 9.10, its cu128 and cu130 bundle 9.17); null = every CUDA build of the range
    variants: list[str] | None = None


class RuntimeFloor(Row):
    """What a release's binaries ask of the host's C library where their wheel tag asks less (torch up to 2.6
    is tagged manylinux1, glibc 2.5, but was built on CentOS 7 and needs glibc 2.17)."""

    torch: TorchSpecifier
    platforms: list[Platform] = Field(min_length=1)
    glibc: VersionStr


class HostRulesFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_: Literal["host_rules/v1"] = Field(alias="schema")
    #: per torch range and build: the platform tag of wheels the index layer does not record
    wheel_floors: list[WheelFloor] = Field(default_factory=list)
    #: GPU floors of parts of the CUDA builds (bundled cuDNN, torch.compile's Triton)
    capability_floors: list[CapabilityFloor] = Field(default_factory=list)
    #: per torch range: the glibc the binaries need where their wheel tag names an older one
    runtime_floors: list[RuntimeFloor] = Field(default_factory=list)


# --------------------------------------------------------------------------- known_bad.yaml


class KnownBadCompanion(BaseModel):
    """A package installed beside torch (a companion or a ``--with`` package) and the releases the rule names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    #: PEP 440 specifier over the package's versions; empty = every release
    version: str = ""

    @field_validator("version")
    @classmethod
    def _spec(cls, value: str) -> str:
        return _check_specifier(value) if value else value


class KnownBadRule(Row):
    """A combination a cited source shows to break (a build with a regression, a companion that breaks a torch,
    a platform a build does not run on). Every field but ``torch`` narrows the rule; a field left out matches
    every value. ``never``: the resolver passes over a build the rule matches and refuses it when asked for
    directly; ``caveat``: the answer says it in one line with its source."""

    #: stable kebab-case name the answer cites
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]*[a-z0-9]$")
    torch: TorchSpecifier
    severity: Literal["never", "caveat"]
    #: what breaks, in one line
    effect: str = Field(min_length=1, max_length=200)
    #: build families (cuda, rocm, mps, ...) and build labels (cu124, rocm6.0); both narrow
    families: list[BackendFamily] | None = None
    variants: list[str] | None = None
    platforms: list[Platform] | None = None
    #: the Python minors ("3.12", "3.13t") the rule holds on, and a specifier over the full Python version
    #: (a CPython patch release: "<3.13.3")
    python: PythonList | None = None
    python_version: str | None = None
    #: GPU architectures: exactly these (``gpu_archs``), or NVIDIA ones from ``min_gpu_arch`` up
    gpu_archs: list[Annotated[str, Field(pattern=_ARCH_RE.pattern)]] | None = None
    min_gpu_arch: str | None = Field(default=None, pattern=r"^sm_\d{2,3}$")
    #: PEP 440 specifiers over the host's NVIDIA driver and macOS versions
    driver: str | None = None
    macos: str | None = None
    #: a package beside torch that the rule needs (torchaudio >= 2.9, torchdata)
    companion: KnownBadCompanion | None = None

    @field_validator("driver", "macos", "python_version")
    @classmethod
    def _specs(cls, value: str | None) -> str | None:
        return None if value is None else _check_specifier(value)


class KnownBadFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_: Literal["known_bad/v1"] = Field(alias="schema")
    rules: list[KnownBadRule]


# --------------------------------------------------------------------------- jetson.yaml


class JetpackRelease(Row):
    """One JetPack release: its L4T (Jetson Linux) version, CUDA, the Jetson GPUs it runs on and the driver
    version nvidia-smi reports there (null where no source gives it)."""

    jetpack: VersionStr
    l4t: OptionalVersion
    cuda: OptionalVersion
    #: the compute capabilities of the Jetson modules this release supports (sm_53 Nano ... sm_87 Orin)
    archs: list[str] = Field(min_length=1)
    #: the driver version nvidia-smi prints on this release (JetPack 6: 540.4.0); null = not sourced
    driver: DriverVersion = None


class JetsonWheel(Row):
    """One of NVIDIA's PyTorch wheels for Jetson: the torch release it is, the JetPack releases it is published
    for and the Pythons it has a wheel for, and where the wheel file is (null where no source gives the URL)."""

    #: the torch release NVIDIA's table names ("2.1.0"); the wheel's own version may be a pre-release of it
    torch: VersionStr
    #: the wheel file's version string, as pip reports it after install ("2.0.0+nv23.05"); null = unknown
    wheel_version: str | None
    jetpack: list[VersionStr] = Field(min_length=1)
    python: PythonList
    url: str | None = Field(default=None, pattern=r"^https://\S+\.whl$")


class SbsaJetson(Row):
    """A Jetson module whose JetPack runs PyTorch's SBSA linux-aarch64 CUDA builds (Thor on JetPack 7): answered
    by the ordinary stages on linux-aarch64, never by a JetPack wheel and never on x86_64."""

    #: the module's compute capability (sm_110)
    arch: str = Field(pattern=r"^sm_\d{2,3}$")
    #: the module as the answer names it ("Jetson Thor")
    module: str = Field(min_length=1)


class JetsonFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_: Literal["jetson/v1"] = Field(alias="schema")
    releases: list[JetpackRelease]
    wheels: list[JetsonWheel]
    #: Jetson modules that run the SBSA builds instead of JetPack wheels
    sbsa_modules: list[SbsaJetson] = Field(default_factory=list)


# --------------------------------------------------------------------------- vendor PrivateUse1 plugins


class AscendNpuRow(Row):
    """torch_npu <-> torch <-> CANN <-> Python, as Ascend documents it (CPU torch plus the plugin)."""

    torch_npu: VersionStr
    torch: VersionStr
    cann: str | None
    python: PythonList | None
    #: the branch/tag in Ascend's repository, e.g. v2.12.0-26.1.0
    branch: str | None = None
    status: Literal["active", "maintained", "eol"] | None = None
    #: Pythons with a wheel per architecture, and the torch requirement of that architecture's wheel
    #: (``==2.11.0+cpu`` on x86_64, ``==2.11.0`` on aarch64), from the package index
    python_by_platform: dict[Platform, list[str]] | None = None
    torch_requirement: dict[Platform, str] | None = None
    index_overrides: list[IndexOverride] = Field(default_factory=list)



class CambriconMluRow(Row):
    """torch_mlu <-> torch <-> Cambricon toolkit (CTR) <-> driver, as Cambricon documents it."""

    torch_mlu: VersionStr
    torch: VersionStr
    toolkit: str | None
    driver: str | None
    python: PythonList | None



class VendorInstall(Row):
    """Where a vendor's plugin runs and how its companions install (one per vendor, keyed like install_notes)."""

    platforms: list[Platform] = Field(min_length=1)
    #: torchvision/torchaudio go in with --no-deps (their torch requirement names a build the plugin replaces)
    companions_no_deps: bool = False


class VendorFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_: Literal["vendor_backends/v1"] = Field(alias="schema")
    ascend_npu: list[AscendNpuRow]
    cambricon_mlu: list[CambriconMluRow]
    #: the install recipe in words per vendor (which torch wheel, which index, which plugin)
    install_notes: dict[str, str] = Field(default_factory=dict)
    #: per vendor (the install_notes keys): the platforms its plugin is published for, --no-deps companions
    installs: dict[str, VendorInstall] = Field(default_factory=dict)


# --------------------------------------------------------------------------- the whole matrix

#: file name -> model, in load order. Each file holds one table.
MATRIX_FILES: dict[str, type[BaseModel]] = {
    "sources.yaml": SourcesFile,
    "build_variants.yaml": BuildVariantsFile,
    "torch_releases.yaml": TorchReleasesFile,
    "cuda.yaml": CudaFile,
    "gpu_archs.yaml": GpuArchsFile,
    "rocm.yaml": RocmFile,
    "xpu.yaml": XpuFile,
    "mps.yaml": MpsFile,
    "vendor_backends.yaml": VendorFile,
    "host_rules.yaml": HostRulesFile,
    "jetson.yaml": JetsonFile,
    "known_bad.yaml": KnownBadFile,
}


class MatrixData(BaseModel):
    """Every matrix_data file, parsed. Built by ``loader.load_matrix_data`` after validation."""

    model_config = ConfigDict(frozen=True)

    sources: SourcesFile
    build_variants: BuildVariantsFile
    torch_releases: TorchReleasesFile
    cuda: CudaFile
    gpu_archs: GpuArchsFile
    rocm: RocmFile
    xpu: XpuFile
    mps: MpsFile
    vendor_backends: VendorFile
    host_rules: HostRulesFile
    jetson: JetsonFile
    known_bad: KnownBadFile
