"""The matrix's rows: one frozen class per model of ``schema.py``, the same on every path.

GENERATED from compat_service/domain/matrix/model/schema.py by
compat_service/domain/matrix/model/rows_codegen.py (which says why plain classes); do not edit. Regenerate with
    .venv/bin/python -m compat_service.domain.matrix.model.rows_codegen

The schema validates matrix_data; these classes carry the validated rows to every reader of the matrix
(``loader.load_matrix_rows``, ``snapshot.load_matrix_cached``, the service's stored load), built by
``MatrixTables.from_json`` from the schema's JSON form, without importing pydantic. Fields, types and
defaults are the schema's; its checks are not repeated here. ``as_json`` writes a row back in that form,
``replace`` copies one with some fields changed.
"""

from __future__ import annotations

import datetime as dt
from typing import ClassVar, Literal

from compat_service.domain.backends import Platform
from compat_service.domain.matrix.model.row_base import Fields, Frozen, JsonObject, as_json, replace
from compat_service.domain.matrix.model.row_base import set_slot as _set

__all__ = [
    "ArchList",
    "ArchSearch",
    "AscendNpuRow",
    "BuildVariant",
    "BuildVariantsFile",
    "CambriconMluRow",
    "CapabilityFloor",
    "CudaFile",
    "CudaToolkit",
    "DefaultIndexEntry",
    "Frozen",
    "GpuArchsFile",
    "GpuName",
    "HostRulesFile",
    "IndexOverride",
    "JetpackRelease",
    "JetsonFile",
    "JetsonWheel",
    "KernelUserSpace",
    "KnownBadCompanion",
    "KnownBadFile",
    "KnownBadRule",
    "MatrixTables",
    "MinorVersionCompat",
    "MpsFile",
    "MpsSupport",
    "PythonSupport",
    "RocmFile",
    "RocmRelease",
    "Row",
    "RuntimeFloor",
    "SbsaJetson",
    "Source",
    "SourcesFile",
    "ToolkitArchRange",
    "TorchMinor",
    "TorchPatch",
    "TorchReleasesFile",
    "VariantAvailability",
    "VendorFile",
    "VendorInstall",
    "Versioned",
    "WheelFiles",
    "WheelFloor",
    "XpuFile",
    "XpuSupport",
    "as_json",
    "replace",
]


class IndexOverride(Frozen):
    """A curated value kept over what the package index states (matrix_data/index/): why, and who says so."""

    __slots__ = ("field", "reason", "source")
    _fields: ClassVar[Fields] = (("field", "field"), ("reason", "reason"), ("source", "source"))
    field: str
    reason: str
    source: list[str]

    def __init__(
        self,
        *,
        field: str,
        reason: str,
        source: list[str],
    ) -> None:
        _set(self, "field", field)
        _set(self, "reason", reason)
        _set(self, "source", source)

    @classmethod
    def from_json(cls, data: JsonObject) -> IndexOverride:
        return cls(
            field=data["field"],
            reason=data["reason"],
            source=data["source"],
        )


class Row(Frozen):
    """Base of every data row: strict keys, and a source that is never empty."""

    __slots__ = ("source", "note")
    _fields: ClassVar[Fields] = (("source", "source"), ("note", "note"))
    source: list[str]
    note: str | None

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)

    @classmethod
    def from_json(cls, data: JsonObject) -> Row:
        return cls(
            source=data["source"],
            note=data.get("note", None),
        )


class Versioned(Frozen):
    """A single sourced value: ``{version: "0.18.1", source: [...]}``; version null = unknown."""

    __slots__ = ("version", "source", "note", "requirement", "marker", "applies")
    _fields: ClassVar[Fields] = (
        ("version", "version"),
        ("source", "source"),
        ("note", "note"),
        ("requirement", "requirement"),
        ("marker", "marker"),
        ("applies", "applies"),
    )
    version: str | None
    source: list[str]
    note: str | None
    requirement: str | None
    marker: str | None
    applies: dict[Platform, list[str]] | None

    def __init__(
        self,
        *,
        version: str | None,
        source: list[str] | None = None,
        note: str | None = None,
        requirement: str | None = None,
        marker: str | None = None,
        applies: dict[Platform, list[str]] | None = None,
    ) -> None:
        _set(self, "version", version)
        _set(self, "source", [] if source is None else source)
        _set(self, "note", note)
        _set(self, "requirement", requirement)
        _set(self, "marker", marker)
        _set(self, "applies", applies)

    @classmethod
    def from_json(cls, data: JsonObject) -> Versioned:
        return cls(
            version=data["version"],
            source=data.get("source", []),
            note=data.get("note", None),
            requirement=data.get("requirement", None),
            marker=data.get("marker", None),
            applies=data.get("applies", None),
        )


class Source(Frozen):
    """Mirrors schema.Source."""

    __slots__ = ("key", "title", "url", "confidence", "retrieved", "note")
    _fields: ClassVar[Fields] = (
        ("key", "key"),
        ("title", "title"),
        ("url", "url"),
        ("confidence", "confidence"),
        ("retrieved", "retrieved"),
        ("note", "note"),
    )
    key: str
    title: str
    url: str | None
    confidence: Literal["primary", "secondary", "third-party"]
    retrieved: dt.date | None
    note: str | None

    def __init__(
        self,
        *,
        key: str,
        title: str,
        url: str | None = None,
        confidence: Literal["primary", "secondary", "third-party"],
        retrieved: dt.date | None = None,
        note: str | None = None,
    ) -> None:
        _set(self, "key", key)
        _set(self, "title", title)
        _set(self, "url", url)
        _set(self, "confidence", confidence)
        _set(self, "retrieved", retrieved)
        _set(self, "note", note)

    @classmethod
    def from_json(cls, data: JsonObject) -> Source:
        retrieved = data.get("retrieved", None)
        if retrieved is not None:
            retrieved = dt.date.fromisoformat(retrieved)
        return cls(
            key=data["key"],
            title=data["title"],
            url=data.get("url", None),
            confidence=data["confidence"],
            retrieved=retrieved,
            note=data.get("note", None),
        )


class SourcesFile(Frozen):
    """Mirrors schema.SourcesFile."""

    __slots__ = ("schema_", "sources")
    _fields: ClassVar[Fields] = (("schema_", "schema"), ("sources", "sources"))
    schema_: Literal["sources/v1"]
    sources: list[Source]

    def __init__(
        self,
        *,
        schema_: Literal["sources/v1"],
        sources: list[Source],
    ) -> None:
        _set(self, "schema_", schema_)
        _set(self, "sources", sources)

    @classmethod
    def from_json(cls, data: JsonObject) -> SourcesFile:
        sources = [Source.from_json(x0) for x0 in data["sources"]]
        return cls(
            schema_=data["schema"],
            sources=sources,
        )


class BuildVariant(Row):
    """A build label and the wheel index it lives on, e.g. cu121 -> .../whl/cu121."""

    __slots__ = ("label", "family", "runtime", "runtime_full", "index_url")
    _fields: ClassVar[Fields] = (
        ("source", "source"),
        ("note", "note"),
        ("label", "label"),
        ("family", "family"),
        ("runtime", "runtime"),
        ("runtime_full", "runtime_full"),
        ("index_url", "index_url"),
    )
    label: str
    family: Literal["cpu", "cuda", "rocm", "xpu"]
    runtime: str | None
    runtime_full: str | None
    index_url: str

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        label: str,
        family: Literal["cpu", "cuda", "rocm", "xpu"],
        runtime: str | None,
        runtime_full: str | None = None,
        index_url: str,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "label", label)
        _set(self, "family", family)
        _set(self, "runtime", runtime)
        _set(self, "runtime_full", runtime_full)
        _set(self, "index_url", index_url)

    @classmethod
    def from_json(cls, data: JsonObject) -> BuildVariant:
        return cls(
            source=data["source"],
            note=data.get("note", None),
            label=data["label"],
            family=data["family"],
            runtime=data["runtime"],
            runtime_full=data.get("runtime_full", None),
            index_url=data["index_url"],
        )


