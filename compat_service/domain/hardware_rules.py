"""How a build meets the hardware: GPU architecture coverage and the NVIDIA driver floor.

The numbers come from the matrix (gpu_archs.yaml, cuda.yaml, rocm.yaml); these functions only say how
to compare them.

GPU architecture rule: ``probes.host.arch_compat`` (cubin and PTX compatibility, gfx targets exact), the one
copy, which the probe applies to torch's compiled arch list on the target host; here it is applied to the
matrix's arch lists. probes is stdlib-only and imports nothing from accelenv, so the domain can share it
and it cannot share the domain's.

Driver floor rule (conservative, one rule everywhere): a CUDA build needs the *toolkit's own* minimum
driver from cuda.yaml (the floor of ``runtime_full`` when known, else the highest floor of that
major.minor's updates). NVIDIA's minor-version compatibility (12.x on >= 525) is not used to accept a
driver: PyTorch JIT-compiles PTX, which that mode does not support. It is mentioned in warnings only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from packaging.version import Version

from compat_service.domain.matrix.interface import per_matrix_memo
from probes.host.arch_compat import cubin_runs_on, ptx_runs_on

if TYPE_CHECKING:
    from compat_service.domain.matrix.interface import Matrix

#: versions repeat across calls (toolkits, drivers); parsing them once keeps resolve() well under 1 ms
cached_version = lru_cache(maxsize=4096)(Version)

Coverage = Literal["kernels", "ptx", "no", "unknown"]


@dataclass(frozen=True)
class ArchVerdict:
    coverage: Coverage
    #: the matrix row behind the verdict (an ArchList or a RocmRelease), None = unknown
    row: Any = None
    #: what the build ships, for messages ("sm_50 … sm_90 + PTX sm_90")
    shipped: str | None = None


def describe_archs(archs: list[str], ptx: str | None) -> str:
    text = ", ".join(archs)
    return f"{text} + PTX {ptx}" if ptx else text


def arch_coverage(
    matrix: Matrix, torch_version: str, label: str, runtime: str | None, platform: str, gpu_arch: str
) -> ArchVerdict:
    row = matrix.arch_list(torch_version, label, platform)
    if row is not None:
        shipped = describe_archs(list(row.archs), row.ptx)
        if any(cubin_runs_on(a, gpu_arch) for a in row.archs):
            return ArchVerdict("kernels", row, shipped)
        if row.ptx and ptx_runs_on(row.ptx, gpu_arch):
            return ArchVerdict("ptx", row, shipped)
        return ArchVerdict("no", row, shipped)
    if gpu_arch.startswith("gfx") and runtime is not None:
        release = matrix.rocm_release(runtime)
        if release is not None and release.gfx_targets is not None:
            shipped = ", ".join(release.gfx_targets)
            return ArchVerdict("kernels" if gpu_arch in release.gfx_targets else "no", release, shipped)
    return ArchVerdict("unknown")


@dataclass(frozen=True)
class DriverFloor:
    version: str | None  # None = the matrix has no floor for this OS
    toolkit: Any  # the CudaToolkit row, None when the runtime has no row


def driver_floor(matrix: Matrix, runtime: str | None, runtime_full: str | None, os: str) -> DriverFloor:
    memo = per_matrix_memo(matrix)
    key = ("floor", runtime, runtime_full, os)
    found = memo.get(key)
    if found is None:
        found = memo[key] = _driver_floor(matrix, runtime, runtime_full, os)
    return found


def _driver_floor(matrix: Matrix, runtime: str | None, runtime_full: str | None, os: str) -> DriverFloor:
    if runtime is None:
        return DriverFloor(None, None)
    attr = "min_driver_windows" if os == "windows" else "min_driver_linux"
    want = cached_version(runtime).release[:2]
    rows = [t for t in matrix.cuda_toolkits() if cached_version(t.version).release[:2] == want]
    if runtime_full is not None:
        exact = [t for t in rows if cached_version(t.version) == cached_version(runtime_full)]
        rows = exact or rows
    known = [t for t in rows if getattr(t, attr) is not None]
    if not known:
        return DriverFloor(None, rows[-1] if rows else None)
    best = max(known, key=lambda t: cached_version(getattr(t, attr)))
    return DriverFloor(getattr(best, attr), best)


def newest_cuda_for_driver(matrix: Matrix, driver: str, os: str) -> str | None:
    """The newest toolkit whose own floor the driver meets ("driver 470.82 runs CUDA ≤ 11.4")."""
    # memoized per OS, not per driver: a request's driver string is free text
    memo = per_matrix_memo(matrix)
    key = ("toolkit-floors", os)
    floors = memo.get(key)
    if floors is None:
        attr = "min_driver_windows" if os == "windows" else "min_driver_linux"
        floors = memo[key] = tuple(
            (cached_version(getattr(t, attr)), t.version) for t in reversed(matrix.cuda_toolkits()) if getattr(t, attr)
        )
    have = cached_version(driver)
    return next((version for floor, version in floors if floor <= have), None)


def arch_is_known(gpu_arch: str, known: Sequence[str]) -> bool:
    """A gfx target the matrix names (any, while it names none), or an NVIDIA arch of a major some build
    ships (sm_89 runs sm_86 cubins; sm_999 is no GPU the matrix knows)."""
    if gpu_arch in known or gpu_arch.rstrip("af") in known:
        return True
    if gpu_arch.startswith("gfx"):
        # the gfx lists in the matrix are those of the sourced ROCm builds (to 2.4); later builds' lists are
        # unknown (gpu_archs.yaml `searched`), so a target no list names (gfx1101, gfx1201, gfx950) is not ruled out
        return True
    return _sm_major(gpu_arch) in {_sm_major(a) for a in known if a.startswith("sm_")}


def _sm_major(arch: str) -> int:
    number = int("".join(ch for ch in arch[3:] if ch.isdigit()) or 0)
    return number // 10


def too_new_for(gpu_arch: str, row: Any) -> bool:
    """True when an NVIDIA GPU is newer than every cubin and PTX a known arch list ships."""
    if not gpu_arch.startswith("sm_"):
        return False
    have = [a for a in (*row.archs, row.ptx) if a and a.startswith("sm_")]
    number = int("".join(ch for ch in gpu_arch[3:] if ch.isdigit()))
    return bool(have) and all(int("".join(ch for ch in a[3:] if ch.isdigit())) < number for a in have)
