"""`accelenv doctor`: check the torch installed on a host against the matrix and the evidence.

Pure: the caller gathers the facts (host detection, installed package versions) and passes them in. Each
problem is a :class:`Finding` with the fix; the fix command comes from the resolver asked about this host,
so doctor and `accelenv resolve` never disagree.

Checks, in order: torch installed and known to the matrix; the build fits the host's accelerator (a CPU
build on a GPU host, a CUDA build on an AMD host); the GPU architecture has kernels in the build; the
driver meets the build's floor; the companions are the versions paired with this torch, from the same
build; the evidence does not mark the combination broken (or partial).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from compat_service.domain.backends import FAMILIES_FOR_HOST_BACKEND, is_build_label, label_family
from compat_service.domain.evidence.lookup import EvidenceLookup
from compat_service.domain.hardware_rules import MVC_LIMITS, DriverRule, arch_coverage, driver_rule
from compat_service.domain.host import HostFacts
from compat_service.domain.matrix.interface import Matrix
from compat_service.domain.matrix.model.rows import TorchMinor, TorchPatch
from compat_service.domain.resolver.request import COMPANIONS
from compat_service.domain.versions import cached_version

Severity = Literal["error", "warning", "ok"]


@dataclass(frozen=True)
class Finding:
    check: str
    severity: Severity
    message: str
    fix: str | None = None


@dataclass(frozen=True)
class Installed:
    """Versions as installed (``2.13.0+cu126``); None = not installed."""

    torch: str | None
    companions: dict[str, str | None] = field(default_factory=dict)


@dataclass
class Diagnosis:
    torch_version: str | None
    build: str | None
    findings: list[Finding]

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)


#: the command that installs what a check asks for (None: none known)
_Fix = Callable[[str | None], str | None]


@dataclass(frozen=True)
class _Context:
    """What every check reads."""

    installed: Installed
    host: HostFacts
    matrix: Matrix
    patch: TorchPatch
    build: str | None
    platform: str
    evidence: EvidenceLookup | None
    fix: Callable[[str | None], str | None]

    def fields(self) -> tuple[Installed, HostFacts, Matrix, TorchPatch, str | None, str, EvidenceLookup | None, _Fix]:
        return (self.installed, self.host, self.matrix, self.patch, self.build, self.platform, self.evidence,
                self.fix)


def split_local(version: str) -> tuple[str, str | None]:
    public, _, local = version.partition("+")
    return public, local or None


def _patch(matrix: Matrix, version: str) -> tuple[TorchMinor, TorchPatch] | tuple[None, None]:
    for minor in matrix.torch_minors():
        for patch in matrix.torch_patches(minor):
            if patch.version == version:
                return minor, patch
    return None, None


def installed_build(matrix: Matrix, minor: TorchMinor, local: str | None, platform: str) -> str | None:
    """The build label of an installed torch: its local tag, else what the default index serves."""
    if local is not None and is_build_label(local):
        return local
    default = next((d for d in minor.default_index if d.platform == platform), None)
    return default.label if default is not None else None


def diagnose(
    installed: Installed,
    host: HostFacts,
    matrix: Matrix,
    *,
    evidence: EvidenceLookup | None = None,
    fix_command: Callable[[str | None], str | None] | None = None,
) -> Diagnosis:
    """``fix_command(torch_version) -> str | None``: the install command the resolver gives for this host."""
    fix = fix_command or (lambda _version: None)
    platform = f"{host.os}-{host.arch}"
    if installed.torch is None:
        return Diagnosis(None, None, [Finding("torch", "error", "torch is not installed in this environment",
                                              fix(None) or "run `accelenv resolve` and install what it prints")])
    version, local = split_local(installed.torch)
    minor, patch = _patch(matrix, version)
    if minor is None or patch is None:
        return Diagnosis(version, local, [Finding(
            "torch", "warning", f"torch {installed.torch} is not in the matrix: nothing to check it against",
            "update accelenv (a newer matrix), or install a release the matrix lists (`accelenv resolve`)")])
    build = installed_build(matrix, minor, local, platform)
    findings = [Finding("torch", "ok", f"torch {installed.torch} ({build or 'unknown build'}) is in the matrix")]
    context = _Context(installed, host, matrix, patch, build, platform, evidence, fix)
    for check in (_build_fits, _gpu_arch, _driver, _companions, _evidence):
        findings.extend(check(context))
    return Diagnosis(version, build, findings)


def _build_fits(c: _Context) -> list[Finding]:
    installed, host, matrix, patch, build, platform, evidence, fix = c.fields()
    family = label_family(build) if build else None
    wanted = FAMILIES_FOR_HOST_BACKEND.get(host.backend, ())
    if family is None or host.backend == "cpu" or family in wanted:
        return [Finding("build", "ok", f"the {build or 'installed'} build can drive this host's {host.backend}")]
    gpu = f" ({host.gpu_name})" if host.gpu_name else ""
    return [Finding(
        "build", "error",
        f"torch {installed.torch} is a {family} build ({build}), but this host's accelerator is {host.backend}{gpu}: "
        f"torch will not use it",
        fix(patch.version) or f"install a {host.backend} build of torch {patch.version} (`accelenv resolve`)",
    )]


def _gpu_arch(c: _Context) -> list[Finding]:
    installed, host, matrix, patch, build, platform, evidence, fix = c.fields()
    if not (build and host.gpu_arch and label_family(build) in ("cuda", "rocm")):
        return []
    row = matrix.build_variant(build)
    runtime = row.runtime if row else None
    verdict = arch_coverage(matrix, patch.version, build, runtime, platform, host.gpu_arch)
    if verdict.coverage == "no":
        return [Finding(
            "gpu-arch", "error",
            f"torch {installed.torch} ships no kernels for {host.gpu_arch} ({verdict.shipped}): expect "
            "\"no kernel image is available for execution on the device\"",
            fix(patch.version) or "install a build whose arch list covers this GPU (`accelenv resolve`)",
        )]
    if verdict.coverage == "unknown":
        unchecked = f"the matrix has no arch list for {build}: could not check {host.gpu_arch}"
        return [Finding("gpu-arch", "warning", unchecked)]
    return [Finding("gpu-arch", "ok", f"{build} runs on {host.gpu_arch} ({verdict.coverage})")]


def _driver(c: _Context) -> list[Finding]:
    installed, host, matrix, patch, build, platform, evidence, fix = c.fields()
    if not (build and label_family(build) == "cuda" and host.backend == "cuda"):
        return []
    variant = matrix.build_variant(build)
    runtime = variant.runtime if variant else None
    coverage = _known_coverage(c, build, runtime)
    # the one driver rule (hardware_rules): the CUDA major's minor-version floor when the GPU has SASS in
    # the build, the toolkit's own floor for PTX
    floor = driver_rule(matrix, runtime, variant.runtime_full if variant else None, host.os, coverage)
    if floor.version is None:
        return [Finding("driver", "warning", f"the matrix has no {host.os} driver minimum for {build}")]
    if host.driver is None:
        return [Finding("driver", "warning", f"{build} needs an NVIDIA driver >= {floor.version}; the driver "
                        "version could not be read", "set ACCELENV_DRIVER_VERSION or install nvidia-smi")]
    if cached_version(host.driver) < cached_version(floor.version):
        return [_driver_too_old(host.driver, build, floor.version, fix(patch.version))]
    if (floor.toolkit_floor and cached_version(host.driver) < cached_version(floor.toolkit_floor)
            and floor.rule == "minor-version-compat"):
        return [_below_own_floor(host.driver, build, floor, runtime)]
    return [Finding("driver", "ok", f"driver {host.driver} meets {build}'s minimum {floor.version}")]


def _driver_too_old(driver: str, build: str, needed: str, fix: str | None) -> Finding:
    return Finding(
        "driver", "error",
        f"the NVIDIA driver {driver} is older than {needed}, the minimum for {build}",
        f"upgrade the driver to >= {needed}, or install a build for an older CUDA: "
        + (fix or "`accelenv resolve --driver " + driver + "`"),
    )


def _known_coverage(c: _Context, build: str, runtime: str | None) -> str | None:
    """How the build covers the host's GPU (None: no GPU architecture, or the matrix does not know)."""
    if not c.host.gpu_arch:
        return None
    coverage = arch_coverage(c.matrix, c.patch.version, build, runtime, c.platform, c.host.gpu_arch).coverage
    return None if coverage == "unknown" else coverage


