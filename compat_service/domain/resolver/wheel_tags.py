"""Whether the pinned wheels install on the target: their platform tags against the host's, and their
Requires-Python against the full Python version.

The host's platform tags are the ones pip would accept there, as `packaging.tags` derives them: macOS from
`packaging.tags.mac_platforms` for the given version; Linux from the glibc (or musl) version given, in the
order and with the legacy aliases of `packaging._manylinux.platform_tags` / `packaging._musllinux.platform_tags`
(which read the running interpreter's C library and so cannot be asked about another host's). A wheel
installs when one of its platform tags is among the host's. The wheels' tags come from the file names the
package index lists (`TorchPatch.wheels`, read by the index layer with packaging's wheel-name parser) and, for
builds served from a ``/whl/<label>`` index, from ``host_rules.yaml`` (`WheelFloor`).

`packaging.tags` is imported only when a request names the host's platform (--glibc, --musl, --macos): it is
not on the start-up path of a plain `accelenv resolve`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from compat_service.domain.matrix.memo import MatrixMemo
from compat_service.domain.record import Record

if TYPE_CHECKING:
    from compat_service.domain.matrix.model.rows import TorchPatch, WheelFiles
    from compat_service.domain.resolver.state import ResolverState

#: packaging._manylinux's legacy aliases (PEP 513, 571, 599) and the glibc each stands for
_LEGACY_MANYLINUX = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
_TAG_RE = re.compile(r"^(manylinux|musllinux|macosx)_(\d+)_(\d+)_")
#: what the tag family asks of the host, in words
_NEEDS = {"manylinux": "glibc", "musllinux": "musl", "macosx": "macOS"}


class TagFloor(Record):
    """What one platform tag asks of the host: ``glibc`` 2.28, ``musl`` 1.2, ``macOS`` 14.0 (None: nothing
    the request describes, e.g. ``win_amd64``)."""

    __slots__ = ("needs", "version", "origin")
    needs: str
    version: tuple[int, int]
    #: why, where the floor is not a wheel tag's (a release's binaries built for a newer glibc than their tag)
    origin: str | None

    def __init__(self, needs: str, version: tuple[int, int], origin: str | None = None) -> None:
        self.needs = needs
        self.version = version
        self.origin = origin

    @property
    def text(self) -> str:
        return f"{self.needs} >= {self.version[0]}.{self.version[1]}"


@lru_cache(maxsize=1024)
def tag_floor(tag: str) -> TagFloor | None:
    """``manylinux_2_28_x86_64`` -> glibc >= 2.28; ``manylinux2014_aarch64`` -> glibc >= 2.17;
    ``macosx_14_0_arm64`` -> macOS >= 14.0; ``win_amd64`` -> None. Kept (bounded): the tags are the index's
    wheel files', read for every answer."""
    for legacy, version in _LEGACY_MANYLINUX.items():
        if tag.startswith(legacy + "_"):
            return TagFloor("glibc", version)
    match = _TAG_RE.match(tag)
    if match is None:
        return None
    return TagFloor(_NEEDS[match.group(1)], (int(match.group(2)), int(match.group(3))))


def _version_pair(text: str) -> tuple[int, int]:
    parts = [int(p) for p in text.split(".")[:2]]
    return parts[0], parts[1] if len(parts) > 1 else 0


@lru_cache(maxsize=64)
def host_platform_tags(
    os_name: str, arch: str, glibc: str | None, musl: str | None, macos: str | None
) -> frozenset[str]:
    """The platform tags pip accepts on the described host (only the ones the request describes: a Linux host
    with neither --glibc nor --musl has none, and nothing is checked)."""
    tags: list[str] = []
    if os_name == "macos" and macos is not None:
        from packaging.tags import mac_platforms

        tags.extend(mac_platforms(_version_pair(macos), "arm64" if arch in ("arm64", "aarch64") else arch))
    elif os_name == "linux" and glibc is not None:
        major, minor = _version_pair(glibc)
        # packaging._manylinux: x86_64 and i686 wheels go back to glibc 2.5, every other arch to 2.17
        oldest = 5 if arch in ("x86_64", "i686") else 17
        for m in range(minor, oldest - 1, -1):
            tags.append(f"manylinux_{major}_{m}_{arch}")
            legacy = next((name for name, v in _LEGACY_MANYLINUX.items() if v == (major, m)), None)
            if legacy is not None:
                tags.append(f"{legacy}_{arch}")
    elif os_name == "linux" and musl is not None:
        major, minor = _version_pair(musl) if musl[0].isdigit() else (1, 99)
        tags.extend(f"musllinux_{major}_{m}_{arch}" for m in range(minor, -1, -1))
    return frozenset(tags)


def describes_host(state: ResolverState) -> bool:
    """The request names the host's C library or OS version (so the wheels' tags are checked)."""
    r = state.request
    return r.glibc is not None or r.musl is not None or r.macos is not None