class BuildVariantsFile(Frozen):
    """Mirrors schema.BuildVariantsFile."""

    __slots__ = ("schema_", "variants")
    _fields: ClassVar[Fields] = (("schema_", "schema"), ("variants", "variants"))
    schema_: Literal["build_variants/v1"]
    variants: list[BuildVariant]

    def __init__(
        self,
        *,
        schema_: Literal["build_variants/v1"],
        variants: list[BuildVariant],
    ) -> None:
        _set(self, "schema_", schema_)
        _set(self, "variants", variants)

    @classmethod
    def from_json(cls, data: JsonObject) -> BuildVariantsFile:
        variants = [BuildVariant.from_json(x0) for x0 in data["variants"]]
        return cls(
            schema_=data["schema"],
            variants=variants,
        )


class VariantAvailability(Row):
    """One build variant of a torch minor and the platforms it was published for."""

    __slots__ = ("label", "platforms", "patches")
    _fields: ClassVar[Fields] = (
        ("source", "source"),
        ("note", "note"),
        ("label", "label"),
        ("platforms", "platforms"),
        ("patches", "patches"),
    )
    label: str
    platforms: list[Platform]
    patches: list[str] | None

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        label: str,
        platforms: list[Platform],
        patches: list[str] | None = None,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "label", label)
        _set(self, "platforms", platforms)
        _set(self, "patches", patches)

    @classmethod
    def from_json(cls, data: JsonObject) -> VariantAvailability:
        return cls(
            source=data["source"],
            note=data.get("note", None),
            label=data["label"],
            platforms=data["platforms"],
            patches=data.get("patches", None),
        )


class PythonSupport(Row):
    """The CPython versions (``3.13t`` = free-threaded) with wheels; ``platforms`` limits an entry."""

    __slots__ = ("versions", "platforms")
    _fields: ClassVar[Fields] = (
        ("source", "source"),
        ("note", "note"),
        ("versions", "versions"),
        ("platforms", "platforms"),
    )
    versions: list[str]
    platforms: list[Platform] | None

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        versions: list[str],
        platforms: list[Platform] | None = None,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "versions", versions)
        _set(self, "platforms", platforms)

    @classmethod
    def from_json(cls, data: JsonObject) -> PythonSupport:
        return cls(
            source=data["source"],
            note=data.get("note", None),
            versions=data["versions"],
            platforms=data.get("platforms", None),
        )


class WheelFiles(Frozen):
    """What one pinned package's wheels on one platform ask of a host, read from their file names on the index."""

    __slots__ = ("package", "version", "platform", "pythons", "platform_tags", "requires_python", "source")
    _fields: ClassVar[Fields] = (
        ("package", "package"),
        ("version", "version"),
        ("platform", "platform"),
        ("pythons", "pythons"),
        ("platform_tags", "platform_tags"),
        ("requires_python", "requires_python"),
        ("source", "source"),
    )
    package: str
    version: str
    platform: Platform
    pythons: list[str]
    platform_tags: list[str]
    requires_python: str | None
    source: list[str]

    def __init__(
        self,
        *,
        package: str,
        version: str,
        platform: Platform,
        pythons: list[str],
        platform_tags: list[str],
        requires_python: str | None = None,
        source: list[str] | None = None,
    ) -> None:
        _set(self, "package", package)
        _set(self, "version", version)
        _set(self, "platform", platform)
        _set(self, "pythons", pythons)
        _set(self, "platform_tags", platform_tags)
        _set(self, "requires_python", requires_python)
        _set(self, "source", [] if source is None else source)

    @classmethod
    def from_json(cls, data: JsonObject) -> WheelFiles:
        return cls(
            package=data["package"],
            version=data["version"],
            platform=data["platform"],
            pythons=data["pythons"],
            platform_tags=data["platform_tags"],
            requires_python=data.get("requires_python", None),
            source=data.get("source", []),
        )


class TorchPatch(Frozen):
    """Mirrors schema.TorchPatch."""

    __slots__ = (
        "version",
        "release_date",
        "release_date_source",
        "torchvision",
        "torchaudio",
        "triton",
        "python_override",
        "note",
        "index_overrides",
        "wheels",
    )
    _fields: ClassVar[Fields] = (
        ("version", "version"),
        ("release_date", "release_date"),
        ("release_date_source", "release_date_source"),
        ("torchvision", "torchvision"),
        ("torchaudio", "torchaudio"),
        ("triton", "triton"),
        ("python_override", "python_override"),
        ("note", "note"),
        ("index_overrides", "index_overrides"),
        ("wheels", "wheels"),
    )
    version: str
    release_date: dt.date | None
    release_date_source: list[str]
    torchvision: Versioned
    torchaudio: Versioned
    triton: Versioned
    python_override: list[PythonSupport] | None
    note: str | None
    index_overrides: list[IndexOverride]
    wheels: list[WheelFiles]

    def __init__(
        self,
        *,
        version: str,
        release_date: dt.date | None,
        release_date_source: list[str] | None = None,
        torchvision: Versioned,
        torchaudio: Versioned,
        triton: Versioned,
        python_override: list[PythonSupport] | None = None,
        note: str | None = None,
        index_overrides: list[IndexOverride] | None = None,
        wheels: list[WheelFiles] | None = None,
    ) -> None:
        _set(self, "version", version)
        _set(self, "release_date", release_date)
        _set(self, "release_date_source", [] if release_date_source is None else release_date_source)
        _set(self, "torchvision", torchvision)
        _set(self, "torchaudio", torchaudio)
        _set(self, "triton", triton)
        _set(self, "python_override", python_override)
        _set(self, "note", note)
        _set(self, "index_overrides", [] if index_overrides is None else index_overrides)
        _set(self, "wheels", [] if wheels is None else wheels)

    @classmethod
    def from_json(cls, data: JsonObject) -> TorchPatch:
        release_date = data["release_date"]
        if release_date is not None:
            release_date = dt.date.fromisoformat(release_date)
        torchvision = Versioned.from_json(data["torchvision"])
        torchaudio = Versioned.from_json(data["torchaudio"])
        triton = Versioned.from_json(data["triton"])
        python_override = data.get("python_override", None)
        if python_override is not None:
            python_override = [PythonSupport.from_json(x0) for x0 in python_override]
        index_overrides = [IndexOverride.from_json(x0) for x0 in data.get("index_overrides", [])]
        wheels = [WheelFiles.from_json(x0) for x0 in data.get("wheels", [])]
        return cls(
            version=data["version"],
            release_date=release_date,
            release_date_source=data.get("release_date_source", []),
            torchvision=torchvision,
            torchaudio=torchaudio,
            triton=triton,
            python_override=python_override,
            note=data.get("note", None),
            index_overrides=index_overrides,
            wheels=wheels,
        )


