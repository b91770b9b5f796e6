"""The read interface the resolver uses (`Matrix`) and its in-memory implementation.

`Matrix` hands out the rows of ``rows`` (frozen classes generated from ``schema``), the same
classes whether the data came from the YAML files, the compiled snapshot (``snapshot``) or the service's
stored load. Ordering is part of the contract: torch minors and patches come newest first, CUDA toolkits
oldest first.

Deliberately no pydantic import here: this module is on the fast path of `accelenv resolve`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from compat_service.domain.backends import python_sort_key
from compat_service.domain.matrix.memo import MemoStore
from compat_service.domain.matrix.model.rows import (
    ArchList,
    AscendNpuRow,
    BuildVariant,
    CambriconMluRow,
    CapabilityFloor,
    CudaToolkit,
    GpuName,
    JetpackRelease,
    JetsonWheel,
    KernelUserSpace,
    KnownBadRule,
    MatrixTables,
    MinorVersionCompat,
    MpsSupport,
    RocmRelease,
    RuntimeFloor,
    SbsaJetson,
    Source,
    ToolkitArchRange,
    TorchMinor,
    TorchPatch,
    VariantAvailability,
    VendorInstall,
    WheelFloor,
    XpuSupport,
)
from compat_service.domain.versions import parse_specifier, parse_version


class Matrix(Protocol):
    """What the resolver reads. Implementations: `InMemoryMatrix`, the db repository."""

    def torch_minors(self) -> Sequence[TorchMinor]:
        """Every torch minor, newest first."""

    def torch_patches(self, minor: TorchMinor) -> Sequence[TorchPatch]:
        """The patches of one minor, newest first."""

    def build_variant(self, label: str) -> BuildVariant | None: ...

    def cuda_toolkits(self) -> Sequence[CudaToolkit]:
        """Every CUDA toolkit row, oldest first."""

    def minor_version_compat(self, cuda_major: int) -> MinorVersionCompat | None: ...

    def toolkit_arch_range(self, cuda: str) -> ToolkitArchRange | None:
        """The sm_ range the toolkit of this CUDA release compiles for; None = not sourced."""

    def gpu_names(self) -> Sequence[GpuName]:
        """Every GPU product name the matrix maps to an architecture (NVIDIA's, AMD's, then Intel's device
        families)."""

    def arch_list(self, torch_version: str, variant: str, platform: str) -> ArchList | None:
        """The GPU architectures `variant` of `torch_version` ships for `platform`; None = unknown."""

    def gpu_archs(self) -> Sequence[str]:
        """Every GPU architecture the matrix names (arch lists' cubins and PTX, ROCm gfx targets), sorted."""

    def rocm_release(self, version: str) -> RocmRelease | None: ...

    def rocm_kernel_user_space(self, kmd: str) -> KernelUserSpace | None:
        """AMD's tested ROCm user space releases for the kernel driver of ROCm ``kmd`` (major.minor is read);
        None = that driver is not in AMD's table."""

    def xpu_support(self, torch_version: str) -> XpuSupport | None: ...

    def mps_support(self, torch_version: str) -> MpsSupport | None: ...

    def ascend_npu(self) -> Sequence[AscendNpuRow]: ...

    def cambricon_mlu(self) -> Sequence[CambriconMluRow]: ...

    def install_note(self, vendor: str) -> str | None: ...

    def vendor_install(self, vendor: str) -> VendorInstall | None:
        """Where a vendor plugin runs and how its companions install; None = the matrix does not say."""

    def source(self, key: str) -> Source | None: ...

    def wheel_floor(self, torch_version: str, label: str, platform: str) -> WheelFloor | None:
        """The platform tag of a build whose wheel files the index layer does not record; None = no row."""

    def capability_floors(self, torch_version: str, platform: str, label: str) -> Sequence[CapabilityFloor]:
        """The GPU floors of parts of this release's CUDA build ``label`` on ``platform`` (cuDNN, Triton)."""

    def jetpack_releases(self) -> Sequence[JetpackRelease]:
        """Every JetPack release (jetson.yaml), in the file's order."""

    def jetson_wheels(self) -> Sequence[JetsonWheel]:
        """NVIDIA's PyTorch wheels for Jetson, newest torch first."""

    def sbsa_jetsons(self) -> Sequence[SbsaJetson]:
        """Jetson modules that run PyTorch's SBSA linux-aarch64 CUDA builds (Thor), not JetPack wheels."""

    def runtime_floor(self, torch_version: str, platform: str) -> RuntimeFloor | None:
        """The glibc this release's binaries need where their wheel tag names an older one; None = no row."""

    def known_bad(self, torch_version: str) -> Sequence[KnownBadRule]:
        """The known-bad rules (known_bad.yaml) whose torch range holds this release, in file order."""

    def variants_on_platform(self, minor: TorchMinor, version: str, platform: str) -> tuple[VariantAvailability, ...]:
        """The variants of ``minor`` that patch ``version`` publishes for ``platform``."""

    def pythons(self, minor: TorchMinor, patch: TorchPatch, platform: str) -> list[str]:
        """The Pythons ``patch`` publishes wheels for on ``platform``, oldest first."""

    def default_toolkits(self, minor: TorchMinor, platform: str) -> dict[str, str]:
        """label -> the toolkit release the default-index wheels of ``minor`` pin on ``platform``."""

    @property
    def memo(self) -> MemoStore:
        """What other modules derive from this matrix, kept with it (each memo is declared beside the code that
        fills it: ``compat_service.domain.matrix.memo``)."""


_Row = TypeVar("_Row")


def _release_key(text: str | None) -> tuple[int, ...]:
    version = parse_version(text or "")
    return version.release if version is not None else ()


class InMemoryMatrix:
    """`Matrix` over the matrix's rows (from the YAML or its compiled snapshot), with the orderings precomputed."""

    def __init__(self, data: MatrixTables, observed_arch_lists: Sequence[ArchList] = ()) -> None:
        """``observed_arch_lists``: arch lists learned from agreeing probe reports (the service's evidence,
        ``compat_service.domain.evidence.observed_builds``), read below a curated row and above unknown."""
        self.data = data
        self._observed: dict[tuple[str, str, str], ArchList] = {(row.torch.removeprefix("=="), row.variant, p): row
                          for row in observed_arch_lists for p in row.platforms}
        self._minors = sorted(data.torch_releases.minors, key=lambda m: _release_key(m.minor), reverse=True)
        self._patches = {
            m.minor: sorted(m.patches, key=lambda p: parse_version(p.version) or Version("0"), reverse=True)
            for m in self._minors
        }
        self._variants = {v.label: v for v in data.build_variants.variants}
        self._toolkits = sorted(data.cuda.toolkits, key=lambda t: _release_key(t.version))
        self._mvc = {row.cuda_major: row for row in data.cuda.minor_version_compatibility}
        self._toolkit_archs = [(parse_specifier(row.cuda), row) for row in data.cuda.toolkit_archs]
        self._gpu_names = (*data.cuda.gpu_names, *data.rocm.gpu_names, *data.xpu.gpu_names)
        # Specifiers are parsed once: the resolver asks for arch lists in its inner loop.
        self._arch_lists = [(parse_specifier(row.torch), row) for row in data.gpu_archs.arch_lists]
        self._arch_memo: dict[tuple[str, str, str], ArchList | None] = {}
        self._rocm = {_release_key(r.version): r for r in data.rocm.releases}
        self._kernel_user_space = {_release_key(r.kmd)[:2]: r for r in data.rocm.kernel_user_space}
        named = {a for row in data.gpu_archs.arch_lists for a in (*row.archs, row.ptx) if a}
        named.update(t for r in data.rocm.releases for t in (r.gfx_targets or ()))
        named.update(g.arch for g in data.rocm.gpu_names)  # an AMD name's target is known, shipped or not
        named.update(a for row in observed_arch_lists for a in (*row.archs, row.ptx) if a)
        self._gpu_archs = tuple(sorted(named, key=_arch_key))
        self._xpu = [(parse_specifier(row.torch), row) for row in data.xpu.support]
        self._mps = [(parse_specifier(row.torch), row) for row in data.mps.support]
        self._wheel_floors = [(parse_specifier(row.torch), row) for row in data.host_rules.wheel_floors]
        self._capability_floors = [(parse_specifier(row.torch), row) for row in data.host_rules.capability_floors]
        self._runtime_floors = [(parse_specifier(row.torch), row) for row in data.host_rules.runtime_floors]
        self._known_bad_rules = [(parse_specifier(row.torch), row) for row in data.known_bad.rules]
        self._known_bad: dict[str, tuple[KnownBadRule, ...]] = {}
        self._sources = {s.key: s for s in data.sources.sources}
        self._jetpack = tuple(data.jetson.releases)
        self._sbsa_jetsons = tuple(data.jetson.sbsa_modules)
        self._jetson_wheels = tuple(
            sorted(data.jetson.wheels, key=lambda w: parse_version(w.torch) or Version("0"), reverse=True)
        )
        self._on_platform: dict[tuple[str, str], tuple[VariantAvailability, ...]] = {}
        self._pythons: dict[tuple[str, str], list[str]] = {}
        self._default_toolkits: dict[tuple[str, str], dict[str, str]] = {}
        self._wheel_floor_memo: dict[tuple[str, str, str], WheelFloor | None] = {}
        self._memo = MemoStore()

    @property
    def memo(self) -> MemoStore:
        return self._memo

    def cache_size(self) -> int:
        """Entries held by every cache of this matrix (tests check distinct requests do not grow it)."""
        own = (self._on_platform, self._pythons, self._default_toolkits, self._arch_memo, self._wheel_floor_memo)
        return self._memo.size() + sum(len(table) for table in own)

    def variants_on_platform(self, minor: TorchMinor, version: str, platform: str) -> tuple[VariantAvailability, ...]:
        key = (version, platform)
        found = self._on_platform.get(key)
        if found is None:
            found = self._on_platform[key] = tuple(
                v for v in minor.variants if (v.patches is None or version in v.patches) and platform in v.platforms
            )
        return found

    def pythons(self, minor: TorchMinor, patch: TorchPatch, platform: str) -> list[str]:
        key = (patch.version, platform)
        found = self._pythons.get(key)
        if found is None:
            entries = patch.python_override if patch.python_override is not None else minor.python
            found = []
            for entry in entries:
                if entry.platforms is None or platform in entry.platforms:
                    found.extend(v for v in entry.versions if v not in found)
            found = self._pythons[key] = sorted(found, key=python_sort_key)
        return found

    def default_toolkits(self, minor: TorchMinor, platform: str) -> dict[str, str]:
        key = (minor.minor, platform)
        found = self._default_toolkits.get(key)
        if found is None:
            found = self._default_toolkits[key] = {
                d.label: d.runtime_full
                for d in minor.default_index
                if d.platform == platform and d.label and d.runtime_full
            }
        return found

    def torch_minors(self) -> Sequence[TorchMinor]:
        return self._minors

    def torch_patches(self, minor: TorchMinor) -> Sequence[TorchPatch]:
        return self._patches[minor.minor]

    def build_variant(self, label: str) -> BuildVariant | None:
        return self._variants.get(label)

    def cuda_toolkits(self) -> Sequence[CudaToolkit]:
        return self._toolkits

    def minor_version_compat(self, cuda_major: int) -> MinorVersionCompat | None:
        return self._mvc.get(cuda_major)

    def toolkit_arch_range(self, cuda: str) -> ToolkitArchRange | None:
        return _first_matching(self._toolkit_archs, cuda)

    def gpu_names(self) -> Sequence[GpuName]:
        return self._gpu_names

    def arch_list(self, torch_version: str, variant: str, platform: str) -> ArchList | None:
        key = (torch_version, variant, platform)
        if key not in self._arch_memo:
            self._arch_memo[key] = next(
                (
                    row
                    for spec, row in self._arch_lists
                    if row.variant == variant
                    and platform in row.platforms
                    and spec is not None
                    and spec.contains(torch_version, prereleases=True)
                ),
                None,
            ) or self._observed.get(key)
        return self._arch_memo[key]

    def gpu_archs(self) -> Sequence[str]:
        return self._gpu_archs

    def observed_arch_lists(self, torch_version: str) -> list[ArchList]:
        """The observed arch lists of ``torch_version`` that the matrix reads (no curated row covers them)."""
        return [
            row for (version, variant, platform), row in self._observed.items()
            if version == torch_version and self.arch_list(version, variant, platform) is row
        ]

    def rocm_release(self, version: str) -> RocmRelease | None:
        return self._rocm.get(_release_key(version))

    def rocm_kernel_user_space(self, kmd: str) -> KernelUserSpace | None:
        return self._kernel_user_space.get(_release_key(kmd)[:2])

    def xpu_support(self, torch_version: str) -> XpuSupport | None:
        return _first_matching(self._xpu, torch_version)

    def mps_support(self, torch_version: str) -> MpsSupport | None:
        return _first_matching(self._mps, torch_version)

    def ascend_npu(self) -> Sequence[AscendNpuRow]:
        return self.data.vendor_backends.ascend_npu

    def cambricon_mlu(self) -> Sequence[CambriconMluRow]:
        return self.data.vendor_backends.cambricon_mlu

    def install_note(self, vendor: str) -> str | None:
        return self.data.vendor_backends.install_notes.get(vendor)

    def vendor_install(self, vendor: str) -> VendorInstall | None:
        return self.data.vendor_backends.installs.get(vendor)

    def source(self, key: str) -> Source | None:
        return self._sources.get(key)

    def jetpack_releases(self) -> Sequence[JetpackRelease]:
        return self._jetpack

    def jetson_wheels(self) -> Sequence[JetsonWheel]:
        return self._jetson_wheels

    def sbsa_jetsons(self) -> Sequence[SbsaJetson]:
        return self._sbsa_jetsons

    def runtime_floor(self, torch_version: str, platform: str) -> RuntimeFloor | None:
        return next(
            (
                row
                for spec, row in self._runtime_floors
                if platform in row.platforms and spec is not None and spec.contains(torch_version, prereleases=True)
            ),
            None,
        )

    def known_bad(self, torch_version: str) -> Sequence[KnownBadRule]:
        found = self._known_bad.get(torch_version)
        if found is None:
            found = self._known_bad[torch_version] = tuple(
                row
                for spec, row in self._known_bad_rules
                if spec is not None and spec.contains(torch_version, prereleases=True)
            )
        return found

    def capability_floors(self, torch_version: str, platform: str, label: str) -> Sequence[CapabilityFloor]:
        return [
            row
            for spec, row in self._capability_floors
            if platform in row.platforms
            and (row.variants is None or label in row.variants)
            and spec is not None
            and spec.contains(torch_version, prereleases=True)
        ]

    def wheel_floor(self, torch_version: str, label: str, platform: str) -> WheelFloor | None:
        key = (torch_version, label, platform)
        if key not in self._wheel_floor_memo:  # the resolver asks it for every answer
            self._wheel_floor_memo[key] = next(
                (
                    row
                    for spec, row in self._wheel_floors
                    if label in row.variants
                    and platform in row.platforms
                    and spec is not None
                    and spec.contains(torch_version, prereleases=True)
                ),
                None,
            )
        return self._wheel_floor_memo[key]


def _arch_key(arch: str) -> tuple[bool, int, str]:
    """sm_ before gfx, then by number (sm_50 < sm_120), then the suffix (sm_90 < sm_90a)."""
    digits = "".join(ch for ch in arch if ch.isdigit())
    return (arch[:2] != "sm", int(digits or 0) if arch.startswith("sm") else 0, arch)


def _first_matching(rows: list[tuple[SpecifierSet | None, _Row]], torch_version: str) -> _Row | None:
    for spec, row in rows:
        if spec is not None and spec.contains(torch_version, prereleases=True):
            return row
    return None
