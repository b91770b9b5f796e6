"""The schema of the generated layer: what refresh reads (``matrix_data/index/refresh.yaml``) and writes.

Generated facts carry their provenance: the file-level ``index`` (``pip-default`` or the URL read) and
``retrieved`` date apply to every fact of the file, and each fact names the ``file`` it was read from.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from compat_service.domain.backends import Platform

FACTS_SCHEMA: Literal["index_facts/v1"] = "index_facts/v1"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# -- refresh.yaml ---------------------------------------------------------------------------------------


class PackageConfig(_Strict):
    name: str
    #: releases older than this are not read
    since: str
    requirements: list[str] = Field(default_factory=list)
    variant_indexes: bool = False


class RuntimeRule(_Strict):
    requirement: str
    family: Literal["cuda", "rocm", "xpu"]
    #: the pinned version is a toolkit release (cuda-toolkit==13.2.2), not a library's own version (cudart)
    pins_toolkit: bool = False


class PlatformRule(_Strict):
    platform: Platform
    tags: list[str] = Field(min_length=1)
    markers: dict[str, str]


class RefreshConfig(_Strict):
    schema_: Literal["index_refresh/v1"] = Field(alias="schema")
    packages: list[PackageConfig]
    runtimes: list[RuntimeRule]
    platforms: list[PlatformRule]

    def package(self, name: str) -> PackageConfig:
        for package in self.packages:
            if package.name == name:
                return package
        raise KeyError(name)


# -- <package>.yaml -------------------------------------------------------------------------------------


class WheelFact(_Strict):
    """A wheel exists for this platform and Python (``3.13t`` free-threaded, ``3.10+`` abi3, ``any``)."""

    platform: Platform
    python: str
    file: str
    #: the sha256 the index states for the file (None: it states none, or an earlier refresh did not record it)
    sha256: str | None = None


class RequirementFact(_Strict):
    """One Requires-Dist entry of the wheel read for a platform, with its full marker."""

    platform: Platform
    name: str
    specifier: str
    marker: str | None
    file: str


class RuntimeFact(_Strict):
    """The accelerator runtime of the wheel this index serves for a platform (``cpu`` when none)."""

    platform: Platform
    family: Literal["cpu", "cuda", "rocm", "xpu"]
    #: the build label (build_variants.yaml) the runtime maps to; null when no variant matches
    label: str | None
    #: the pinned runtime version (``13.2.2``), null for cpu
    version: str | None
    requirement: str | None
    #: the toolkit release the pin names, where the requirement pins a toolkit (``pins_toolkit``)
    toolkit: str | None = None
    file: str


class ReleaseFact(_Strict):
    version: str
    #: the earliest upload time of the release's files (UTC)
    first_upload: dt.datetime | None
    prerelease: bool
    postrelease: bool
    #: every file of the release is yanked (PEP 592); yanked and pre-releases are excluded from resolving
    yanked: bool
    yanked_reason: str | None = None
    yanked_files: list[str] = Field(default_factory=list)
    requires_python: str | None
    requires_python_file: str | None = None
    sdist: str | None = None
    wheels: list[WheelFact] = Field(default_factory=list)
    runtimes: list[RuntimeFact] = Field(default_factory=list)
    requirements: list[RequirementFact] = Field(default_factory=list)


class VariantIndexFacts(_Strict):
    """What one build variant's index (``/whl/<label>``) serves of the project."""

    label: str
    index: str
    #: ``read``, or ``unreachable`` (the facts of this label are unknown, not absent)
    status: Literal["read", "unreachable", "absent"]
    #: version (without the local label) -> wheels
    releases: dict[str, list[WheelFact]] = Field(default_factory=dict)


class VariantsJsonFact(_Strict):
    """A PEP 825 ``{name}-{version}-variants.json`` the index links, or a variant wheel's
    ``*.dist-info/variant.json`` (one label): each variant label's properties as the file states them
    (namespace -> feature -> values), the file being their source."""

    version: str
    #: the page the file is linked from (the index, or a build label's index)
    index: str
    file: str
    sha256: str | None = None
    default_namespaces: list[str] = Field(default_factory=list)
    variants: dict[str, dict[str, dict[str, list[str]]]] = Field(default_factory=dict)


class PackageFacts(_Strict):
    schema_: Literal["index_facts/v1"] = Field(alias="schema", default=FACTS_SCHEMA)
    package: str
    index: str
    retrieved: dt.date
    releases: list[ReleaseFact]
    variant_indexes: list[VariantIndexFacts] = Field(default_factory=list)
    #: the PEP 825 variants JSON files the index links, one per release and page
    variants_json: list[VariantsJsonFact] = Field(default_factory=list)

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    def release(self, version: str) -> ReleaseFact | None:
        for release in self.releases:
            if release.version == version:
                return release
        return None