class DefaultIndexEntry(Row):
    """Which build the plain default package index serves for a platform (no index option)."""

    __slots__ = ("platform", "label", "runtime_full", "index_overrides")
    _fields: ClassVar[Fields] = (
        ("source", "source"),
        ("note", "note"),
        ("platform", "platform"),
        ("label", "label"),
        ("runtime_full", "runtime_full"),
        ("index_overrides", "index_overrides"),
    )
    platform: Platform
    label: str | None
    runtime_full: str | None
    index_overrides: list[IndexOverride]

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        platform: Platform,
        label: str | None,
        runtime_full: str | None = None,
        index_overrides: list[IndexOverride] | None = None,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "platform", platform)
        _set(self, "label", label)
        _set(self, "runtime_full", runtime_full)
        _set(self, "index_overrides", [] if index_overrides is None else index_overrides)

    @classmethod
    def from_json(cls, data: JsonObject) -> DefaultIndexEntry:
        index_overrides = [IndexOverride.from_json(x0) for x0 in data.get("index_overrides", [])]
        return cls(
            source=data["source"],
            note=data.get("note", None),
            platform=data["platform"],
            label=data["label"],
            runtime_full=data.get("runtime_full", None),
            index_overrides=index_overrides,
        )


class TorchMinor(Frozen):
    """Mirrors schema.TorchMinor."""

    __slots__ = (
        "minor",
        "status",
        "platforms_unsourced",
        "index_option",
        "index_option_source",
        "python",
        "variants",
        "default_index",
        "patches",
        "note",
    )
    _fields: ClassVar[Fields] = (
        ("minor", "minor"),
        ("status", "status"),
        ("platforms_unsourced", "platforms_unsourced"),
        ("index_option", "index_option"),
        ("index_option_source", "index_option_source"),
        ("python", "python"),
        ("variants", "variants"),
        ("default_index", "default_index"),
        ("patches", "patches"),
        ("note", "note"),
    )
    minor: str
    status: Literal["released", "partial"]
    platforms_unsourced: list[Platform]
    index_option: Literal["--index-url", "--extra-index-url"] | None
    index_option_source: list[str]
    python: list[PythonSupport]
    variants: list[VariantAvailability]
    default_index: list[DefaultIndexEntry]
    patches: list[TorchPatch]
    note: str | None

    def __init__(
        self,
        *,
        minor: str,
        status: Literal["released", "partial"] = "released",
        platforms_unsourced: list[Platform] | None = None,
        index_option: Literal["--index-url", "--extra-index-url"] | None,
        index_option_source: list[str] | None = None,
        python: list[PythonSupport],
        variants: list[VariantAvailability],
        default_index: list[DefaultIndexEntry],
        patches: list[TorchPatch],
        note: str | None = None,
    ) -> None:
        _set(self, "minor", minor)
        _set(self, "status", status)
        _set(self, "platforms_unsourced", [] if platforms_unsourced is None else platforms_unsourced)
        _set(self, "index_option", index_option)
        _set(self, "index_option_source", [] if index_option_source is None else index_option_source)
        _set(self, "python", python)
        _set(self, "variants", variants)
        _set(self, "default_index", default_index)
        _set(self, "patches", patches)
        _set(self, "note", note)

    @classmethod
    def from_json(cls, data: JsonObject) -> TorchMinor:
        python = [PythonSupport.from_json(x0) for x0 in data["python"]]
        variants = [VariantAvailability.from_json(x0) for x0 in data["variants"]]
        default_index = [DefaultIndexEntry.from_json(x0) for x0 in data["default_index"]]
        patches = [TorchPatch.from_json(x0) for x0 in data["patches"]]
        return cls(
            minor=data["minor"],
            status=data.get("status", "released"),
            platforms_unsourced=data.get("platforms_unsourced", []),
            index_option=data["index_option"],
            index_option_source=data.get("index_option_source", []),
            python=python,
            variants=variants,
            default_index=default_index,
            patches=patches,
            note=data.get("note", None),
        )


class TorchReleasesFile(Frozen):
    """Mirrors schema.TorchReleasesFile."""

    __slots__ = ("schema_", "minors")
    _fields: ClassVar[Fields] = (("schema_", "schema"), ("minors", "minors"))
    schema_: Literal["torch_releases/v1"]
    minors: list[TorchMinor]

    def __init__(
        self,
        *,
        schema_: Literal["torch_releases/v1"],
        minors: list[TorchMinor],
    ) -> None:
        _set(self, "schema_", schema_)
        _set(self, "minors", minors)

    @classmethod
    def from_json(cls, data: JsonObject) -> TorchReleasesFile:
        minors = [TorchMinor.from_json(x0) for x0 in data["minors"]]
        return cls(
            schema_=data["schema"],
            minors=minors,
        )


class CudaToolkit(Row):
    """A CUDA toolkit release and the driver that shipped with it (no minor-version compatibility)."""

    __slots__ = ("version", "min_driver_linux", "min_driver_windows")
    _fields: ClassVar[Fields] = (
        ("source", "source"),
        ("note", "note"),
        ("version", "version"),
        ("min_driver_linux", "min_driver_linux"),
        ("min_driver_windows", "min_driver_windows"),
    )
    version: str
    min_driver_linux: str | None
    min_driver_windows: str | None

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        version: str,
        min_driver_linux: str | None,
        min_driver_windows: str | None,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "version", version)
        _set(self, "min_driver_linux", min_driver_linux)
        _set(self, "min_driver_windows", min_driver_windows)

    @classmethod
    def from_json(cls, data: JsonObject) -> CudaToolkit:
        return cls(
            source=data["source"],
            note=data.get("note", None),
            version=data["version"],
            min_driver_linux=data["min_driver_linux"],
            min_driver_windows=data["min_driver_windows"],
        )


class MinorVersionCompat(Row):
    """NVIDIA minor-version compatibility: CUDA ``major``.x runs on a driver >= floor (with caveats)."""

    __slots__ = ("cuda_major", "min_driver_linux", "min_driver_windows", "below_driver")
    _fields: ClassVar[Fields] = (
        ("source", "source"),
        ("note", "note"),
        ("cuda_major", "cuda_major"),
        ("min_driver_linux", "min_driver_linux"),
        ("min_driver_windows", "min_driver_windows"),
        ("below_driver", "below_driver"),
    )
    cuda_major: int
    min_driver_linux: str | None
    min_driver_windows: str | None
    below_driver: str | None

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        cuda_major: int,
        min_driver_linux: str | None,
        min_driver_windows: str | None,
        below_driver: str | None = None,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "cuda_major", cuda_major)
        _set(self, "min_driver_linux", min_driver_linux)
        _set(self, "min_driver_windows", min_driver_windows)
        _set(self, "below_driver", below_driver)

    @classmethod
    def from_json(cls, data: JsonObject) -> MinorVersionCompat:
        return cls(
            source=data["source"],
            note=data.get("note", None),
            cuda_major=data["cuda_major"],
            min_driver_linux=data["min_driver_linux"],
            min_driver_windows=data["min_driver_windows"],
            below_driver=data.get("below_driver", None),
        )


class ToolkitArchRange(Row):
    """What one CUDA toolkit's nvcc can compile SASS for (offline compilation): ``min_arch`` … ``max_arch``."""

    __slots__ = ("cuda", "min_arch", "max_arch")
    _fields: ClassVar[Fields] = (
        ("source", "source"),
        ("note", "note"),
        ("cuda", "cuda"),
        ("min_arch", "min_arch"),
        ("max_arch", "max_arch"),
    )
    cuda: str
    min_arch: str
    max_arch: str

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        cuda: str,
        min_arch: str,
        max_arch: str,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "cuda", cuda)
        _set(self, "min_arch", min_arch)
        _set(self, "max_arch", max_arch)

    @classmethod
    def from_json(cls, data: JsonObject) -> ToolkitArchRange:
        return cls(
            source=data["source"],
            note=data.get("note", None),
            cuda=data["cuda"],
            min_arch=data["min_arch"],
            max_arch=data["max_arch"],
        )


