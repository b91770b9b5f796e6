"""Which published GPU builds have a known arch list, and what was searched for the rest.

A build is one (torch patch, variant label, platform) that torch_releases.yaml lists for a CUDA or ROCm
variant. Its arch list is known when a gpu_archs.yaml ``arch_lists`` row covers it (the first match, as
``Matrix.arch_list`` reads it); otherwise it is unknown, with the text of a ``searched`` record where one
covers it. ``accelenv matrix validate`` prints the counts and the unknown builds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from compat_service.domain.matrix.model.rows import (
    ArchList,
    ArchSearch,
    MatrixTables,
    TorchMinor,
    TorchPatch,
    VariantAvailability,
)


@dataclass(frozen=True)
class BuildArchStatus:
    torch: str
    variant: str
    family: str
    platform: str
    known: bool
    #: the searched record's text for an unknown build, None when nothing records a search
    searched: str | None = None


def _spec(text: str) -> SpecifierSet | None:
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        return None


def arch_list_coverage(data: MatrixTables) -> list[BuildArchStatus]:
    families = {v.label: v.family for v in data.build_variants.variants}
    lists = [(_spec(a.torch), a) for a in data.gpu_archs.arch_lists]
    searches = [(_spec(s.torch), s) for s in data.gpu_archs.searched]
    out: list[BuildArchStatus] = []
    for minor in data.torch_releases.minors:
        for patch, variant in _gpu_builds(minor, families):
            family = families[variant.label]
            for platform in variant.platforms:
                build = (patch.version, variant.label, platform)
                known = _has_arch_list(lists, build)
                searched = None if known else _searched_record(searches, build)
                out.append(BuildArchStatus(patch.version, variant.label, family, platform, known, searched))
    return out


def _gpu_builds(minor: TorchMinor, families: Mapping[str, str]) -> list[tuple[TorchPatch, VariantAvailability]]:
    """Every (patch, variant) of ``minor`` that is a CUDA or ROCm build the patch publishes."""
    return [
        (patch, variant)
        for patch in minor.patches
        for variant in minor.variants
        if families.get(variant.label) in ("cuda", "rocm")
        and (variant.patches is None or patch.version in variant.patches)
    ]


def _has_arch_list(lists: list[tuple[SpecifierSet | None, ArchList]], build: tuple[str, str, str]) -> bool:
    version, label, platform = build
    return any(
        spec is not None
        and a.variant == label
        and platform in a.platforms
        and spec.contains(version, prereleases=True)
        for spec, a in lists
    )


def _searched_record(searches: list[tuple[SpecifierSet | None, ArchSearch]], build: tuple[str, str, str]) -> str | None:
    """What the searched record covering a build without an arch list says was searched; None: no record."""
    version, label, platform = build
    return next(
        (
            s.searched
            for spec, s in searches
            if spec is not None
            and label in s.variants
            and platform in s.platforms
            and spec.contains(version, prereleases=True)
        ),
        None,
    )
