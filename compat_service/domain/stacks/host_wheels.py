"""Whether a stack package's wheels install on the described host: their platform tags (from the file names the
index lists, `Release.wheel_tags`) against the tags pip accepts there (`wheel_tags.host_platform_tags`: glibc,
musl, macOS version and arch), and its Requires-Python against the full Python version (3.14.1, not 3.14).

A release with no wheel the host accepts is not pinned: the stack resolver moves to an older release that has
one, or refuses naming the tag the host lacks. An sdist is no way out here: pip would build it on the target,
which needs a compiler (and, for CUDA kernels, the CUDA toolkit), so it is said, not chosen -- except for the
``jit`` packages, whose sdist is how they install (their ops compile at run time).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from compat_service.domain.resolver.wheel_tags import TagFloor, host_platform_tags, tag_floor

if TYPE_CHECKING:
    from compat_service.domain.matrix.interface import Matrix
    from compat_service.domain.matrix.model.rows import TorchPatch
    from compat_service.domain.resolver.request import ResolveRequest
    from compat_service.domain.stacks.catalog import Package, Release


def describes_host(request: ResolveRequest) -> bool:
    return request.glibc is not None or request.musl is not None or request.macos is not None


def host_words(request: ResolveRequest) -> str:
    if request.musl is not None:
        return "musl libc" + (f" {request.musl}" if request.musl[0].isdigit() else "")
    if request.glibc is not None:
        return f"glibc {request.glibc}"
    return f"macOS {request.macos}"


def _pair(text: str) -> tuple[int, int]:
    parts = [int(p) for p in text.split(".")[:2]]
    return parts[0], parts[1] if len(parts) > 1 else 0


def _fits_tag(tag: str, python: str) -> bool:
    from compat_service.domain.stacks.catalog import _tag_fits

    return _tag_fits(tag, python)


def _entries(release: Release, platform: str, python: str | None) -> list[tuple[str, str]]:
    """The release's wheels on ``platform`` (for ``python``, when given): (Python tag, platform tags)."""
    entries = list(release.wheel_tags.get(platform, ()))
    return [e for e in entries if python is None or _fits_tag(e[0], python)]


def lowest_floor(tag_groups: list[str]) -> TagFloor | None:
    """The least the host must have to install one of these wheels (None: a wheel asks nothing of it)."""
    floors: list[TagFloor] = []
    for group in tag_groups:
        found = [f for f in map(tag_floor, group.split(".")) if f is not None]
        if not found:
            return None  # ``any``, ``win_amd64``: nothing the request describes
        floors.append(min(found, key=lambda f: f.version))
    return min(floors, key=lambda f: f.version) if floors else None


def platform_blocked(request: ResolveRequest, package: Package, release: Release, python: str | None) -> str | None:
    """Why none of the release's wheels for the target's platform (and ``python``) installs on the described host,
    or None (one does, the request describes no host, or the index lists no wheel to judge)."""
    if not describes_host(request) or package.torch_build in ("wheel-pages", "prebuilt"):
        return None
    if package.torch_build == "jit" and release.sdist is not None:
        return None  # installs from its sdist; its ops compile at run time on the target
    entries = _entries(release, request.platform, python)
    if not entries:
        return None
    host = host_platform_tags(request.os, request.arch, request.glibc, request.musl, request.macos)
    if any(group == "any" or any(t in host for t in group.split(".")) for _py, group in entries):
        return None
    groups = list(dict.fromkeys(group for _py, group in entries))
    floor = lowest_floor(groups)
    need = f" (need {floor.text})" if floor is not None else ""
    sdist = (
        f"; its sdist ({release.sdist}) would have to build on the target, which needs a compiler (and the CUDA "
        "toolkit for CUDA kernels): not chosen"
        if release.sdist
        else ""
    )
    at = f" for Python {python}" if python else ""
    return (
        f"{package.name} {release.version} wheels{at} on {request.platform} are {', '.join(groups)}{need}; the "
        f"target has {host_words(request)}{sdist}"
    )


def python_blocked(request: ResolveRequest, package: Package, release: Release, python: str | None) -> str | None:
    """Why the release's Requires-Python excludes the full Python the request gives (3.14.1), or None."""
    full = request.python_version
    if full is None or not release.requires_python:
        return None
    minor = (python or request.python or "").rstrip("t")
    if not full.startswith(minor + "."):
        return None  # another minor was chosen: the minor-level checks apply
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        if SpecifierSet(release.requires_python).contains(full, prereleases=True):
            return None
    except InvalidSpecifier:
        return None  # pip does not enforce an unreadable Requires-Python either
    return f"{package.name} {release.version} requires Python {release.requires_python}, not {full}"


def stack_floor(request: ResolveRequest, package: Package, release: Release, python: str) -> TagFloor | None:
    """What the pinned release's wheels for ``python`` ask of the host (glibc, macOS), for the answer's host needs."""
    if package.torch_build in ("wheel-pages", "prebuilt"):
        return None
    entries = _entries(release, request.platform, python)
    return lowest_floor([group for _py, group in entries]) if entries else None


def torch_installs(request: ResolveRequest, patch: TorchPatch, matrix: Matrix) -> bool:
    """Whether a torch patch's default-index wheels on the platform carry a tag the described host accepts, and
    (for an MPS request) its MPS runs on the given macOS (True when the request describes no host or the index
    lists no wheel): the stack resolver tries only a few torch patches per combination, so the ones the host
    cannot run are passed over before they count."""
    if not describes_host(request):
        return True
    if request.macos is not None and request.backend.family == "mps":
        row = matrix.mps_support(patch.version)
        if row is not None and row.min_macos is not None and _pair(request.macos) < _pair(row.min_macos):
            return False
    from compat_service.domain.resolver.wheel_tags import wheels_of

    files = wheels_of(patch, "torch", request.platform)
    if files is None or not files.platform_tags:
        return True
    host = host_platform_tags(request.os, request.arch, request.glibc, request.musl, request.macos)
    return any(t in host for t in files.platform_tags)