class GpuName(Row):
    """A GPU product name (as nvidia-smi / rocminfo print it, matched without case) -> its architecture."""

    __slots__ = ("name", "arch")
    _fields: ClassVar[Fields] = (("source", "source"), ("note", "note"), ("name", "name"), ("arch", "arch"))
    name: str
    arch: str

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        name: str,
        arch: str,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "name", name)
        _set(self, "arch", arch)

    @classmethod
    def from_json(cls, data: JsonObject) -> GpuName:
        return cls(
            source=data["source"],
            note=data.get("note", None),
            name=data["name"],
            arch=data["arch"],
        )


class CudaFile(Frozen):
    """Mirrors schema.CudaFile."""

    __slots__ = ("schema_", "toolkits", "minor_version_compatibility", "toolkit_archs", "gpu_names")
    _fields: ClassVar[Fields] = (
        ("schema_", "schema"),
        ("toolkits", "toolkits"),
        ("minor_version_compatibility", "minor_version_compatibility"),
        ("toolkit_archs", "toolkit_archs"),
        ("gpu_names", "gpu_names"),
    )
    schema_: Literal["cuda/v1"]
    toolkits: list[CudaToolkit]
    minor_version_compatibility: list[MinorVersionCompat]
    toolkit_archs: list[ToolkitArchRange]
    gpu_names: list[GpuName]

    def __init__(
        self,
        *,
        schema_: Literal["cuda/v1"],
        toolkits: list[CudaToolkit],
        minor_version_compatibility: list[MinorVersionCompat],
        toolkit_archs: list[ToolkitArchRange] | None = None,
        gpu_names: list[GpuName] | None = None,
    ) -> None:
        _set(self, "schema_", schema_)
        _set(self, "toolkits", toolkits)
        _set(self, "minor_version_compatibility", minor_version_compatibility)
        _set(self, "toolkit_archs", [] if toolkit_archs is None else toolkit_archs)
        _set(self, "gpu_names", [] if gpu_names is None else gpu_names)

    @classmethod
    def from_json(cls, data: JsonObject) -> CudaFile:
        toolkits = [CudaToolkit.from_json(x0) for x0 in data["toolkits"]]
        minor_version_compatibility = [MinorVersionCompat.from_json(x0) for x0 in data["minor_version_compatibility"]]
        toolkit_archs = [ToolkitArchRange.from_json(x0) for x0 in data.get("toolkit_archs", [])]
        gpu_names = [GpuName.from_json(x0) for x0 in data.get("gpu_names", [])]
        return cls(
            schema_=data["schema"],
            toolkits=toolkits,
            minor_version_compatibility=minor_version_compatibility,
            toolkit_archs=toolkit_archs,
            gpu_names=gpu_names,
        )


class ArchList(Row):
    """The GPU architectures a build variant ships kernels (and PTX) for, for a range of torch releases."""

    __slots__ = ("torch", "variant", "platforms", "archs", "ptx")
    _fields: ClassVar[Fields] = (
        ("source", "source"),
        ("note", "note"),
        ("torch", "torch"),
        ("variant", "variant"),
        ("platforms", "platforms"),
        ("archs", "archs"),
        ("ptx", "ptx"),
    )
    torch: str
    variant: str
    platforms: list[Platform]
    archs: list[str]
    ptx: str | None

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        torch: str,
        variant: str,
        platforms: list[Platform],
        archs: list[str],
        ptx: str | None = None,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "torch", torch)
        _set(self, "variant", variant)
        _set(self, "platforms", platforms)
        _set(self, "archs", archs)
        _set(self, "ptx", ptx)

    @classmethod
    def from_json(cls, data: JsonObject) -> ArchList:
        return cls(
            source=data["source"],
            note=data.get("note", None),
            torch=data["torch"],
            variant=data["variant"],
            platforms=data["platforms"],
            archs=data["archs"],
            ptx=data.get("ptx", None),
        )


class ArchSearch(Row):
    """Builds whose arch list no reachable source states: what was searched, so "unknown" is an answer."""

    __slots__ = ("torch", "variants", "platforms", "searched")
    _fields: ClassVar[Fields] = (
        ("source", "source"),
        ("note", "note"),
        ("torch", "torch"),
        ("variants", "variants"),
        ("platforms", "platforms"),
        ("searched", "searched"),
    )
    torch: str
    variants: list[str]
    platforms: list[Platform]
    searched: str

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        torch: str,
        variants: list[str],
        platforms: list[Platform],
        searched: str,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "torch", torch)
        _set(self, "variants", variants)
        _set(self, "platforms", platforms)
        _set(self, "searched", searched)

    @classmethod
    def from_json(cls, data: JsonObject) -> ArchSearch:
        return cls(
            source=data["source"],
            note=data.get("note", None),
            torch=data["torch"],
            variants=data["variants"],
            platforms=data["platforms"],
            searched=data["searched"],
        )


class GpuArchsFile(Frozen):
    """Mirrors schema.GpuArchsFile."""

    __slots__ = ("schema_", "arch_lists", "searched")
    _fields: ClassVar[Fields] = (("schema_", "schema"), ("arch_lists", "arch_lists"), ("searched", "searched"))
    schema_: Literal["gpu_archs/v1"]
    arch_lists: list[ArchList]
    searched: list[ArchSearch]

    def __init__(
        self,
        *,
        schema_: Literal["gpu_archs/v1"],
        arch_lists: list[ArchList],
        searched: list[ArchSearch] | None = None,
    ) -> None:
        _set(self, "schema_", schema_)
        _set(self, "arch_lists", arch_lists)
        _set(self, "searched", [] if searched is None else searched)

    @classmethod
    def from_json(cls, data: JsonObject) -> GpuArchsFile:
        arch_lists = [ArchList.from_json(x0) for x0 in data["arch_lists"]]
        searched = [ArchSearch.from_json(x0) for x0 in data.get("searched", [])]
        return cls(
            schema_=data["schema"],
            arch_lists=arch_lists,
            searched=searched,
        )


class RocmRelease(Row):
    """Mirrors schema.RocmRelease."""

    __slots__ = ("version", "gfx_targets", "min_driver", "amd_tested_torch")
    _fields: ClassVar[Fields] = (
        ("source", "source"),
        ("note", "note"),
        ("version", "version"),
        ("gfx_targets", "gfx_targets"),
        ("min_driver", "min_driver"),
        ("amd_tested_torch", "amd_tested_torch"),
    )
    version: str
    gfx_targets: list[str] | None
    min_driver: str | None
    amd_tested_torch: list[str] | None

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        version: str,
        gfx_targets: list[str] | None,
        min_driver: str | None = None,
        amd_tested_torch: list[str] | None = None,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "version", version)
        _set(self, "gfx_targets", gfx_targets)
        _set(self, "min_driver", min_driver)
        _set(self, "amd_tested_torch", amd_tested_torch)

    @classmethod
    def from_json(cls, data: JsonObject) -> RocmRelease:
        return cls(
            source=data["source"],
            note=data.get("note", None),
            version=data["version"],
            gfx_targets=data["gfx_targets"],
            min_driver=data.get("min_driver", None),
            amd_tested_torch=data.get("amd_tested_torch", None),
        )


