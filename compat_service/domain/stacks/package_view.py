"""One ecosystem package's releases flattened for people and clients: `matrix show --with vllm` and
``GET /v1/packages/{name}`` read the same rows (newest first)."""

from __future__ import annotations

from compat_service.domain.json_types import JsonObject
from compat_service.domain.stacks.catalog import Catalog, Package, Release

COMPANIONS = ("torchvision", "torchaudio", "torch-npu")


def release_row(package: Package, release: Release, platform: str | None = None) -> JsonObject:
    """A release: its torch requirement and companion pins per platform, Pythons, yanked, curated rows."""
    platforms = sorted(set(release.wheels) | set(release.requires)) if platform is None else [platform]
    per_platform = []
    for name in platforms:
        tags = list(release.wheels.get(name, ()))
        pins = release.pins(name, None)
        stated = release.torch_specifier(name, None)
        if not tags and stated is None:
            continue
        per_platform.append({
            "platform": name,
            "torch": stated,
            "companions": {k: v for k, v in sorted(pins.items()) if k in COMPANIONS},
            "pythons": tags,
        })
    prebuilt = [
        {"torch": row["torch"], "cuda_major": row["cuda_major"], "python": row["python"], "platform": row["platform"],
         "cxx11abi": row["cxx11abi"], "source": row["source"]}
        for row in package.wheel_rows if row["version"] == release.version
    ]
    pages = [
        {"torch": row["torch"], "builds": row["builds"], "platforms": row["platforms"], "python": row["python"],
         "url": row["url"], "source": row["source"]}
        for row in package.page_rows
        if release.version in row["versions"] and (platform is None or platform in row["platforms"])
    ]
    return {
        "version": release.version,
        "yanked": release.yanked,
        "prerelease": release.prerelease,
        "first_upload": release.first_upload,
        "requires_python": release.requires_python,
        "sdist": release.sdist is not None,
        "platforms": per_platform,
        "curated_torch": release.curated_torch,
        "prebuilt_wheels": prebuilt,
        "policy": release.policy,
        "wheel_pages": pages,
    }


def package_view(catalog: Catalog, name: str, platform: str | None = None,
                 include_prereleases: bool = False) -> JsonObject | None:
    package = catalog.get(name)
    if package is None:
        return None
    releases = [
        release_row(package, r, platform)
        for r in package.releases
        if include_prereleases or not r.prerelease
    ]
    return {
        "name": package.name,
        "torch_build": package.torch_build,
        "sources": list(package.sources),
        "index": package.index,
        "retrieved": package.retrieved,
        "platforms": package.platforms(),
        "releases": [r for r in releases
                     if platform is None or r["platforms"] or r["prebuilt_wheels"] or r["wheel_pages"]],
    }
