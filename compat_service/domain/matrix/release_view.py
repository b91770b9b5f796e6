"""What the matrix says about one torch release, flattened per patch and platform (for `matrix show`).

Pure: takes the matrix's rows (`MatrixTables`) and a request like "2.3" or "2.3.1", returns plain JSON-ready
dicts. An unknown or malformed release is an `AccelenvError` that names the nearest releases the matrix does
hold.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from compat_service.domain.backends import PLATFORMS
from compat_service.domain.errors import Alternative, Cause, InvalidRequestError, NotFoundError
from compat_service.domain.json_types import JsonObject
from compat_service.domain.matrix.model.rows import (
    DefaultIndexEntry,
    MatrixTables,
    PythonSupport,
    TorchMinor,
    TorchPatch,
    as_json,
)

_NEARBY = 3


def _parse(torch: str) -> Version:
    try:
        version = Version(torch)
    except InvalidVersion:
        raise InvalidRequestError(
            f"{torch!r} is not a torch version",
            hint="give latest, a minor like 2.3 or a patch like 2.3.1",
            causes=[Cause(constraint=f"--torch {torch}", origin="request: --torch")],
        ) from None
    if len(version.release) < 2 or version.local or version.pre or version.dev:
        raise InvalidRequestError(
            f"{torch!r} is not a torch release like 2.3 or 2.3.1",
            hint="drop local tags such as +cu121; the build is chosen separately",
            causes=[Cause(constraint=f"--torch {torch}", origin="request: --torch")],
        )
    return version


def _nearby(known: list[str], wanted: Version) -> list[str]:
    ordered = sorted(known, key=Version)
    below = [v for v in ordered if Version(v) < wanted][-_NEARBY:]
    above = [v for v in ordered if Version(v) > wanted][:_NEARBY]
    return below + above


def _not_found(data: MatrixTables, torch: str, wanted: Version) -> NotFoundError:
    minors = [m.minor for m in data.torch_releases.minors]
    minor = next((m for m in data.torch_releases.minors if m.minor == f"{wanted.major}.{wanted.minor}"), None)
    if minor is not None:
        near = [p.version for p in minor.patches]
        message = f"torch {torch} is not in the matrix; {minor.minor} has {', '.join(near)}"
    else:
        near = _nearby(minors, wanted)
        message = f"torch {torch} is not in the matrix; nearby releases: {', '.join(near)}"
    return NotFoundError(
        message,
        hint=f"the matrix covers {min(minors, key=Version)} to {max(minors, key=Version)}; "
        "`accelenv matrix show --torch MINOR` lists a minor's patches",
        causes=[Cause(constraint=f"torch == {torch}", origin="request: --torch")],
        alternatives=[Alternative(description=f"torch {v}", request={"torch": v}) for v in near],
    )


def _python_for(entries: list[PythonSupport], platform: str) -> list[str]:
    versions: list[str] = []
    for entry in entries:
        if entry.platforms is None or platform in entry.platforms:
            versions += [v for v in entry.versions if v not in versions]
    return versions


def _labels_on(minor: TorchMinor, version: str, platform: str) -> list[str]:
    """The build labels patch ``version`` publishes on ``platform``."""
    return [v.label for v in minor.variants if platform in v.platforms and (v.patches is None or version in v.patches)]


def _platform_view(minor: TorchMinor, patch: TorchPatch, platform: str) -> JsonObject | None:
    """What ``patch`` publishes on ``platform``; None when it has no wheels there (e.g. macOS x86_64 from 2.3)."""
    python = list(patch.python_override) if patch.python_override is not None else list(minor.python)
    defaults: dict[str, DefaultIndexEntry] = {d.platform: d for d in minor.default_index}
    labels = _labels_on(minor, patch.version, platform)
    unknown = platform in minor.platforms_unsourced
    if not labels and not unknown and platform not in defaults:
        return None
    default = defaults.get(platform)
    return {
        "platform": platform,
        "python": _python_for(python, platform),
        "variants": labels,
        "variants_complete": not unknown,
        "default_index": default.label if default else None,
    }


def _patch_view(minor: TorchMinor, patch: TorchPatch) -> JsonObject:
    platforms = [view for platform in PLATFORMS if (view := _platform_view(minor, patch, platform)) is not None]
    sources: set[str] = set(patch.release_date_source)
    for companion in (patch.torchvision, patch.torchaudio, patch.triton):
        sources.update(companion.source)
    return {
        "version": patch.version,
        "release_date": patch.release_date.isoformat() if patch.release_date else None,
        "platforms": platforms,
        "torchvision": as_json(patch.torchvision),
        "torchaudio": as_json(patch.torchaudio),
        "triton": as_json(patch.triton),
        "note": patch.note,
        "sources": sorted(sources),
    }


def latest_released(data: MatrixTables) -> str:
    """What ``--torch latest`` means, as in resolve: the newest minor whose status is ``released`` (a
    ``partial`` minor is chosen only when named)."""
    released = [m.minor for m in data.torch_releases.minors if m.status == "released"]
    return max(released, key=Version)


def _python_key(version: str) -> tuple[Version, bool]:
    return Version(version.rstrip("t")), version.endswith("t")


def releases_overview(data: MatrixTables) -> list[JsonObject]:
    """One row per torch minor, newest first: patches, newest release date, Python versions, build labels,
    the default-index build per platform and the status (for `matrix show` without ``--torch``)."""
    rows = []
    for minor in sorted(data.torch_releases.minors, key=lambda m: Version(m.minor), reverse=True):
        newest = max(minor.patches, key=lambda p: Version(p.version))
        python = sorted({v for patch in minor.patches for e in (patch.python_override or minor.python)
                         for v in e.versions}, key=_python_key)
        rows.append({
            "minor": minor.minor,
            "patches": [p.version for p in sorted(minor.patches, key=lambda p: Version(p.version))],
            "release_date": newest.release_date.isoformat() if newest.release_date else None,
            "python": python,
            "builds": list(dict.fromkeys(v.label for v in minor.variants)),
            "default_build": {d.platform: d.label for d in minor.default_index},
            "status": minor.status,
        })
    return rows


def _matching_patches(data: MatrixTables, torch: str) -> tuple[TorchMinor, list[TorchPatch]]:
    """The minor holding ``torch`` and its patches that ``torch`` names (all of them for a minor)."""
    wanted = _parse(latest_released(data) if torch.strip() == "latest" else torch)
    minor = next((m for m in data.torch_releases.minors if m.minor == f"{wanted.major}.{wanted.minor}"), None)
    exact_patch = len(wanted.release) >= 3
    if minor is None:
        raise _not_found(data, torch, wanted)
    patches = [p for p in minor.patches if not exact_patch or Version(p.version) == wanted]
    if not patches:
        raise _not_found(data, torch, wanted)
    return minor, patches


def release_view(data: MatrixTables, torch: str) -> JsonObject:
    """The minor holding ``torch`` (a minor, a patch, or ``latest`` as in resolve) with one entry per
    matching patch."""
    minor, patches = _matching_patches(data, torch)
    sources: set[str] = set(minor.index_option_source)
    for row in [*minor.python, *minor.variants, *minor.default_index]:
        sources.update(row.source)
    titles = {s.key: s.title for s in data.sources.sources}
    views = [_patch_view(minor, p) for p in patches]
    for view in views:
        sources.update(view["sources"])
    return {
        "minor": minor.minor,
        "status": minor.status,
        "index_option": minor.index_option,
        "platforms_unsourced": list(minor.platforms_unsourced),
        "note": minor.note,
        "variants": [as_json(v) for v in minor.variants],
        "default_index": [as_json(d) for d in minor.default_index],
        "patches": views,
        "sources": {key: titles.get(key) for key in sorted(sources)},
    }