class KernelUserSpace(Row):
    """AMD's user and kernel-space support matrix: the ROCm user space releases (major.minor) tested with the"""

    __slots__ = ("kmd", "user_space")
    _fields: ClassVar[Fields] = (("source", "source"), ("note", "note"), ("kmd", "kmd"), ("user_space", "user_space"))
    kmd: str
    user_space: list[str]

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        kmd: str,
        user_space: list[str],
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "kmd", kmd)
        _set(self, "user_space", user_space)

    @classmethod
    def from_json(cls, data: JsonObject) -> KernelUserSpace:
        return cls(
            source=data["source"],
            note=data.get("note", None),
            kmd=data["kmd"],
            user_space=data["user_space"],
        )


class RocmFile(Frozen):
    """Mirrors schema.RocmFile."""

    __slots__ = ("schema_", "releases", "gpu_names", "kernel_user_space")
    _fields: ClassVar[Fields] = (
        ("schema_", "schema"),
        ("releases", "releases"),
        ("gpu_names", "gpu_names"),
        ("kernel_user_space", "kernel_user_space"),
    )
    schema_: Literal["rocm/v1"]
    releases: list[RocmRelease]
    gpu_names: list[GpuName]
    kernel_user_space: list[KernelUserSpace]

    def __init__(
        self,
        *,
        schema_: Literal["rocm/v1"],
        releases: list[RocmRelease],
        gpu_names: list[GpuName] | None = None,
        kernel_user_space: list[KernelUserSpace] | None = None,
    ) -> None:
        _set(self, "schema_", schema_)
        _set(self, "releases", releases)
        _set(self, "gpu_names", [] if gpu_names is None else gpu_names)
        _set(self, "kernel_user_space", [] if kernel_user_space is None else kernel_user_space)

    @classmethod
    def from_json(cls, data: JsonObject) -> RocmFile:
        releases = [RocmRelease.from_json(x0) for x0 in data["releases"]]
        gpu_names = [GpuName.from_json(x0) for x0 in data.get("gpu_names", [])]
        kernel_user_space = [KernelUserSpace.from_json(x0) for x0 in data.get("kernel_user_space", [])]
        return cls(
            schema_=data["schema"],
            releases=releases,
            gpu_names=gpu_names,
            kernel_user_space=kernel_user_space,
        )


class XpuSupport(Row):
    """Mirrors schema.XpuSupport."""

    __slots__ = ("torch", "driver_requirement", "hardware", "binary_prerequisite", "no_companion_wheels")
    _fields: ClassVar[Fields] = (
        ("source", "source"),
        ("note", "note"),
        ("torch", "torch"),
        ("driver_requirement", "driver_requirement"),
        ("hardware", "hardware"),
        ("binary_prerequisite", "binary_prerequisite"),
        ("no_companion_wheels", "no_companion_wheels"),
    )
    torch: str
    driver_requirement: str | None
    hardware: list[str] | None
    binary_prerequisite: Literal["driver", "driver-and-support-package"] | None
    no_companion_wheels: list[Platform]

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        torch: str,
        driver_requirement: str | None,
        hardware: list[str] | None,
        binary_prerequisite: Literal["driver", "driver-and-support-package"] | None = None,
        no_companion_wheels: list[Platform] | None = None,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "torch", torch)
        _set(self, "driver_requirement", driver_requirement)
        _set(self, "hardware", hardware)
        _set(self, "binary_prerequisite", binary_prerequisite)
        _set(self, "no_companion_wheels", [] if no_companion_wheels is None else no_companion_wheels)

    @classmethod
    def from_json(cls, data: JsonObject) -> XpuSupport:
        return cls(
            source=data["source"],
            note=data.get("note", None),
            torch=data["torch"],
            driver_requirement=data["driver_requirement"],
            hardware=data["hardware"],
            binary_prerequisite=data.get("binary_prerequisite", None),
            no_companion_wheels=data.get("no_companion_wheels", []),
        )


class XpuFile(Frozen):
    """Mirrors schema.XpuFile."""

    __slots__ = ("schema_", "support", "gpu_names")
    _fields: ClassVar[Fields] = (("schema_", "schema"), ("support", "support"), ("gpu_names", "gpu_names"))
    schema_: Literal["xpu/v1"]
    support: list[XpuSupport]
    gpu_names: list[GpuName]

    def __init__(
        self,
        *,
        schema_: Literal["xpu/v1"],
        support: list[XpuSupport],
        gpu_names: list[GpuName] | None = None,
    ) -> None:
        _set(self, "schema_", schema_)
        _set(self, "support", support)
        _set(self, "gpu_names", [] if gpu_names is None else gpu_names)

    @classmethod
    def from_json(cls, data: JsonObject) -> XpuFile:
        support = [XpuSupport.from_json(x0) for x0 in data["support"]]
        gpu_names = [GpuName.from_json(x0) for x0 in data.get("gpu_names", [])]
        return cls(
            schema_=data["schema"],
            support=support,
            gpu_names=gpu_names,
        )


class MpsSupport(Row):
    """Mirrors schema.MpsSupport."""

    __slots__ = ("torch", "min_macos")
    _fields: ClassVar[Fields] = (("source", "source"), ("note", "note"), ("torch", "torch"), ("min_macos", "min_macos"))
    torch: str
    min_macos: str | None

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        torch: str,
        min_macos: str | None,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "torch", torch)
        _set(self, "min_macos", min_macos)

    @classmethod
    def from_json(cls, data: JsonObject) -> MpsSupport:
        return cls(
            source=data["source"],
            note=data.get("note", None),
            torch=data["torch"],
            min_macos=data["min_macos"],
        )


class MpsFile(Frozen):
    """Mirrors schema.MpsFile."""

    __slots__ = ("schema_", "support")
    _fields: ClassVar[Fields] = (("schema_", "schema"), ("support", "support"))
    schema_: Literal["mps/v1"]
    support: list[MpsSupport]

    def __init__(
        self,
        *,
        schema_: Literal["mps/v1"],
        support: list[MpsSupport],
    ) -> None:
        _set(self, "schema_", schema_)
        _set(self, "support", support)

    @classmethod
    def from_json(cls, data: JsonObject) -> MpsFile:
        support = [MpsSupport.from_json(x0) for x0 in data["support"]]
        return cls(
            schema_=data["schema"],
            support=support,
        )


class WheelFloor(Row):
    """The platform tag of builds whose wheel files the package-index layer does not record (the"""

    __slots__ = ("torch", "variants", "platforms", "platform_tag")
    _fields: ClassVar[Fields] = (
        ("source", "source"),
        ("note", "note"),
        ("torch", "torch"),
        ("variants", "variants"),
        ("platforms", "platforms"),
        ("platform_tag", "platform_tag"),
    )
    torch: str
    variants: list[str]
    platforms: list[Platform]
    platform_tag: str

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        torch: str,
        variants: list[str],
        platforms: list[Platform],
        platform_tag: str,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "torch", torch)
        _set(self, "variants", variants)
        _set(self, "platforms", platforms)
        _set(self, "platform_tag", platform_tag)

    @classmethod
    def from_json(cls, data: JsonObject) -> WheelFloor:
        return cls(
            source=data["source"],
            note=data.get("note", None),
            torch=data["torch"],
            variants=data["variants"],
            platforms=data["platforms"],
            platform_tag=data["platform_tag"],
        )


