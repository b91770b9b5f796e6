"""Which published GPU builds have a known arch list, and what was searched for the rest.

A build is one (torch patch, variant label, platform) that torch_releases.yaml lists for a CUDA or ROCm
variant. Its arch list is known when a gpu_archs.yaml ``arch_lists`` row covers it (the first match, as
``Matrix.arch_list`` reads it); otherwise it is unknown, with the text of a ``searched`` record where one
covers it. ``accelenv matrix validate`` prints the counts and the unknown builds.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from compat_service.domain.matrix.rows import MatrixTables


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
        for patch in minor.patches:
            for variant in minor.variants:
                family = families.get(variant.label)
                if family not in ("cuda", "rocm"):
                    continue
                if variant.patches is not None and patch.version not in variant.patches:
                    continue
                for platform in variant.platforms:
                    known = any(
                        spec is not None
                        and a.variant == variant.label
                        and platform in a.platforms
                        and spec.contains(patch.version, prereleases=True)
                        for spec, a in lists
                    )
                    searched = None
                    if not known:
                        searched = next(
                            (
                                s.searched
                                for spec, s in searches
                                if spec is not None
                                and variant.label in s.variants
                                and platform in s.platforms
                                and spec.contains(patch.version, prereleases=True)
                            ),
                            None,
                        )
                    out.append(BuildArchStatus(patch.version, variant.label, family, platform, known, searched))
    return out
