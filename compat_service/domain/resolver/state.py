"""What moves between the resolver's stages: a surviving candidate build, or where a patch dropped out.

`ResolverState` is the explicit state of one resolution; the stages (stages.py), the answer (answer.py) and
the explanation (explanation.py) are plain functions over it. `STAGES` is in order: a failure is reported
at the furthest stage any patch reached.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from compat_service.domain.evidence.lookup import EvidenceLookup
    from compat_service.domain.evidence.steering import EvidenceSteering
    from compat_service.domain.hardware_rules import ArchVerdict, DriverRule
    from compat_service.domain.matrix.interface import Matrix
    from compat_service.domain.matrix.rows import (
        AscendNpuRow,
        BuildVariant,
        CambriconMluRow,
        TorchMinor,
        TorchPatch,
        VariantAvailability,
    )
    from compat_service.domain.resolver.request import ResolveRequest

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

    def __init__(self, matrix: Matrix, request: ResolveRequest, evidence: EvidenceLookup | None) -> None:
        self.m = matrix
        self.r = request
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
        self.wheel_skips: list[tuple[str, Any]] = []
        if evidence is not None:
            # imported only with evidence: it pulls the error models (pydantic), off the fast path
            from compat_service.domain.evidence.steering import EvidenceSteering

            self.steering = EvidenceSteering(
                evidence, os=request.os, arch=request.arch, require_verified=request.require_verified
            )


@dataclass
class Candidate:
    """One variant of one patch that passed the stages so far."""

    label: str
    variant_row: VariantAvailability
    build_row: BuildVariant
    arch: ArchVerdict | None = None
    floor: DriverRule | None = None
    plugin_row: AscendNpuRow | CambriconMluRow | None = None
    #: what the build's fit to --runtime rests on when the matrix does not say (None: known, or no --runtime)
    runtime_unknown: str | None = None
    #: what the answer says about the known-bad rules that hold or may hold for this build (known_bad.py)
    known_bad: list[str] = field(default_factory=list)


@dataclass
class Dropout:
    """Where one patch dropped out, and what the message needs to say about it."""

    stage: int
    minor: TorchMinor
    patch: TorchPatch
    info: dict[str, Any] = field(default_factory=dict)