class CapabilityFloor(Row):
    """A part of a CUDA build that needs a newer GPU than the build's own kernels: the cuDNN it bundles, the"""

    __slots__ = ("torch", "component", "min_arch", "platforms", "effect", "variants")
    _fields: ClassVar[Fields] = (
        ("source", "source"),
        ("note", "note"),
        ("torch", "torch"),
        ("component", "component"),
        ("min_arch", "min_arch"),
        ("platforms", "platforms"),
        ("effect", "effect"),
        ("variants", "variants"),
    )
    torch: str
    component: str
    min_arch: str
    platforms: list[Platform]
    effect: str
    variants: list[str] | None

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        torch: str,
        component: str,
        min_arch: str,
        platforms: list[Platform],
        effect: str,
        variants: list[str] | None = None,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "torch", torch)
        _set(self, "component", component)
        _set(self, "min_arch", min_arch)
        _set(self, "platforms", platforms)
        _set(self, "effect", effect)
        _set(self, "variants", variants)

    @classmethod
    def from_json(cls, data: JsonObject) -> CapabilityFloor:
        return cls(
            source=data["source"],
            note=data.get("note", None),
            torch=data["torch"],
            component=data["component"],
            min_arch=data["min_arch"],
            platforms=data["platforms"],
            effect=data["effect"],
            variants=data.get("variants", None),
        )


class RuntimeFloor(Row):
    """What a release's binaries ask of the host's C library where their wheel tag asks less (torch up to 2.6"""

    __slots__ = ("torch", "platforms", "glibc")
    _fields: ClassVar[Fields] = (
        ("source", "source"),
        ("note", "note"),
        ("torch", "torch"),
        ("platforms", "platforms"),
        ("glibc", "glibc"),
    )
    torch: str
    platforms: list[Platform]
    glibc: str

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        torch: str,
        platforms: list[Platform],
        glibc: str,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "torch", torch)
        _set(self, "platforms", platforms)
        _set(self, "glibc", glibc)

    @classmethod
    def from_json(cls, data: JsonObject) -> RuntimeFloor:
        return cls(
            source=data["source"],
            note=data.get("note", None),
            torch=data["torch"],
            platforms=data["platforms"],
            glibc=data["glibc"],
        )


class HostRulesFile(Frozen):
    """Mirrors schema.HostRulesFile."""

    __slots__ = ("schema_", "wheel_floors", "capability_floors", "runtime_floors")
    _fields: ClassVar[Fields] = (
        ("schema_", "schema"),
        ("wheel_floors", "wheel_floors"),
        ("capability_floors", "capability_floors"),
        ("runtime_floors", "runtime_floors"),
    )
    schema_: Literal["host_rules/v1"]
    wheel_floors: list[WheelFloor]
    capability_floors: list[CapabilityFloor]
    runtime_floors: list[RuntimeFloor]

    def __init__(
        self,
        *,
        schema_: Literal["host_rules/v1"],
        wheel_floors: list[WheelFloor] | None = None,
        capability_floors: list[CapabilityFloor] | None = None,
        runtime_floors: list[RuntimeFloor] | None = None,
    ) -> None:
        _set(self, "schema_", schema_)
        _set(self, "wheel_floors", [] if wheel_floors is None else wheel_floors)
        _set(self, "capability_floors", [] if capability_floors is None else capability_floors)
        _set(self, "runtime_floors", [] if runtime_floors is None else runtime_floors)

    @classmethod
    def from_json(cls, data: JsonObject) -> HostRulesFile:
        wheel_floors = [WheelFloor.from_json(x0) for x0 in data.get("wheel_floors", [])]
        capability_floors = [CapabilityFloor.from_json(x0) for x0 in data.get("capability_floors", [])]
        runtime_floors = [RuntimeFloor.from_json(x0) for x0 in data.get("runtime_floors", [])]
        return cls(
            schema_=data["schema"],
            wheel_floors=wheel_floors,
            capability_floors=capability_floors,
            runtime_floors=runtime_floors,
        )


class KnownBadCompanion(Frozen):
    """A package installed beside torch (a companion or a ``--with`` package) and the releases the rule names."""

    __slots__ = ("name", "version")
    _fields: ClassVar[Fields] = (("name", "name"), ("version", "version"))
    name: str
    version: str

    def __init__(
        self,
        *,
        name: str,
        version: str = "",
    ) -> None:
        _set(self, "name", name)
        _set(self, "version", version)

    @classmethod
    def from_json(cls, data: JsonObject) -> KnownBadCompanion:
        return cls(
            name=data["name"],
            version=data.get("version", ""),
        )


class KnownBadRule(Row):
    """A combination a cited source shows to break (a build with a regression, a companion that breaks a torch,"""

    __slots__ = (
        "id",
        "torch",
        "severity",
        "effect",
        "families",
        "variants",
        "platforms",
        "python",
        "python_version",
        "gpu_archs",
        "min_gpu_arch",
        "driver",
        "macos",
        "companion",
    )
    _fields: ClassVar[Fields] = (
        ("source", "source"),
        ("note", "note"),
        ("id", "id"),
        ("torch", "torch"),
        ("severity", "severity"),
        ("effect", "effect"),
        ("families", "families"),
        ("variants", "variants"),
        ("platforms", "platforms"),
        ("python", "python"),
        ("python_version", "python_version"),
        ("gpu_archs", "gpu_archs"),
        ("min_gpu_arch", "min_gpu_arch"),
        ("driver", "driver"),
        ("macos", "macos"),
        ("companion", "companion"),
    )
    id: str
    torch: str
    severity: Literal["never", "caveat"]
    effect: str
    families: list[Literal["cpu", "cuda", "rocm", "xpu", "mps", "npu", "mlu"]] | None
    variants: list[str] | None
    platforms: list[Platform] | None
    python: list[str] | None
    python_version: str | None
    gpu_archs: list[str] | None
    min_gpu_arch: str | None
    driver: str | None
    macos: str | None
    companion: KnownBadCompanion | None

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        id: str,
        torch: str,
        severity: Literal["never", "caveat"],
        effect: str,
        families: list[Literal["cpu", "cuda", "rocm", "xpu", "mps", "npu", "mlu"]] | None = None,
        variants: list[str] | None = None,
        platforms: list[Platform] | None = None,
        python: list[str] | None = None,
        python_version: str | None = None,
        gpu_archs: list[str] | None = None,
        min_gpu_arch: str | None = None,
        driver: str | None = None,
        macos: str | None = None,
        companion: KnownBadCompanion | None = None,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "id", id)
        _set(self, "torch", torch)
        _set(self, "severity", severity)
        _set(self, "effect", effect)
        _set(self, "families", families)
        _set(self, "variants", variants)
        _set(self, "platforms", platforms)
        _set(self, "python", python)
        _set(self, "python_version", python_version)
        _set(self, "gpu_archs", gpu_archs)
        _set(self, "min_gpu_arch", min_gpu_arch)
        _set(self, "driver", driver)
        _set(self, "macos", macos)
        _set(self, "companion", companion)

    @classmethod
    def from_json(cls, data: JsonObject) -> KnownBadRule:
        companion = data.get("companion", None)
        if companion is not None:
            companion = KnownBadCompanion.from_json(companion)
        return cls(
            source=data["source"],
            note=data.get("note", None),
            id=data["id"],
            torch=data["torch"],
            severity=data["severity"],
            effect=data["effect"],
            families=data.get("families", None),
            variants=data.get("variants", None),
            platforms=data.get("platforms", None),
            python=data.get("python", None),
            python_version=data.get("python_version", None),
            gpu_archs=data.get("gpu_archs", None),
            min_gpu_arch=data.get("min_gpu_arch", None),
            driver=data.get("driver", None),
            macos=data.get("macos", None),
            companion=companion,
        )