def host_words(state: ResolverState) -> str:
    r = state.request
    if r.musl is not None:
        return "musl libc" + (f" {r.musl}" if r.musl[0].isdigit() else "")
    if r.glibc is not None:
        return f"glibc {r.glibc}"
    return f"macOS {r.macos}"


class Blocked(Record):
    """A pinned wheel that does not install on the target, and why."""

    __slots__ = ("package", "version", "kind", "why", "floor")
    package: str
    version: str
    #: "python" (no wheel for the Python, or Requires-Python excludes it) or "platform" (its tags)
    kind: str
    why: str
    #: the floor the wheel's tags ask for (platform), for the message and the alternatives
    floor: TagFloor | None

    def __init__(self, package: str, version: str, kind: str, why: str, floor: TagFloor | None = None) -> None:
        self.package = package
        self.version = version
        self.kind = kind
        self.why = why
        self.floor = floor


def wheels_of(patch: TorchPatch, package: str, platform: str) -> WheelFiles | None:
    """The default index's wheels of a pinned package (a build label's own index: `variant_wheels_of`)."""
    return next((w for w in patch.wheels if w.package == package and w.platform == platform
                 and "+" not in w.version), None)


def variant_wheels_of(state: ResolverState, version: str, label: str, platform: str) -> WheelFiles | None:
    """The wheels of torch ``version`` that the ``/whl/<label>`` index serves for ``platform``, from their file
    names as the refresh read them (None: that index was not read)."""
    minor = ".".join(version.split(".")[:2])
    local = f"{version}+{label}"
    for row in state.matrix.torch_minors():
        if row.minor == minor:
            for patch in state.matrix.torch_patches(row):
                if patch.version == version:
                    return next((w for w in patch.wheels if w.version == local and w.platform == platform), None)
    return None


def _label_floor(state: ResolverState, version: str, label: str) -> tuple[list[str], str] | None:
    """The platform tags of a /whl/<label> build on the target's platform and where they come from: the index's
    file names where the refresh read them, else host_rules.yaml's wheel_floors; None: neither says."""
    r = state.request
    files = variant_wheels_of(state, version, label, r.platform)
    if files is not None:
        return list(files.platform_tags), "the index's file names"
    row = state.matrix.wheel_floor(version, label, r.platform)
    if row is None:
        return None
    return [f"{row.platform_tag}_{r.arch}"], "host_rules.yaml"


def _has_python(files: WheelFiles, python: str) -> bool:
    if python in files.pythons or "any" in files.pythons:
        return True
    if python.endswith("t"):
        return False
    have = _version_pair(python)
    return any(p.endswith("+") and _version_pair(p[:-1]) <= have for p in files.pythons)


@lru_cache(maxsize=256)
def _admits(requires_python: str, python: str) -> bool:
    try:
        return SpecifierSet(requires_python).contains(python, prereleases=True)
    except InvalidSpecifier:
        return True  # a malformed Requires-Python is the index's; pip would ignore it too


def full_python(state: ResolverState, python: str) -> str:
    """The full Python version the request gives (3.14.1) when it is of the chosen minor, else the minor."""
    minor = python.rstrip("t")
    given = state.request.python_version
    return given if given is not None and given.startswith(minor + ".") else minor


#: (patch, a Python it lists, platform, companions) -> the pinned wheels that do not install (`blocked_wheels`)
_BLOCKED_WHEELS: MatrixMemo[tuple[str, str, str, tuple[str, ...]], tuple[Blocked, ...]] = MatrixMemo("blocked_wheels")


def blocked_wheels(state: ResolverState, patch: TorchPatch, python: str) -> list[Blocked]:
    """The pinned packages (torch and the asked companions) whose recorded wheels do not install on the target:
    no wheel for the Python, a Requires-Python that excludes the full Python, or (when the request describes
    the host) no platform tag the host accepts. A package with no recorded wheels is not checked here. Kept per
    matrix for a request that gives neither a full Python nor the host's platform (``python`` is one the patch
    lists: the Python stage chose it)."""
    r = state.request
    if r.python_version is not None or describes_host(state):
        return _blocked_wheels(state, patch, python)
    key = (patch.version, python, r.platform, r.with_)
    memo = _BLOCKED_WHEELS.table(state.matrix)
    found = memo.get(key)
    if found is None:
        found = memo[key] = tuple(_blocked_wheels(state, patch, python))
    return list(found)


def _blocked_wheels(state: ResolverState, patch: TorchPatch, python: str) -> list[Blocked]:
    r = state.request
    full = full_python(state, python)
    host = host_platform_tags(r.os, r.arch, r.glibc, r.musl, r.macos) if describes_host(state) else None
    out: list[Blocked] = []
    names = [("torch", patch.version)] + [(n, getattr(patch, n).version) for n in r.with_]
    for name, version in names:
        if version is None:
            continue
        files = wheels_of(patch, name, r.platform)
        if files is None:
            continue
        if name != "torch" and not _has_python(files, python):
            out.append(Blocked(name, version, "python", f"{name} {version} has no wheel for Python {python} "
                               f"on {r.platform}"))
            continue
        if files.requires_python and not _admits(files.requires_python, full):
            out.append(Blocked(name, version, "python", f"{name} {version} requires Python "
                               f"{files.requires_python}, not {full}"))
            continue
        if host is not None and not any(t in host for t in files.platform_tags):
            floors = [f for f in map(tag_floor, files.platform_tags) if f is not None]
            floor = min(floors, key=lambda f: f.version) if floors else None
            tags = ", ".join(files.platform_tags)
            need = f" (need {floor.text})" if floor is not None else ""
            out.append(Blocked(name, version, "platform",
                               f"{name} {version} wheels are {tags}{need}; the target has {host_words(state)}", floor))
    return out