def _below_own_floor(driver: str, build: str, floor: DriverRule, runtime: str | None) -> Finding:
    return Finding(
        "driver", "warning",
        f"driver {driver} runs {build} by NVIDIA's minor-version compatibility (>= {floor.version}), "
        f"below CUDA {floor.toolkit.version if floor.toolkit else runtime}'s own floor {floor.toolkit_floor}: "
        + MVC_LIMITS,
        f"upgrade the driver to >= {floor.toolkit_floor} for PTX JIT and torch.compile, or set TRITON_PTXAS_PATH",
    )


def _companions(c: _Context) -> list[Finding]:
    installed, host, matrix, patch, build, platform, evidence, fix = c.fields()
    found = []
    torch_local = split_local(installed.torch or "")[1]
    for name in COMPANIONS:
        have = installed.companions.get(name)
        want = getattr(patch, name).version
        if have is None or want is None:
            continue
        public, local = split_local(have)
        if public != want:
            found.append(Finding(
                name, "error", f"{name} {have} does not pair with torch {patch.version} (the pair is {want})",
                f"pip install {name}=={want} from the same index as torch",
            ))
        elif local != torch_local and local is not None and torch_local is not None:
            found.append(Finding(
                name, "error", f"{name} {have} is a {local} build but torch is {torch_local}",
                f"reinstall {name}=={want} from the {torch_local} index",
            ))
        else:
            found.append(Finding(name, "ok", f"{name} {have} pairs with torch {patch.version}"))
    return found


def _evidence(c: _Context) -> list[Finding]:
    installed, host, matrix, patch, build, platform, evidence, fix = c.fields()
    if evidence is None or build is None:
        return []
    python = host.python
    cell = evidence.status_for(patch.version, build, python, host.os, host.arch)
    if cell is None or cell.status == "declared":
        return [Finding("evidence", "ok", f"no probe reports mark torch {patch.version} {build} (Python {python}) "
                        "as failing")]
    detail = f" ({cell.detail})" if cell.detail else ""
    if cell.status == "broken":
        cell_name = f"torch {patch.version} {build} on Python {python} {platform}"
        return [Finding("evidence", "error", f"probe reports mark {cell_name} as broken{detail}",
                        fix(None) or "install another combination: `accelenv resolve --database URL`")]
    if cell.status == "partial":
        return [Finding("evidence", "warning",
                        f"probe reports mark torch {patch.version} {build} as partial{detail}")]
    return [Finding("evidence", "ok", f"torch {patch.version} {build} is verified{detail}")]
