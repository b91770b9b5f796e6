"""What moves between the resolver's stages: a surviving candidate build, or where a patch dropped out.

`ResolverState` is the explicit state of one resolution; the stages (stages.py), the answer (answer.py) and
the explanation (explanation.py) are plain functions over it. `STAGES` is in order: a failure is reported
at the furthest stage any patch reached.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from compat_service.domain.record import Record

if TYPE_CHECKING:
    from compat_service.domain.evidence.lookup import EvidenceLookup
    from compat_service.domain.evidence.steering import EvidenceSteering
    from compat_service.domain.hardware_rules import ArchVerdict, DriverRule
    from compat_service.domain.matrix.interface import Matrix
    from compat_service.domain.matrix.model.rows import (
        AscendNpuRow,
        BuildVariant,
        CambriconMluRow,
        KnownBadRule,
        TorchMinor,
        TorchPatch,
        VariantAvailability,
        XpuSupport,
    )
    from compat_service.domain.resolver.request import ResolveRequest
    from compat_service.domain.resolver.wheel_tags import Blocked

STAGES = (
    "platform",
    "python",
    "wheels",
    "backend",
    "plugin",
    "runtime",
    "gpu_arch",
    "driver",
    "companions",
    "known_bad",
)
STAGE = {name: index for index, name in enumerate(STAGES)}


class ResolverState:
    """What every part of one resolution reads: the matrix, the request, the family asked for, warnings."""

    __slots__ = (
        "matrix", "request", "evidence", "family", "warnings", "unknowns", "arch_refused", "steering", "skipped",
        "wheel_skips",
    )

    def __init__(self, matrix: Matrix, request: ResolveRequest, evidence: EvidenceLookup | None) -> None:
        self.matrix = matrix
        self.request = request
        self.evidence = evidence
        self.family = request.backend.family or "cpu"
        self.warnings: list[str] = []
        #: the deciding facts the answer rests on that the matrix does not have (Resolution.unknowns)
        self.unknowns: list[str] = []
        #: (build label, patch) -> a newer patch's known "no" for --gpu-arch that an older unknown list inherits (None:
        #: nothing to inherit); filled on the first unknown list of that label
        self.arch_refused: dict[tuple[str, str], ArchVerdict | None] = {}
        self.steering: EvidenceSteering | None = None
        #: (patch, why) for each patch passed over before the answer, newest first (the answer names them)
        self.skipped: list[tuple[str, str]] = []
        #: (patch, the first wheel that does not install on the target) for each patch passed over for it
        self.wheel_skips: list[tuple[str, Blocked]] = []
        if evidence is not None:
            # imported only with evidence: it pulls the error models (pydantic), off the fast path
            from compat_service.domain.evidence.steering import EvidenceSteering

            self.steering = EvidenceSteering(
                evidence, os=request.os, arch=request.arch, require_verified=request.require_verified
            )


class Candidate(Record):
    """One variant of one patch that passed the stages so far."""

    __slots__ = ("label", "variant_row", "build_row", "arch", "floor", "plugin_row", "runtime_unknown", "known_bad")
    label: str
    variant_row: VariantAvailability
    build_row: BuildVariant
    arch: ArchVerdict | None
    floor: DriverRule | None
    plugin_row: AscendNpuRow | CambriconMluRow | None
    #: what the build's fit to --runtime rests on when the matrix does not say (None: known, or no --runtime)
    runtime_unknown: str | None
    #: what the answer says about the known-bad rules that hold or may hold for this build (known_bad.py)
    known_bad: list[str]

    def __init__(self, label: str, variant_row: VariantAvailability, build_row: BuildVariant) -> None:
        self.label = label
        self.variant_row = variant_row
        self.build_row = build_row
        self.arch = None
        self.floor = None
        self.plugin_row = None
        self.runtime_unknown = None
        self.known_bad = []


class Trial(Record):
    """One patch going through the stages (stages.STAGE_CHECKS): what the stages so far chose for it."""

    __slots__ = ("minor", "patch", "on_platform", "pythons", "python", "candidates")
    minor: TorchMinor
    patch: TorchPatch
    #: the variants the patch publishes for the request's platform (the platform stage)
    on_platform: tuple[VariantAvailability, ...]
    #: the Pythons it has wheels for there, oldest first, and the one chosen (the Python and wheels stages)
    pythons: list[str]
    python: str
    #: the builds still standing (the wheels stage takes the ones the backend request admits)
    candidates: list[Candidate]

    def __init__(self, minor: TorchMinor, patch: TorchPatch) -> None:
        self.minor = minor
        self.patch = patch
        self.on_platform = ()
        self.pythons = []
        self.python = ""
        self.candidates = []


# What each stage says when it refuses a patch, one record per stage (what its explanation reads).


class PlatformRefusal(Record):
    __slots__ = ("platforms",)
    #: the platforms the patch publishes wheels for
    platforms: list[str]

    def __init__(self, platforms: list[str]) -> None:
        self.platforms = platforms


class PythonRefusal(Record):
    __slots__ = ("pythons",)
    #: the Pythons the patch has wheels for on the platform, oldest first
    pythons: list[str]

    def __init__(self, pythons: list[str]) -> None:
        self.pythons = pythons


class WheelsRefusal(Record):
    __slots__ = ("blocked",)
    #: the pinned wheels (or each build's wheel) that do not install on the target
    blocked: list[Blocked]

    def __init__(self, blocked: list[Blocked]) -> None:
        self.blocked = blocked


class BackendRefusal(Record):
    __slots__ = ("labels",)
    #: the build labels the patch publishes for the platform
    labels: list[str]

    def __init__(self, labels: list[str]) -> None:
        self.labels = labels


class PluginRefusal(Record):
    """No vendor plugin row for the patch and Python."""

    __slots__ = ()


class RuntimeRefusal(Record):
    __slots__ = ("offered",)
    #: (build label or plugin version, the runtime it needs; None = unknown)
    offered: list[tuple[str, str | None]]

    def __init__(self, offered: list[tuple[str, str | None]]) -> None:
        self.offered = offered


class GpuArchRefusal(Record):
    __slots__ = ("verdicts",)
    #: (build label, its coverage of --gpu-arch)
    verdicts: list[tuple[str, ArchVerdict]]

    def __init__(self, verdicts: list[tuple[str, ArchVerdict]]) -> None:
        self.verdicts = verdicts


class DriverRefusal(Record):
    __slots__ = ("floors",)
    #: (build label, its driver floor) for each build the floor refuses
    floors: list[tuple[str, DriverRule]]

    def __init__(self, floors: list[tuple[str, DriverRule]]) -> None:
        self.floors = floors


class CompanionsRefusal(Record):
    __slots__ = ("missing", "unpublished")
    #: the --with companions the matrix has no version of (or the xpu index publishes no wheels of)
    missing: list[str]
    #: the xpu.yaml row that says its index publishes no companion wheels for the patch on the platform
    unpublished: XpuSupport | None

    def __init__(self, missing: list[str], unpublished: XpuSupport | None = None) -> None:
        self.missing = missing
        self.unpublished = unpublished


class KnownBadRefusal(Record):
    __slots__ = ("refused",)
    #: (build, the known_bad.yaml ``never`` rule that passes over it)
    refused: list[tuple[Candidate, KnownBadRule]]

    def __init__(self, refused: list[tuple[Candidate, KnownBadRule]]) -> None:
        self.refused = refused


Refusal = (
    PlatformRefusal
    | PythonRefusal
    | WheelsRefusal
    | BackendRefusal
    | PluginRefusal
    | RuntimeRefusal
    | GpuArchRefusal
    | DriverRefusal
    | CompanionsRefusal
    | KnownBadRefusal
)


class Dropout(Record):
    """Where one patch dropped out (an index into `STAGES`), and what the stage said."""

    __slots__ = ("stage", "minor", "patch", "info")
    stage: int
    minor: TorchMinor
    patch: TorchPatch
    info: Refusal

    def __init__(self, stage: int, minor: TorchMinor, patch: TorchPatch, info: Refusal) -> None:
        self.stage = stage
        self.minor = minor
        self.patch = patch
        self.info = info