class KnownBadFile(Frozen):
    """Mirrors schema.KnownBadFile."""

    __slots__ = ("schema_", "rules")
    _fields: ClassVar[Fields] = (("schema_", "schema"), ("rules", "rules"))
    schema_: Literal["known_bad/v1"]
    rules: list[KnownBadRule]

    def __init__(
        self,
        *,
        schema_: Literal["known_bad/v1"],
        rules: list[KnownBadRule],
    ) -> None:
        _set(self, "schema_", schema_)
        _set(self, "rules", rules)

    @classmethod
    def from_json(cls, data: JsonObject) -> KnownBadFile:
        rules = [KnownBadRule.from_json(x0) for x0 in data["rules"]]
        return cls(
            schema_=data["schema"],
            rules=rules,
        )


class JetpackRelease(Row):
    """One JetPack release: its L4T (Jetson Linux) version, CUDA, the Jetson GPUs it runs on and the driver"""

    __slots__ = ("jetpack", "l4t", "cuda", "archs", "driver")
    _fields: ClassVar[Fields] = (
        ("source", "source"),
        ("note", "note"),
        ("jetpack", "jetpack"),
        ("l4t", "l4t"),
        ("cuda", "cuda"),
        ("archs", "archs"),
        ("driver", "driver"),
    )
    jetpack: str
    l4t: str | None
    cuda: str | None
    archs: list[str]
    driver: str | None

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        jetpack: str,
        l4t: str | None,
        cuda: str | None,
        archs: list[str],
        driver: str | None = None,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "jetpack", jetpack)
        _set(self, "l4t", l4t)
        _set(self, "cuda", cuda)
        _set(self, "archs", archs)
        _set(self, "driver", driver)

    @classmethod
    def from_json(cls, data: JsonObject) -> JetpackRelease:
        return cls(
            source=data["source"],
            note=data.get("note", None),
            jetpack=data["jetpack"],
            l4t=data["l4t"],
            cuda=data["cuda"],
            archs=data["archs"],
            driver=data.get("driver", None),
        )


class JetsonWheel(Row):
    """One of NVIDIA's PyTorch wheels for Jetson: the torch release it is, the JetPack releases it is published"""

    __slots__ = ("torch", "wheel_version", "jetpack", "python", "url")
    _fields: ClassVar[Fields] = (
        ("source", "source"),
        ("note", "note"),
        ("torch", "torch"),
        ("wheel_version", "wheel_version"),
        ("jetpack", "jetpack"),
        ("python", "python"),
        ("url", "url"),
    )
    torch: str
    wheel_version: str | None
    jetpack: list[str]
    python: list[str]
    url: str | None

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        torch: str,
        wheel_version: str | None,
        jetpack: list[str],
        python: list[str],
        url: str | None = None,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "torch", torch)
        _set(self, "wheel_version", wheel_version)
        _set(self, "jetpack", jetpack)
        _set(self, "python", python)
        _set(self, "url", url)

    @classmethod
    def from_json(cls, data: JsonObject) -> JetsonWheel:
        return cls(
            source=data["source"],
            note=data.get("note", None),
            torch=data["torch"],
            wheel_version=data["wheel_version"],
            jetpack=data["jetpack"],
            python=data["python"],
            url=data.get("url", None),
        )


class SbsaJetson(Row):
    """A Jetson module whose JetPack runs PyTorch's SBSA linux-aarch64 CUDA builds (Thor on JetPack 7): answered"""

    __slots__ = ("arch", "module")
    _fields: ClassVar[Fields] = (("source", "source"), ("note", "note"), ("arch", "arch"), ("module", "module"))
    arch: str
    module: str

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        arch: str,
        module: str,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "arch", arch)
        _set(self, "module", module)

    @classmethod
    def from_json(cls, data: JsonObject) -> SbsaJetson:
        return cls(
            source=data["source"],
            note=data.get("note", None),
            arch=data["arch"],
            module=data["module"],
        )


class JetsonFile(Frozen):
    """Mirrors schema.JetsonFile."""

    __slots__ = ("schema_", "releases", "wheels", "sbsa_modules")
    _fields: ClassVar[Fields] = (
        ("schema_", "schema"),
        ("releases", "releases"),
        ("wheels", "wheels"),
        ("sbsa_modules", "sbsa_modules"),
    )
    schema_: Literal["jetson/v1"]
    releases: list[JetpackRelease]
    wheels: list[JetsonWheel]
    sbsa_modules: list[SbsaJetson]

    def __init__(
        self,
        *,
        schema_: Literal["jetson/v1"],
        releases: list[JetpackRelease],
        wheels: list[JetsonWheel],
        sbsa_modules: list[SbsaJetson] | None = None,
    ) -> None:
        _set(self, "schema_", schema_)
        _set(self, "releases", releases)
        _set(self, "wheels", wheels)
        _set(self, "sbsa_modules", [] if sbsa_modules is None else sbsa_modules)

    @classmethod
    def from_json(cls, data: JsonObject) -> JetsonFile:
        releases = [JetpackRelease.from_json(x0) for x0 in data["releases"]]
        wheels = [JetsonWheel.from_json(x0) for x0 in data["wheels"]]
        sbsa_modules = [SbsaJetson.from_json(x0) for x0 in data.get("sbsa_modules", [])]
        return cls(
            schema_=data["schema"],
            releases=releases,
            wheels=wheels,
            sbsa_modules=sbsa_modules,
        )


class AscendNpuRow(Row):
    """torch_npu <-> torch <-> CANN <-> Python, as Ascend documents it (CPU torch plus the plugin)."""

    __slots__ = (
        "torch_npu",
        "torch",
        "cann",
        "python",
        "branch",
        "status",
        "python_by_platform",
        "torch_requirement",
        "index_overrides",
    )
    _fields: ClassVar[Fields] = (
        ("source", "source"),
        ("note", "note"),
        ("torch_npu", "torch_npu"),
        ("torch", "torch"),
        ("cann", "cann"),
        ("python", "python"),
        ("branch", "branch"),
        ("status", "status"),
        ("python_by_platform", "python_by_platform"),
        ("torch_requirement", "torch_requirement"),
        ("index_overrides", "index_overrides"),
    )
    torch_npu: str
    torch: str
    cann: str | None
    python: list[str] | None
    branch: str | None
    status: Literal["active", "maintained", "eol"] | None
    python_by_platform: dict[Platform, list[str]] | None
    torch_requirement: dict[Platform, str] | None
    index_overrides: list[IndexOverride]

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        torch_npu: str,
        torch: str,
        cann: str | None,
        python: list[str] | None,
        branch: str | None = None,
        status: Literal["active", "maintained", "eol"] | None = None,
        python_by_platform: dict[Platform, list[str]] | None = None,
        torch_requirement: dict[Platform, str] | None = None,
        index_overrides: list[IndexOverride] | None = None,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "torch_npu", torch_npu)
        _set(self, "torch", torch)
        _set(self, "cann", cann)
        _set(self, "python", python)
        _set(self, "branch", branch)
        _set(self, "status", status)
        _set(self, "python_by_platform", python_by_platform)
        _set(self, "torch_requirement", torch_requirement)
        _set(self, "index_overrides", [] if index_overrides is None else index_overrides)

    @classmethod
    def from_json(cls, data: JsonObject) -> AscendNpuRow:
        index_overrides = [IndexOverride.from_json(x0) for x0 in data.get("index_overrides", [])]
        return cls(
            source=data["source"],
            note=data.get("note", None),
            torch_npu=data["torch_npu"],
            torch=data["torch"],
            cann=data["cann"],
            python=data["python"],
            branch=data.get("branch", None),
            status=data.get("status", None),
            python_by_platform=data.get("python_by_platform", None),
            torch_requirement=data.get("torch_requirement", None),
            index_overrides=index_overrides,
        )