def build_blocked(state: ResolverState, version: str, label: str) -> Blocked | None:
    """A build that does not run on the described host (None: it does, or nothing says it does not): a build
    served from a /whl/<label> index whose platform tag host_rules.yaml gives, above the target's glibc; MPS
    in a release whose macOS floor (mps.yaml) is above --macos."""
    r = state.request
    if r.os == "macos" and r.macos is not None and state.family == "mps":
        return _mps_blocked(state, version)
    if r.os != "linux" or (r.glibc is None and r.musl is None):
        return None
    runtime = runtime_floor(state, version)
    if runtime is not None and r.glibc is not None and _version_pair(r.glibc) < runtime.version:
        return Blocked("torch", version, "platform", f"{runtime.origin}; the target has {host_words(state)}", runtime)
    found = _label_floor(state, version, label)
    if found is None:
        return None
    tags = found[0]
    if any(t in host_platform_tags(r.os, r.arch, r.glibc, r.musl, r.macos) for t in tags):
        return None
    tag = ", ".join(tags)
    floors = [f for f in map(tag_floor, tags) if f is not None]
    floor = min(floors, key=lambda f: f.version) if floors else None
    need = f" (need {floor.text})" if floor is not None else ""
    return Blocked("torch", f"{version}+{label}", "platform",
                   f"torch {version} {label} wheels are {tag}{need}; the target has {host_words(state)}", floor)


def _mps_blocked(state: ResolverState, version: str) -> Blocked | None:
    row = state.matrix.mps_support(version)
    if row is None or row.min_macos is None or state.request.macos is None:
        return None
    need = _version_pair(row.min_macos)
    if _version_pair(state.request.macos) >= need:
        return None
    return Blocked("torch", version, "platform",
                   f"MPS in torch {version} needs macOS >= {row.min_macos} (mps.yaml: {', '.join(row.source)}); "
                   f"the target has macOS {state.request.macos}", TagFloor("macOS", need))


def runtime_floor(state: ResolverState, version: str) -> TagFloor | None:
    """The glibc a release's binaries need where their wheel tag names an older one (host_rules.yaml
    runtime_floors: torch up to 2.6 is tagged manylinux1 but was built on CentOS 7, glibc 2.17)."""
    row = state.matrix.runtime_floor(version, state.request.platform) if state.request.os == "linux" else None
    if row is None:
        return None
    return TagFloor(
        "glibc",
        _version_pair(row.glibc),
        f"torch {version}'s binaries need glibc >= {row.glibc}, more than their wheel tag says; "
        f"host_rules.yaml: {', '.join(row.source)}",
    )


#: (patch, build label, platform, companions) -> the highest floor the pinned wheels ask (`floor_needed`)
_PLATFORM_FLOORS: MatrixMemo[tuple[str, str, str, tuple[str, ...]], TagFloor | None] = MatrixMemo("platform_floors")


def floor_needed(state: ResolverState, patch: TorchPatch, label: str) -> TagFloor | None:
    """The highest floor the chosen wheels' tags ask of the host (what "host needs" states); kept per matrix."""
    r = state.request
    key = (patch.version, label, r.platform, r.with_)
    memo = _PLATFORM_FLOORS.table(state.matrix)
    if key not in memo:
        memo[key] = _floor_needed(state, patch, label)
    return memo[key]


def _floor_needed(state: ResolverState, patch: TorchPatch, label: str) -> TagFloor | None:
    r = state.request
    floors: list[TagFloor] = []
    label_tags = _label_floor(state, patch.version, label) if r.os == "linux" else None
    if label_tags is not None:  # a build served from its own index: its tags, not the default index's wheels
        own = [f for f in map(tag_floor, label_tags[0]) if f is not None]
        if own:
            floors.append(min(own, key=lambda f: f.version))
    for name in ("torch", *r.with_):
        if label_tags is not None and name == "torch":
            continue
        files = wheels_of(patch, name, r.platform)
        if files is None:
            continue
        own = [f for f in map(tag_floor, files.platform_tags) if f is not None]
        if own:
            floors.append(min(own, key=lambda f: f.version))
    runtime = runtime_floor(state, patch.version)
    if runtime is not None:
        floors.append(runtime)
    # the highest; at equal versions a wheel tag's floor (said plainly) before a runtime floor
    return max(floors, key=lambda f: (f.version, f.origin is None)) if floors else None
