"""Vendor rules the stages and the answer ask, read from matrix data: Intel GPU names, the Intel XPU build's
prerequisites and published companions per release and platform (xpu.yaml), and AMD's kernel-driver <-> ROCm
user-space window for the ROCm wheels (rocm.yaml ``kernel_user_space``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from compat_service.domain.hardware_rules import runtime_fits
from compat_service.domain.versions import cached_version

if TYPE_CHECKING:
    from compat_service.domain.matrix.interface import Matrix
    from compat_service.domain.matrix.model.rows import KernelUserSpace, XpuSupport
    from compat_service.domain.resolver.request import BackendSpec, ResolveRequest


def check_intel_gpu_backend(request: ResolveRequest, backend: BackendSpec) -> None:
    """An Intel GPU name with a backend of another vendor is a contradiction (the CPU build is fine)."""
    if backend.family in ("xpu", "cpu", None):
        return
    from compat_service.domain.resolver.request import invalid_request

    raise invalid_request(
        f"--gpu {request.gpu!r} is an Intel GPU (the xpu build), but --backend {backend.text} is {backend.family}",
        "drop --backend (the Intel name picks xpu), or give --backend xpu or cpu",
        "--gpu",
        request.gpu or "",
    )


def unpublished_companions(
    matrix: Matrix, version: str, platform: str, asked: tuple[str, ...]
) -> tuple[list[str], XpuSupport | None]:
    """The asked companions the xpu index does not publish for this torch on this platform (torch 2.5 on
    Windows: torch only), and the xpu.yaml row that says so."""
    row = matrix.xpu_support(version)
    if row is None or platform not in row.no_companion_wheels:
        return [], None
    return list(asked), row


def xpu_prerequisites(row: XpuSupport | None) -> str | None:
    """The prerequisite beyond the driver a binary install needs (2.5: Intel's support package), or None."""
    if row is not None and row.binary_prerequisite == "driver-and-support-package":
        return "Intel's support package for this release, with its environment activated (besides the driver)"
    return None


def rocm_window(matrix: Matrix, have: str) -> KernelUserSpace | None:
    """AMD's tested user-space releases for the host's kernel driver (--runtime names the host's ROCm, whose
    amdgpu kernel driver it runs); None when AMD's table has no row for that driver."""
    return matrix.rocm_kernel_user_space(have)


def rocm_fits(matrix: Matrix, have: str, needs: str | None) -> bool | None:
    """Does a ROCm build for ROCm ``needs`` run on a host with ROCm ``have``? The same major.minor always; another
    release when AMD lists it as tested with the host's kernel driver (the wheel bundles its user space).
    None when the build's ROCm release is unknown."""
    same = runtime_fits("rocm", have, needs)
    if same is not False or needs is None:
        return same
    window = rocm_window(matrix, have)
    return window is not None and _minor(needs) in {_minor(v) for v in window.user_space}


def rocm_fit_reason(matrix: Matrix, have: str, label: str, needs: str | None) -> tuple[str, tuple[str, ...]] | None:
    """Why a build of another ROCm minor runs on the host (AMD's window), or None for the same minor."""
    if needs is None or runtime_fits("rocm", have, needs) is not False:
        return None
    window = rocm_window(matrix, have)
    if window is None:
        return None
    tested = ", ".join(window.user_space)
    return (
        f"ROCm {have} on the host: {label} bundles the ROCm {needs} user space, which AMD lists as tested with the "
        f"ROCm {window.kmd} kernel driver (user space {tested}); the host needs that amdgpu driver, not ROCm {needs}",
        tuple(window.source),
    )


def _minor(text: str) -> tuple[int, ...]:
    return cached_version(text).release[:2]
