"""Evidence: the cell a probe report belongs to, the declared cells of the matrix, and the public shapes.

The **evidence cell key** (docs/architecture.md) is everything that decides compatibility, taken from a
report's ``environment``: torch version without its local tag, build label, Python minor (``3.13t`` for
free-threaded), OS, arch, backend, runtime version, driver version and device architecture.

A **declared cell** is what the matrix publishes: torch patch × build label × Python × platform. An evidence
cell belongs to a declared cell when those four agree and its backend is a device type that build drives
(``backends.DEVICE_TYPES_BY_FAMILY``). Everything else is *observed*: the refdev reference backend, a
nightly, a build the matrix does not list. The status rules themselves live in ``status``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Iterator

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from compat_service.domain.backends import (
    DEVICE_TYPES_BY_FAMILY,
    PLATFORMS,
    PLUGINS,
    is_build_label,
    label_family,
    normalise_arch,
)
from compat_service.domain.errors import Cause, ReportInvalidError
from compat_service.domain.evidence.report import CHECK_STATUSES, Environment
from compat_service.domain.evidence.status import CellStatus, Health
from compat_service.domain.json_types import JsonObject
from compat_service.domain.matrix.model.rows import MatrixTables, PythonSupport, VariantAvailability

#: PrivateUse1 vendor backends the matrix declares through its vendor tables (plugin on a CPU torch)
VENDOR_BACKEND_TABLES: dict[str, str] = {family: plugin.table for family, plugin in PLUGINS.items()}
_PYTHON_RE = re.compile(r"^(\d+)\.(\d+)")


class CellKey(BaseModel):
    """The evidence cell key; ``None`` means the report did not know."""

    model_config = ConfigDict(frozen=True)

    # the lengths of the evidence_cell columns: checked after normalising (lower-casing can lengthen a
    # string: "İ" becomes two characters), the same on every database
    torch_version: str = Field(min_length=1, max_length=64)
    torch_build: str | None = Field(default=None, max_length=32)
    python: str = Field(min_length=1, max_length=32)
    os: str = Field(max_length=16)
    arch: str = Field(min_length=1, max_length=32)
    backend: str = Field(min_length=1, max_length=32)
    runtime_version: str | None = Field(default=None, max_length=64)
    driver_version: str | None = Field(default=None, max_length=64)
    device_arch: str | None = Field(default=None, max_length=64)

    @property
    def platform(self) -> str:
        return f"{self.os}-{self.arch}"

    def digest(self) -> str:
        """A stable hash of the key: the unique column the database upserts on (NULLs compare equal)."""
        return hashlib.sha256(json.dumps(list(self.model_dump().values())).encode()).hexdigest()


def accelerator_backends(label: str) -> frozenset[str]:
    """Device types whose evidence speaks for a build as an accelerator install: the CPU backend only
    for CPU builds (a CPU run of a CUDA build says nothing about its GPU kernels)."""
    family = label_family(label)
    types = DEVICE_TYPES_BY_FAMILY.get(family or "", frozenset())
    return types if family == "cpu" else types - {"cpu"}


def python_minor(version: str) -> str:
    """'3.11.7' -> '3.11'; '3.13.1t' -> '3.13t' (free-threaded)."""
    match = _PYTHON_RE.match(version.strip())
    if not match:
        return version.strip()
    return f"{match[1]}.{match[2]}" + ("t" if version.strip().endswith("t") else "")


def _blank_to_none(value: str | None) -> str | None:
    return (value.strip() or None) if value is not None else None


#: the report field each cell-key part comes from
KEY_SOURCE_FIELDS = {"python": "python_version"}


def cell_key_of(env: Environment) -> CellKey:
    """The evidence cell a report belongs to; ReportInvalidError when a part, once normalised, is empty or
    longer than the store keeps."""
    public, _, local = env.torch_version.strip().partition("+")
    build = _blank_to_none(env.torch_build)
    if build is None and is_build_label(local):
        build = local
    try:
        return _key_of(env, public, build)
    except ValidationError as exc:
        raise ReportInvalidError(
            "the report's environment does not make a valid evidence cell key",
            hint="send the environment `accelenv probe` detects; parts are compared after normalising "
            "(lower-case backend and arch, torch version without its local tag)",
            causes=[
                Cause(
                    constraint=f"{err['msg']} (after normalising)",
                    origin="report environment." + KEY_SOURCE_FIELDS.get(str(err["loc"][0]), str(err["loc"][0])),
                    detail=f"{err['input']!r}"[:120],
                )
                for err in exc.errors(include_url=False)
            ],
        ) from None


def _key_of(env: Environment, public: str, build: str | None) -> CellKey:
    return CellKey(
        torch_version=public,
        torch_build=build,
        python=python_minor(env.python_version),
        os=env.os,
        arch=normalise_arch(env.os, env.arch),
        backend=env.backend.strip().lower(),
        runtime_version=_blank_to_none(env.runtime_version),
        driver_version=_blank_to_none(env.driver_version),
        device_arch=_blank_to_none(env.device_arch),
    )


# --------------------------------------------------------------------------- declared cells


class DeclaredCell(BaseModel):
    model_config = ConfigDict(frozen=True)

    torch_version: str
    torch_build: str
    python: str
    platform: str

    @property
    def os(self) -> str:
        return self.platform.split("-", 1)[0]

    @property
    def arch(self) -> str:
        return self.platform.split("-", 1)[1]


def iter_declared_cells(data: MatrixTables) -> Iterator[DeclaredCell]:
    """torch patch × build label × Python × platform, as torch_releases.yaml publishes them."""
    for minor in data.torch_releases.minors:
        for patch in minor.patches:
            pythons = patch.python_override if patch.python_override is not None else minor.python
            for variant in minor.variants:
                if variant.patches is None or patch.version in variant.patches:
                    yield from _variant_cells(patch.version, variant, pythons)


def _variant_cells(
    version: str, variant: VariantAvailability, pythons: list[PythonSupport]
) -> Iterator[DeclaredCell]:
    """One build of one patch: each Python it lists on each platform the build publishes."""
    for support in pythons:
        allowed = set(support.platforms) if support.platforms is not None else set(PLATFORMS)
        for platform in variant.platforms:
            if platform not in allowed:
                continue
            for py in support.versions:
                yield DeclaredCell(torch_version=version, torch_build=variant.label, python=py, platform=platform)


class DeclaredMatrix:
    """Answers "does the matrix list this evidence cell?" and enumerates the declared cells."""

    def __init__(self, data: MatrixTables) -> None:
        self._cells = list(dict.fromkeys(iter_declared_cells(data)))
        self._set = frozenset(self._cells)
        self._family = {v.label: v.family for v in data.build_variants.variants}
        self._vendor = {
            backend: getattr(data.vendor_backends, table) for backend, table in VENDOR_BACKEND_TABLES.items()
        }

    @property
    def cells(self) -> list[DeclaredCell]:
        return self._cells

    def declared_cell_of(self, key: CellKey) -> DeclaredCell | None:
        """The declared cell an evidence cell belongs to, or None when it is observed only."""
        if key.torch_build is None:
            return None
        cell = DeclaredCell(
            torch_version=key.torch_version, torch_build=key.torch_build, python=key.python,
            platform=key.platform,
        )
        if cell not in self._set:
            return None
        if key.backend in VENDOR_BACKEND_TABLES:
            return cell if self._vendor_lists(key) else None
        family = self._family.get(key.torch_build)
        if family is None or key.backend not in DEVICE_TYPES_BY_FAMILY.get(family, frozenset()):
            return None
        return cell

    def _vendor_lists(self, key: CellKey) -> bool:
        for row in self._vendor[key.backend]:
            if row.torch == key.torch_version and (row.python is None or key.python in row.python):
                return True
        return False


# --------------------------------------------------------------------------- public shapes


class CheckCounts(BaseModel):
    passed: int = 0
    failed: int = 0
    unsupported: int = 0
    skipped: int = 0
    timeout: int = 0
    crashed: int = 0
    error: int = 0

    @property
    def bad(self) -> int:
        return self.failed + self.timeout + self.crashed + self.error

    def add(self, other: CheckCounts) -> CheckCounts:
        return CheckCounts(**{s: getattr(self, s) + getattr(other, s) for s in CHECK_STATUSES})


class CheckEvidence(BaseModel):
    id: str
    group: str
    counts: CheckCounts
    #: the aten op a failing check names (from the check's data), e.g. 'aten::mm'
    aten_op: str | None = None
    last_failure: str | None = None


class FailingCheck(BaseModel):
    id: str
    group: str
    aten_op: str | None = None
    #: reports in which the check was failing (bad, or unsupported in a gap group)
    bad: int
    last_failure: str | None = None


class CellEvidence(BaseModel):
    """Evidence of one cell (GET /v1/evidence)."""

    key: CellKey
    declared: bool
    status: CellStatus
    health: Health
    reports: int
    hosts: int
    passing_hosts: int
    #: distinct tokens that submitted reports / a passing report (see the trust model, docs/service.md)
    submitters: int = 0
    passing_submitters: int = 0
    first_seen: dt.datetime | None
    last_seen: dt.datetime | None
    #: the perf headline of the cell's newest report that measured it (``domain.evidence.perf``), or None
    perf: list[JsonObject] | None = None
    counts: CheckCounts = Field(description="check results by status, over all reports")
    failing_checks: list[FailingCheck]
    checks: list[CheckEvidence] = Field(default_factory=list)
    recent_report_ids: list[str] = Field(default_factory=list)


class MatrixCell(BaseModel):
    """One row of GET /v1/matrix: a declared cell with the evidence of one of its evidence cells, a
    declared cell with no evidence, or an observed cell."""

    torch_version: str
    torch_build: str | None
    python: str
    os: str
    arch: str
    declared: bool
    status: CellStatus
    health: Health
    backend: str | None = None
    runtime_version: str | None = None
    driver_version: str | None = None
    device_arch: str | None = None
    reports: int = 0
    hosts: int = 0
    passing_hosts: int = 0
    submitters: int = 0
    passing_submitters: int = 0
    first_seen: dt.datetime | None = None
    last_seen: dt.datetime | None = None
    #: the perf headline of the newest report that measured it (``domain.evidence.perf``), or None
    perf: list[JsonObject] | None = None
    failing_checks: list[str] = Field(default_factory=list)
    #: the wheel family of ``torch_build`` (cpu, cuda, rocm, xpu); GET /v1/matrix's ``family`` filter
    family: str | None = None
    #: the CUDA/ROCm version ``torch_build`` stands for (cu121 -> 12.1; null for cpu/xpu or unknown), for
    #: declared cells too; ``runtime_version`` is what a probe report saw
    build_runtime: str | None = None


class IngestResult(BaseModel):
    report_id: str
    created: bool
    key: CellKey
