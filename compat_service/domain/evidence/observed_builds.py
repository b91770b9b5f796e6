"""Facts of a build learned from probe reports: the GPU archs a CUDA or ROCm build was compiled for.

A probe's ``detect`` group records the installed build's compiled arch list (``environment.extra.arch_list``:
``torch._C._cuda_getArchFlags()``, which answers without a GPU, so a CPU-only runner with the build installed
reports it), its CUDA / HIP runtime, cuDNN (MIOpen) and NCCL (RCCL) versions. One build is (torch release,
build label, platform). Reports about a build *agree* when they state the same arch list; agreeing reports make
one observed fact whose sources are their report ids. Reports that disagree make no fact: which list is right is
not for the service to guess (``ObservedFacts.conflicts`` names them).

Precedence where the fact is read (``InMemoryMatrix.arch_list``): a curated gpu_archs.yaml row first, then an
observed fact, then unknown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import cast

from compat_service.domain.backends import PLATFORMS, Platform, label_family, normalise_arch
from compat_service.domain.evidence.report import ProbeReport
from compat_service.domain.matrix.model.rows import ArchList

#: what one entry of a compiled arch list may be: sm_90, sm_90a, compute_120, gfx942 (a ":xnack-" feature is cut)
_ARCH_RE = re.compile(r"^(sm_\d+[af]?|compute_\d+[af]?|gfx[0-9a-f]+)$")
#: how many report ids an observed fact keeps as its sources (the newest ones; the count is kept whole)
MAX_SOURCES = 20


@dataclass(frozen=True)
class BuildObservation:
    """What one report says about its build."""

    report_id: str
    torch: str
    variant: str
    platform: str
    arch_flags: tuple[str, ...]
    runtime: str | None = None
    cudnn: str | None = None
    nccl: str | None = None


def _text(value: object) -> str | None:
    return str(value) if value not in (None, "") else None


def observation_of(report: ProbeReport) -> BuildObservation | None:
    """The build facts ``report`` states, or None when it states no usable arch list for a CUDA/ROCm build."""
    env = report.environment
    label = (env.torch_build or "").strip()
    if label_family(label) not in ("cuda", "rocm"):
        return None
    flags = _arch_flags(env.extra.get("arch_list"))
    if flags is None:
        return None
    platform = f"{env.os}-{normalise_arch(env.os, env.arch)}"
    if platform not in PLATFORMS:
        return None
    public = env.torch_version.strip().split("+", 1)[0]
    runtime = env.extra.get("hip_build") if label.startswith("rocm") else env.extra.get("cuda_build")
    return BuildObservation(
        report_id=str(report.report_id),
        torch=public,
        variant=label,
        platform=platform,
        arch_flags=tuple(dict.fromkeys(flags)),
        runtime=_text(runtime),
        cudnn=_text(env.extra.get("cudnn_version")),
        nccl=_text(env.extra.get("nccl_version")),
    )


def _arch_flags(raw: object) -> list[str] | None:
    """The arch names of a report's ``arch_list`` (``sm_90``, ``compute_90``, ``gfx942:xnack-`` -> ``gfx942``);
    None unless it is a list of at most 64 arch names."""
    if not isinstance(raw, list) or not raw or len(raw) > 64:
        return None
    flags = []
    for item in raw:
        if not isinstance(item, str):
            return None
        name = item.strip().split(":", 1)[0]
        if not _ARCH_RE.match(name):
            return None
        flags.append(name)
    return flags


def _arch_number(name: str) -> int:
    return int("".join(ch for ch in name if ch.isdigit()) or 0)


def _arch_key(name: str) -> tuple[int, int, str]:
    """sm_/compute_ by number, then gfx targets by their hex number (gfx900 < gfx90a < gfx942 < gfx1030)."""
    if name.startswith("gfx"):
        return 1, int(name[3:], 16), name
    return 0, _arch_number(name), name


def _canonical(flags: tuple[str, ...]) -> tuple[str, ...]:
    """An arch list as a set in one order, so two reports listing it differently still agree."""
    return tuple(sorted(set(flags), key=_arch_key))


@dataclass(frozen=True)
class ObservedBuild:
    """An arch list agreeing reports state for one build; ``report_ids`` are its sources."""

    torch: str
    variant: str
    platform: str
    arch_flags: tuple[str, ...]
    report_ids: tuple[str, ...]
    reports: int
    runtime: str | None = None
    cudnn: str | None = None
    nccl: str | None = None

    def as_arch_list(self) -> ArchList:
        """The fact as a gpu_archs row (cubins / gfx targets, and the newest PTX), cited by report id."""
        archs = [a for a in self.arch_flags if not a.startswith("compute_")]
        ptx_from = [a for a in self.arch_flags if a.startswith("compute_")]
        ptx = "sm_" + max(ptx_from, key=_arch_number)[len("compute_") :] if ptx_from else None
        extras = self._extras()
        note = f"observed: {self.reports} agreeing probe report(s) of torch {self.torch}+{self.variant}"
        return ArchList(
            torch=f"=={self.torch}",
            variant=self.variant,
            platforms=[cast(Platform, self.platform)],  # one of PLATFORMS: observation_of keeps no other
            archs=archs or list(self.arch_flags),
            ptx=ptx,
            source=[f"report:{rid}" for rid in self.report_ids],
            note=f"{note} ({extras})" if extras else note,
        )


    def _extras(self) -> str:
        """The runtime, cuDNN and NCCL the reports state, for the row's note."""
        named = (("runtime", self.runtime), ("cuDNN", self.cudnn), ("NCCL", self.nccl))
        return ", ".join(f"{name} {value}" for name, value in named if value)


@dataclass(frozen=True)
class ObservedFacts:
    builds: dict[tuple[str, str, str], ObservedBuild] = field(default_factory=dict)
    #: builds whose reports state different arch lists: (torch, variant, platform) -> the distinct lists
    conflicts: dict[tuple[str, str, str], tuple[tuple[str, ...], ...]] = field(default_factory=dict)


def agreeing_builds(observations: Iterable[BuildObservation]) -> ObservedFacts:
    """Group observations by build; a build whose reports all state one arch list becomes a fact.

    Observations are taken newest first (the order the caller gives), so the report ids kept are the newest.
    """
    grouped: dict[tuple[str, str, str], list[BuildObservation]] = {}
    for obs in observations:
        grouped.setdefault((obs.torch, obs.variant, obs.platform), []).append(obs)
    builds: dict[tuple[str, str, str], ObservedBuild] = {}
    conflicts: dict[tuple[str, str, str], tuple[tuple[str, ...], ...]] = {}
    for key, group in grouped.items():
        lists = tuple(dict.fromkeys(_canonical(o.arch_flags) for o in group))
        if len(lists) > 1:
            conflicts[key] = lists
            continue
        first = group[0]
        builds[key] = ObservedBuild(
            torch=key[0], variant=key[1], platform=key[2], arch_flags=lists[0],
            report_ids=tuple(o.report_id for o in group[:MAX_SOURCES]), reports=len(group),
            runtime=first.runtime, cudnn=first.cudnn, nccl=first.nccl,
        )
    return ObservedFacts(builds, conflicts)