class CambriconMluRow(Row):
    """torch_mlu <-> torch <-> Cambricon toolkit (CTR) <-> driver, as Cambricon documents it."""

    __slots__ = ("torch_mlu", "torch", "toolkit", "driver", "python")
    _fields: ClassVar[Fields] = (
        ("source", "source"),
        ("note", "note"),
        ("torch_mlu", "torch_mlu"),
        ("torch", "torch"),
        ("toolkit", "toolkit"),
        ("driver", "driver"),
        ("python", "python"),
    )
    torch_mlu: str
    torch: str
    toolkit: str | None
    driver: str | None
    python: list[str] | None

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        torch_mlu: str,
        torch: str,
        toolkit: str | None,
        driver: str | None,
        python: list[str] | None,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "torch_mlu", torch_mlu)
        _set(self, "torch", torch)
        _set(self, "toolkit", toolkit)
        _set(self, "driver", driver)
        _set(self, "python", python)

    @classmethod
    def from_json(cls, data: JsonObject) -> CambriconMluRow:
        return cls(
            source=data["source"],
            note=data.get("note", None),
            torch_mlu=data["torch_mlu"],
            torch=data["torch"],
            toolkit=data["toolkit"],
            driver=data["driver"],
            python=data["python"],
        )


class VendorInstall(Row):
    """Where a vendor's plugin runs and how its companions install (one per vendor, keyed like install_notes)."""

    __slots__ = ("platforms", "companions_no_deps")
    _fields: ClassVar[Fields] = (
        ("source", "source"),
        ("note", "note"),
        ("platforms", "platforms"),
        ("companions_no_deps", "companions_no_deps"),
    )
    platforms: list[Platform]
    companions_no_deps: bool

    def __init__(
        self,
        *,
        source: list[str],
        note: str | None = None,
        platforms: list[Platform],
        companions_no_deps: bool = False,
    ) -> None:
        _set(self, "source", source)
        _set(self, "note", note)
        _set(self, "platforms", platforms)
        _set(self, "companions_no_deps", companions_no_deps)

    @classmethod
    def from_json(cls, data: JsonObject) -> VendorInstall:
        return cls(
            source=data["source"],
            note=data.get("note", None),
            platforms=data["platforms"],
            companions_no_deps=data.get("companions_no_deps", False),
        )


class VendorFile(Frozen):
    """Mirrors schema.VendorFile."""

    __slots__ = ("schema_", "ascend_npu", "cambricon_mlu", "install_notes", "installs")
    _fields: ClassVar[Fields] = (
        ("schema_", "schema"),
        ("ascend_npu", "ascend_npu"),
        ("cambricon_mlu", "cambricon_mlu"),
        ("install_notes", "install_notes"),
        ("installs", "installs"),
    )
    schema_: Literal["vendor_backends/v1"]
    ascend_npu: list[AscendNpuRow]
    cambricon_mlu: list[CambriconMluRow]
    install_notes: dict[str, str]
    installs: dict[str, VendorInstall]

    def __init__(
        self,
        *,
        schema_: Literal["vendor_backends/v1"],
        ascend_npu: list[AscendNpuRow],
        cambricon_mlu: list[CambriconMluRow],
        install_notes: dict[str, str] | None = None,
        installs: dict[str, VendorInstall] | None = None,
    ) -> None:
        _set(self, "schema_", schema_)
        _set(self, "ascend_npu", ascend_npu)
        _set(self, "cambricon_mlu", cambricon_mlu)
        _set(self, "install_notes", {} if install_notes is None else install_notes)
        _set(self, "installs", {} if installs is None else installs)

    @classmethod
    def from_json(cls, data: JsonObject) -> VendorFile:
        ascend_npu = [AscendNpuRow.from_json(x0) for x0 in data["ascend_npu"]]
        cambricon_mlu = [CambriconMluRow.from_json(x0) for x0 in data["cambricon_mlu"]]
        installs = {k0: VendorInstall.from_json(x0) for k0, x0 in data.get("installs", {}).items()}
        return cls(
            schema_=data["schema"],
            ascend_npu=ascend_npu,
            cambricon_mlu=cambricon_mlu,
            install_notes=data.get("install_notes", {}),
            installs=installs,
        )


class MatrixTables(Frozen):
    """The whole matrix, one table per file (schema.MatrixData)."""

    __slots__ = (
        "sources",
        "build_variants",
        "torch_releases",
        "cuda",
        "gpu_archs",
        "rocm",
        "xpu",
        "mps",
        "vendor_backends",
        "host_rules",
        "jetson",
        "known_bad",
    )
    _fields: ClassVar[Fields] = (
        ("sources", "sources"),
        ("build_variants", "build_variants"),
        ("torch_releases", "torch_releases"),
        ("cuda", "cuda"),
        ("gpu_archs", "gpu_archs"),
        ("rocm", "rocm"),
        ("xpu", "xpu"),
        ("mps", "mps"),
        ("vendor_backends", "vendor_backends"),
        ("host_rules", "host_rules"),
        ("jetson", "jetson"),
        ("known_bad", "known_bad"),
    )
    sources: SourcesFile
    build_variants: BuildVariantsFile
    torch_releases: TorchReleasesFile
    cuda: CudaFile
    gpu_archs: GpuArchsFile
    rocm: RocmFile
    xpu: XpuFile
    mps: MpsFile
    vendor_backends: VendorFile
    host_rules: HostRulesFile
    jetson: JetsonFile
    known_bad: KnownBadFile

    def __init__(
        self,
        *,
        sources: SourcesFile,
        build_variants: BuildVariantsFile,
        torch_releases: TorchReleasesFile,
        cuda: CudaFile,
        gpu_archs: GpuArchsFile,
        rocm: RocmFile,
        xpu: XpuFile,
        mps: MpsFile,
        vendor_backends: VendorFile,
        host_rules: HostRulesFile,
        jetson: JetsonFile,
        known_bad: KnownBadFile,
    ) -> None:
        _set(self, "sources", sources)
        _set(self, "build_variants", build_variants)
        _set(self, "torch_releases", torch_releases)
        _set(self, "cuda", cuda)
        _set(self, "gpu_archs", gpu_archs)
        _set(self, "rocm", rocm)
        _set(self, "xpu", xpu)
        _set(self, "mps", mps)
        _set(self, "vendor_backends", vendor_backends)
        _set(self, "host_rules", host_rules)
        _set(self, "jetson", jetson)
        _set(self, "known_bad", known_bad)

    @classmethod
    def from_json(cls, data: JsonObject) -> MatrixTables:
        sources = SourcesFile.from_json(data["sources"])
        build_variants = BuildVariantsFile.from_json(data["build_variants"])
        torch_releases = TorchReleasesFile.from_json(data["torch_releases"])
        cuda = CudaFile.from_json(data["cuda"])
        gpu_archs = GpuArchsFile.from_json(data["gpu_archs"])
        rocm = RocmFile.from_json(data["rocm"])
        xpu = XpuFile.from_json(data["xpu"])
        mps = MpsFile.from_json(data["mps"])
        vendor_backends = VendorFile.from_json(data["vendor_backends"])
        host_rules = HostRulesFile.from_json(data["host_rules"])
        jetson = JetsonFile.from_json(data["jetson"])
        known_bad = KnownBadFile.from_json(data["known_bad"])
        return cls(
            sources=sources,
            build_variants=build_variants,
            torch_releases=torch_releases,
            cuda=cuda,
            gpu_archs=gpu_archs,
            rocm=rocm,
            xpu=xpu,
            mps=mps,
            vendor_backends=vendor_backends,
            host_rules=host_rules,
            jetson=jetson,
            known_bad=known_bad,
        )
