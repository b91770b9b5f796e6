"""Turn the winning candidate into a `Resolution`: pins, index, host requirements, reasons, warnings."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from compat_service.domain.backends import PLUGIN_FAMILIES, PLUGINS, RUNTIME_COLUMNS, RUNTIME_NAMES
from compat_service.domain.hardware_rules import (
    MVC_LIMITS,
    MVC_LIMITS_SHORT,
    MVC_LIMITS_SOURCES,
    describe_archs,
)
from compat_service.domain.json_types import JsonObject
from compat_service.domain.matrix.memo import MatrixMemo
from compat_service.domain.matrix.model.rows import AscendNpuRow, CambriconMluRow
from compat_service.domain.record import Record
from compat_service.domain.resolver.resolution import HostRequirement, Pin, Reason, Resolution
from compat_service.domain.resolver.state import Candidate, ResolverState
from compat_service.domain.resolver.vendor_rules import rocm_fit_reason, xpu_prerequisites
from compat_service.domain.resolver.wheel_tags import describes_host, floor_needed, full_python, host_words
from compat_service.domain.versions import cached_version

if TYPE_CHECKING:
    from compat_service.domain.backends import Platform
    from compat_service.domain.hardware_rules import DriverRule
    from compat_service.domain.matrix.model.rows import DefaultIndexEntry, TorchMinor, TorchPatch
    from compat_service.domain.resolver.wheel_tags import TagFloor


#: (patch, Python, platform, label, family, backend kind, no --python, arch defaulted) -> the answer's head:
#: what depends only on matrix rows and bounded request fields, the same for every request that lands there
_HEADS: MatrixMemo[tuple[str, str, str, str, str, str, bool, bool], tuple[tuple[Reason, ...], tuple[str, ...]]] = (
    MatrixMemo("answer_heads")
)
#: (patch, Python, platform, label, family, companions, plugin row's position in its table) -> the answer's tail
_TAILS: MatrixMemo[tuple[str, str, str, str, str, tuple[str, ...], int | None], _Tail] = MatrixMemo("answer_tails")
#: (patch, label, platform, --gpu-arch the matrix names or None, coverage) -> the driver stage's (reasons,
#: warnings, requirements) for a request without --driver
_DRIVER_NOTES: MatrixMemo[
    tuple[str, str, str, str | None, str | None],
    tuple[tuple[Reason, ...], tuple[str, ...], tuple[HostRequirement, ...]],
] = MatrixMemo("driver_notes")


def build_resolution(
    state: ResolverState, minor: TorchMinor, patch: TorchPatch, python: str, c: Candidate
) -> Resolution:
    r = state.request
    version = patch.version
    reasons: list[Reason] = [Reason("torch", _torch_detail(state, version), tuple(patch.release_date_source))]
    warnings = state.warnings
    # What depends only on matrix rows and bounded request fields is built once per matrix: the same
    # sentences for every request that lands on this (patch, Python, build, platform).
    head = _cached_head(state, minor, patch, python, c)
    reasons.extend(head[0])
    warnings.extend(head[1])

    requirements: list[HostRequirement] = []
    if c.arch is not None:
        _arch_reason(state, c, reasons, warnings)
    if state.family == "cuda" and r.gpu_arch is not None and r.gpu_arch.startswith("sm_"):
        _capability_floors(state, version, c.label, warnings)
    warnings.extend(line for line in c.known_bad if line not in warnings)
    if state.family == "cuda":
        _driver_notes(state, version, c, reasons, warnings, requirements)
    _family_notes(state, version, c, reasons, warnings, requirements)
    _platform_notes(state, patch, python, c, reasons, requirements)
    if r.runtime is not None:
        _runtime_reason(state, c, reasons)

    tail = _cached_tail(state, minor, patch, python, c)
    reasons.extend(tail.reasons)
    warnings.extend(tail.warnings)
    evidence = _evidence(state, version, c.label, python, reasons)
    return Resolution(
        torch_version=version,
        backend=c.label,
        family=state.family,
        python=python,
        os=r.os,
        arch=r.arch,
        packages=tail.packages,
        index_url=tail.index_url,
        index_option=tail.index_option,
        default_index_has_variant=tail.on_default,
        requirements=tuple(requirements),
        reasons=tuple(reasons),
        warnings=tuple(warnings),
        evidence=evidence,
        unknowns=tuple(state.unknowns),
        no_deps=tail.no_deps,
    )


def _torch_detail(state: ResolverState, version: str) -> str:
    """The torch reason: the patch chosen, and the newer ones skipped (six named)."""
    here = cached_version(version)
    skipped = [(v, why) for v, why in state.skipped if cached_version(v) > here]
    detail = f"torch {version}: newest patch matching --torch {state.request.torch.text} that meets every constraint"
    if skipped:
        detail += "; skipped newer: " + ", ".join(f"{v} ({why})" for v, why in skipped[:6])
        if len(skipped) > 6:
            detail += f" and {len(skipped) - 6} more"
    return detail


def _cached_head(
    state: ResolverState, minor: TorchMinor, patch: TorchPatch, python: str, c: Candidate
) -> tuple[tuple[Reason, ...], tuple[str, ...]]:
    r = state.request
    heads = _HEADS.table(state.matrix)
    key = (
        patch.version, python, r.platform, c.label, state.family, r.backend.kind, r.python is None, r.arch_defaulted,
    )
    head = heads.get(key)
    if head is None:
        head = heads[key] = _head(state, minor, patch, python, c)
    return head


def _cached_tail(state: ResolverState, minor: TorchMinor, patch: TorchPatch, python: str, c: Candidate) -> _Tail:
    r = state.request
    tails = _TAILS.table(state.matrix)
    key = (patch.version, python, r.platform, c.label, state.family, r.with_, _plugin_position(state, c))
    tail = tails.get(key)
    if tail is None:
        tail = tails[key] = _tail(state, minor, patch, python, c)
    return tail


def _plugin_position(state: ResolverState, c: Candidate) -> int | None:
    """Where the candidate's plugin row sits in its matrix table (the first equal row: equal rows give equal
    answers); None without a plugin."""
    if c.plugin_row is None:
        return None
    return list(getattr(state.matrix, PLUGINS[state.family].table)()).index(c.plugin_row)


def _head(
    state: ResolverState, minor: TorchMinor, patch: TorchPatch, python: str, c: Candidate
) -> tuple[tuple[Reason, ...], tuple[str, ...]]:
    """The Python and build reasons, and the warnings about the release's data and the chosen Python."""
    r = state.request
    version = patch.version
    warnings = _head_warnings(state, minor, version, python)
    py_sources = tuple(
        dict.fromkeys(
            s
            for e in (patch.python_override if patch.python_override is not None else minor.python)
            for s in e.source
        )
    )
    build = c.build_row
    runtime = f" {build.runtime}" if build.runtime else ""
    variant_detail = f"{c.label} ({build.family}{runtime}) is published for {r.platform}"
    if r.backend.kind == "family":
        variant_detail = (
            f"{c.label}: the newest {state.family} build of torch {version} that fits; " + variant_detail
        )
    reasons = (
        Reason("python", f"torch {version} publishes wheels for Python {python} on {r.platform}", py_sources),
        Reason("variant", variant_detail, tuple(c.variant_row.source) + tuple(build.source)),
    )
    return reasons, tuple(warnings)


def _head_warnings(state: ResolverState, minor: TorchMinor, version: str, python: str) -> list[str]:
    """The warnings about the release's data and what the resolver chose for the request."""
    r = state.request
    warnings: list[str] = []
    if minor.status != "released":
        warnings.append(
            f"the matrix holds partial data for torch {minor.minor} ({minor.note or 'status: partial'})"
        )
    if r.python is None:
        warnings.append(f"no --python given: chose Python {python}, the newest torch {version} supports")
    if r.arch_defaulted and r.os == "macos":
        warnings.append("no --arch given for macOS: chose Apple silicon (arm64); give --arch x86_64 for an Intel Mac")
    return warnings


class _Tail(Record):
    """The index decision, the pins and what follows from them (the answer's second half)."""

    __slots__ = ("reasons", "warnings", "packages", "index_url", "index_option", "on_default", "no_deps")
    reasons: tuple[Reason, ...]
    warnings: tuple[str, ...]
    packages: tuple[Pin, ...]
    index_url: str | None
    index_option: str
    on_default: bool
    no_deps: tuple[str, ...]

    def __init__(
        self,
        reasons: tuple[Reason, ...],
        warnings: tuple[str, ...],
        packages: tuple[Pin, ...],
        index_url: str | None,
        index_option: str,
        on_default: bool,
        no_deps: tuple[str, ...],
    ) -> None:
        self.reasons = reasons
        self.warnings = warnings
        self.packages = packages
        self.index_url = index_url
        self.index_option = index_option
        self.on_default = on_default
        self.no_deps = no_deps


def _tail(state: ResolverState, minor: TorchMinor, patch: TorchPatch, python: str, c: Candidate) -> _Tail:
    r = state.request
    reasons: list[Reason] = []
    warnings: list[str] = []
    index_url, index_option, on_default = _index_choice(state, minor, c, reasons, warnings)
    # The official commands of --extra-index-url releases pin local versions (1.13.1+cu117): without
    # the tag pip may take the default index's build, whose version sorts equal.
    local = f"+{c.label}" if index_url and index_option == "--extra-index-url" else ""
    index_option = _plugin_index_option(state, c, index_url, index_option, reasons)
    torch_pin, npu_row = _torch_pin(state, c, patch.version + local, reasons)
    packages = [Pin("torch", torch_pin, index_url)]
    for name in r.with_:
        row = getattr(patch, name)
        packages.append(Pin(name, row.version + local, index_url))
        reasons.append(
            Reason(name, f"{name} {row.version} pairs with torch {patch.version}", tuple(row.source))
        )
    if npu_row is not None:
        packages.append(Pin("torch-npu", npu_row.torch_npu, None))
    if on_default:
        _triton_reason(state, patch, python, reasons)  # the requirement read is the default wheel's
    return _Tail(
        tuple(reasons), tuple(warnings), tuple(packages), index_url, index_option, on_default, _no_deps(state)
    )


def _index_choice(
    state: ResolverState, minor: TorchMinor, c: Candidate, reasons: list[Reason], warnings: list[str]
) -> tuple[str | None, str, bool]:
    """The index the build comes from (None: the default index serves it), the release's index option, and
    whether the default index serves it."""
    r = state.request
    build = c.build_row
    default = next((d for d in minor.default_index if d.platform == r.platform), None)
    on_default = default is not None and default.label == c.label
    index_url = None if on_default else build.index_url
    if default is None or default.label is None:
        warnings.append(f"the matrix does not say which build the default index serves for {r.platform}")
    reasons.append(_index_reason(r.platform, default, c, on_default))
    if minor.index_option is None and index_url:
        warnings.append(
            f"the matrix does not record the index option torch {minor.minor} used; assuming --index-url"
        )
    return index_url, minor.index_option or "--index-url", on_default


def _index_reason(platform: str, default: DefaultIndexEntry | None, c: Candidate, on_default: bool) -> Reason:
    build = c.build_row
    served = default.label if default and default.label else "an unknown build"
    return Reason(
        "index",
        f"the default index serves {served} for {platform}: "
        + ("no index option needed" if on_default else f"{c.label} comes from {build.index_url}"),
        tuple(default.source) if default is not None else tuple(build.source),
    )


def _plugin_index_option(
    state: ResolverState, c: Candidate, index_url: str | None, index_option: str, reasons: list[Reason]
) -> str:
    """The one index rule (every format prints `index_option` as is): the release's own option, except that
    an install which also takes packages from the default index (torch-npu) can only add the torch index as an
    extra one (one file, one set of indexes); torch's pin is then the plugin's requirement."""
    from_default_index = c.plugin_row is not None and state.family == "npu"
    if not (index_url and from_default_index and index_option != "--extra-index-url"):
        return index_option
    reasons.append(
        Reason(
            "index-option",
            f"torch-npu comes from the default index, so {c.build_row.index_url} is an extra index in every "
            "output format",
            (),
        )
    )
    return "--extra-index-url"


def _torch_pin(
    state: ResolverState, c: Candidate, torch_pin: str, reasons: list[Reason]
) -> tuple[str, AscendNpuRow | None]:
    """torch's pin (the plugin's exact requirement where torch-npu's wheel has one), and torch-npu's row."""
    # torch-npu is the one plugin whose rows carry the torch its wheels require
    npu_row = cast("AscendNpuRow", c.plugin_row) if state.family == "npu" else None
    plugin_pin = _plugin_torch_pin(npu_row, state.request.platform)
    if npu_row is not None and plugin_pin is not None and plugin_pin != torch_pin:
        # the plugin's wheel for this architecture requires this exact torch (2.11.0+cpu on x86_64)
        reasons.append(Reason("torch-pin", f"torch-npu {npu_row.torch_npu} for {state.request.platform} requires "
                              f"torch=={plugin_pin}", tuple(npu_row.source)))
        torch_pin = plugin_pin
    return torch_pin, npu_row


def _no_deps(state: ResolverState) -> tuple[str, ...]:
    """The companions a vendor plugin's install takes with --no-deps (its own pins), if any."""
    if state.family not in PLUGIN_FAMILIES:
        return ()
    install = state.matrix.vendor_install(PLUGINS[state.family].install_note)
    return tuple(state.request.with_) if install is not None and install.companions_no_deps else ()


def _triton_reason(state: ResolverState, patch: TorchPatch, python: str, reasons: list[Reason]) -> None:
    """Whether pip pulls triton in on this target: the default wheel's requirement, its marker evaluated at
    load for each platform and Python (``triton.applies``)."""
    triton = patch.triton
    requirement = triton.requirement
    if not requirement:
        return
    marker, applies = triton.marker, triton.applies
    platform = state.request.platform
    if applies is None or platform not in applies:
        text = f"torch {patch.version} requires {requirement}" + (f"; {marker}" if marker else "")
    elif python in applies[platform]:
        text = f"torch {patch.version} pulls in {requirement} on {platform} with Python {python}"
    else:
        text = f"no triton on {platform} with Python {python}: {requirement} applies only where {marker}"
    reasons.append(Reason("triton", text, tuple(triton.source)))


def _plugin_torch_pin(row: AscendNpuRow | None, platform: str) -> str | None:
    """The exact torch a plugin's wheel requires on this platform (``==2.11.0+cpu`` -> ``2.11.0+cpu``)."""
    pins = row.torch_requirement if row is not None else None
    text = (pins or {}).get(cast("Platform", platform))
    if not text or not text.startswith("==") or text.endswith(".*") or "," in text:
        return None
    return text[2:].strip()


def _arch_reason(state: ResolverState, c: Candidate, reasons: list[Reason], warnings: list[str]) -> None:
    gpu = state.request.gpu_arch
    verdict = c.arch
    assert verdict is not None
    if verdict.coverage == "unknown":
        warnings.append(f"the matrix has no architecture list for {c.label}; could not check {gpu}")
        state.unknowns.append(f"whether {c.label} ships kernels for {gpu} (no sourced arch list)")
        return
    assert verdict.row is not None  # a known coverage always rests on a row
    how = (
        "ships kernels that run on"
        if verdict.coverage == "kernels"
        else "ships PTX that JIT-compiles for"
    )
    reasons.append(
        Reason("gpu-arch", f"{c.label} {how} {gpu} ({verdict.shipped})", tuple(verdict.row.source))
    )
    if verdict.coverage == "ptx":
        warnings.append(
            f"{gpu} runs {c.label} through PTX JIT: the first use of each kernel compiles it (slow start)"
        )


def _capability_floors(state: ResolverState, version: str, label: str, warnings: list[str]) -> None:
    """Parts of the build the GPU is too old for (host_rules.yaml capability_floors), one line each."""
    gpu = state.request.gpu_arch or ""
    have = int("".join(ch for ch in gpu if ch.isdigit()) or 0)
    for row in state.matrix.capability_floors(version, state.request.platform, label):
        need = int("".join(ch for ch in row.min_arch if ch.isdigit()))
        if have < need:
            warnings.append(
                f"{row.component} needs {row.min_arch} or newer, the GPU is {gpu}: {row.effect} "
                f"({', '.join(row.source)})"
            )


def _driver_notes(
    state: ResolverState,
    version: str,
    c: Candidate,
    reasons: list[Reason],
    warnings: list[str],
    requirements: list[HostRequirement],
) -> None:
    """`_driver_reason`, kept per matrix where the request gives no --driver (then nothing in it is free text:
    the rule, the coverage and the sentences follow from the patch, the build, the platform and a --gpu-arch
    the matrix names)."""
    r = state.request
    if r.driver is not None or (r.gpu_arch is not None and r.gpu_arch not in state.matrix.gpu_archs()):
        _driver_reason(state, version, c, reasons, warnings, requirements)
        return
    memo = _DRIVER_NOTES.table(state.matrix)
    key = (version, c.label, r.platform, r.gpu_arch, c.arch.coverage if c.arch is not None else None)
    notes = memo.get(key)
    if notes is None:
        said: tuple[list[Reason], list[str], list[HostRequirement]] = ([], [], [])
        _driver_reason(state, version, c, *said)
        notes = memo[key] = (tuple(said[0]), tuple(said[1]), tuple(said[2]))
    reasons.extend(notes[0])
    warnings.extend(notes[1])
    requirements.extend(notes[2])


def _driver_reason(
    state: ResolverState,
    version: str,
    c: Candidate,
    reasons: list[Reason],
    warnings: list[str],
    requirements: list[HostRequirement],
) -> None:
    """The driver the build needs and the rule that decided it (hardware_rules: two floors)."""
    rule = c.floor
    assert rule is not None, "the driver stage rules every CUDA candidate"
    r = state.request
    runtime = c.build_row.runtime
    if rule.version is None:
        warnings.append(
            f"the matrix has no {r.os} driver minimum for CUDA {runtime}; check NVIDIA's release notes"
        )
        if r.driver is not None:
            state.unknowns.append(f"whether driver {r.driver} runs CUDA {runtime} on {r.os}")
        return
    toolkit = rule.toolkit.version if rule.toolkit is not None else runtime
    sources = tuple(rule.toolkit.source if rule.toolkit is not None else ()) + tuple(
        rule.major_row.source if rule.major_row is not None else ()
    )
    if rule.rule == "minor-version-compat":
        detail = _mvc_detail(state, version, c, rule, toolkit, warnings, requirements)
    else:
        detail = _toolkit_floor_detail(state, c, rule, toolkit, requirements)
    if r.gpu_arch is None:
        warnings.append(
            f"no --gpu-arch (or --gpu) given: {c.label} has {_build_covers(state, version, c)}; "
            "a GPU none of them runs on (a cubin runs within its major, same or newer minor) gets no kernels"
        )
    if r.driver is None:
        detail += _no_driver_warning(r.os, c, rule, toolkit, warnings)
    reasons.append(Reason("driver", detail, sources))


def _mvc_detail(
    state: ResolverState,
    version: str,
    c: Candidate,
    rule: DriverRule,
    toolkit: str | None,
    warnings: list[str],
    requirements: list[HostRequirement],
) -> str:
    """The driver reason under minor-version compatibility (the CUDA major's floor, SASS on the GPU)."""
    r = state.request
    major = rule.major_row.cuda_major if rule.major_row is not None else None
    own = rule.toolkit_floor
    covers = _build_covers(state, version, c)
    if c.arch is not None and c.arch.coverage == "kernels":
        detail = (
            f"rule minor-version-compat: {r.gpu_arch} has SASS in {c.label}, so CUDA {toolkit} runs on "
            f"any CUDA {major}.x driver >= {rule.version} on {r.os}"
        )
    else:
        detail = (
            f"rule minor-version-compat: CUDA {major}.x builds run on a driver >= {rule.version} on {r.os} "
            f"when the GPU has SASS in {c.label} ({covers})"
        )
    if own is not None:
        detail += f"; a GPU that runs it only through PTX needs CUDA {toolkit}'s own floor >= {own}"
    requirements.append(
        HostRequirement(
            "nvidia-driver",
            rule.version,
            f"CUDA {major}.x minor-version-compatibility floor on {r.os}"
            + (f"; PTX JIT needs CUDA {toolkit}'s own floor {own}" if own else ""),
        )
    )
    if r.driver is None:  # the no --driver warning says the own floor once
        return detail
    detail += f"; driver {r.driver} meets >= {rule.version}"
    if own is not None and cached_version(r.driver) < cached_version(own):
        detail += _below_own_floor(state, c, toolkit, own, covers, warnings)
    return detail


def _below_own_floor(
    state: ResolverState, c: Candidate, toolkit: str | None, own: str, covers: str, warnings: list[str]
) -> str:
    """A --driver below the toolkit's own floor under minor-version compatibility: what that leaves out."""
    r = state.request
    warnings.append(f"driver {r.driver} is below CUDA {toolkit}'s own floor {own}: " + _mvc_short(r.os))
    if c.arch is None or c.arch.coverage == "unknown":
        state.unknowns.append(
            f"whether the GPU has SASS in {c.label} ({covers}): driver {r.driver} is below CUDA "
            f"{toolkit}'s own floor {own} (give --gpu-arch or --gpu)"
        )
    return f"; below CUDA {toolkit}'s own floor, {MVC_LIMITS}"


def _toolkit_floor_detail(
    state: ResolverState, c: Candidate, rule: DriverRule, toolkit: str | None, requirements: list[HostRequirement]
) -> str:
    """The driver reason under the toolkit's own floor (no minor-version compatibility, or PTX only)."""
    r = state.request
    own = rule.toolkit_floor
    if c.arch is not None and c.arch.coverage == "ptx":
        why = f"{r.gpu_arch} runs {c.label} only through its PTX, which the driver JIT-compiles, so "
    else:
        why = f"CUDA {c.build_row.runtime} has no minor-version compatibility, so "
    detail = f"rule toolkit-floor: {why}CUDA {toolkit} needs its own driver floor >= {rule.version} on {r.os}"
    if own is None:
        major = rule.major_row.cuda_major if rule.major_row is not None else None
        detail = (
            f"rule toolkit-floor: {why}CUDA {toolkit} needs its own driver floor, which NVIDIA's table does not "
            f"give for {r.os}; the CUDA {major}.x floor >= {rule.version} is the least it needs"
        )
        if r.driver is not None:
            state.unknowns.append(f"whether driver {r.driver} reaches CUDA {toolkit}'s own floor on {r.os}")
    if r.driver is not None:
        detail += f"; driver {r.driver} meets it"
    requirements.append(HostRequirement("nvidia-driver", rule.version, f"CUDA {toolkit} toolkit minimum on {r.os}"))
    return detail


def _no_driver_warning(os: str, c: Candidate, rule: DriverRule, toolkit: str | None, warnings: list[str]) -> str:
    """The warning for a request with no --driver, and what the driver reason adds for it."""
    own = rule.toolkit_floor
    two_floors = own is not None and own != rule.version
    mvc_two_floors = two_floors and rule.rule == "minor-version-compat"
    warnings.append(
        f"no --driver given: {c.label} needs an NVIDIA driver >= {rule.version} ({rule.rule}"
        + (f"; >= {own} for CUDA {toolkit}'s own floor" if two_floors else "")
        + ")"
        + (f"; {_mvc_short(os)}" if mvc_two_floors else "")
    )
    return f"; below CUDA {toolkit}'s own floor, {MVC_LIMITS}" if mvc_two_floors else ""


def _mvc_short(os_name: str) -> str:
    """What minor-version compatibility does not cover, in one line with its sources (no Triton on Windows)."""
    if os_name == "windows":
        return f"{MVC_LIMITS_SHORT['windows']} ({MVC_LIMITS_SOURCES[0]})"
    return f"{MVC_LIMITS_SHORT['linux']} ({', '.join(MVC_LIMITS_SOURCES)})"


def _build_covers(state: ResolverState, version: str, c: Candidate) -> str:
    """Which GPU architectures the build ships SASS for, as the matrix knows it (for the driver rule)."""
    row = state.matrix.arch_list(version, c.label, state.request.platform)
    if row is not None:
        return f"SASS for {describe_archs(list(row.archs), row.ptx)}"
    span = state.matrix.toolkit_arch_range(c.build_row.runtime or "0")
    if span is not None:
        return f"arch list unknown; CUDA {c.build_row.runtime} compiles {span.min_arch} … {span.max_arch}"
    return "arch list unknown"


def _runtime_reason(state: ResolverState, c: Candidate, reasons: list[Reason]) -> None:
    """How the build fits the host's vendor runtime (--runtime), or the unknown it rests on."""
    if c.runtime_unknown is not None:
        state.unknowns.append(c.runtime_unknown)
        return
    name = RUNTIME_NAMES.get(state.family, "runtime")
    have = state.request.runtime
    window = rocm_fit_reason(state.matrix, have or "", c.label, c.build_row.runtime) if state.family == "rocm" else None
    if window is not None:
        detail, sources = window
    elif state.family == "rocm":
        detail = f"ROCm {have} on the host: {c.label} is built for ROCm {c.build_row.runtime}, the same major.minor"
        sources = tuple(c.build_row.source)
    elif c.plugin_row is not None:
        plugin = PLUGINS[state.family]
        needs = getattr(c.plugin_row, RUNTIME_COLUMNS[state.family])
        detail = (
            f"{name} {have} on the host: {plugin.package} {getattr(c.plugin_row, plugin.version_field)} is the "
            f"release mapped to {name} {needs} for torch {c.plugin_row.torch}"
        )
        sources = tuple(c.plugin_row.source)
    else:
        return
    reasons.append(Reason("runtime", detail, sources))


def _family_notes(
    state: ResolverState,
    version: str,
    c: Candidate,
    reasons: list[Reason],
    warnings: list[str],
    requirements: list[HostRequirement],
) -> None:
    """What the family's own table asks of the host (``_FAMILY_NOTES``; a vendor plugin's row)."""
    if state.family in PLUGIN_FAMILIES:
        if c.plugin_row is not None:
            _plugin_notes(state, c.plugin_row, reasons, warnings, requirements)
        return
    notes = _FAMILY_NOTES.get(state.family)
    if notes is not None:
        notes(state, version, c, reasons, warnings, requirements)


def _mps_notes(
    state: ResolverState,
    version: str,
    c: Candidate,
    reasons: list[Reason],
    warnings: list[str],
    requirements: list[HostRequirement],
) -> None:
    row = state.matrix.mps_support(version)
    if row is None:
        warnings.append(f"the matrix has no MPS row for torch {version}")
    elif row.min_macos:
        requirements.append(HostRequirement("macos", row.min_macos, "MPS needs this macOS or newer"))
        reasons.append(
            Reason(
                "mps",
                f"MPS ships in the macOS wheel; needs macOS >= {row.min_macos}",
                tuple(row.source),
            )
        )


def _xpu_notes(
    state: ResolverState,
    version: str,
    c: Candidate,
    reasons: list[Reason],
    warnings: list[str],
    requirements: list[HostRequirement],
) -> None:
    xpu = state.matrix.xpu_support(version)
    if xpu is not None and xpu.driver_requirement:
        requirements.append(HostRequirement("intel-gpu-driver", None, xpu.driver_requirement))
        reasons.append(Reason("xpu", xpu.driver_requirement, tuple(xpu.source)))
    support_package = xpu_prerequisites(xpu)
    if support_package is not None:
        requirements.append(HostRequirement("intel-support-package", None, support_package))


def _rocm_notes(
    state: ResolverState,
    version: str,
    c: Candidate,
    reasons: list[Reason],
    warnings: list[str],
    requirements: list[HostRequirement],
) -> None:
    release = state.matrix.rocm_release(c.build_row.runtime) if c.build_row.runtime else None
    if release is not None and release.min_driver:
        requirements.append(HostRequirement("amdgpu-driver", release.min_driver, f"ROCm {release.version}"))


_Notes = Callable[[ResolverState, str, Candidate, list[Reason], list[str], list[HostRequirement]], None]
#: family -> what its table asks of the host (the vendor plugins read their own rows: `_plugin_notes`)
_FAMILY_NOTES: dict[str, _Notes] = {"mps": _mps_notes, "xpu": _xpu_notes, "rocm": _rocm_notes}


def _platform_notes(
    state: ResolverState,
    patch: TorchPatch,
    python: str,
    c: Candidate,
    reasons: list[Reason],
    requirements: list[HostRequirement],
) -> None:
    """What the pinned wheels' platform tags ask of the host (glibc, macOS), said as a host requirement: the
    target's own version when the request gives it, else the floor the answer assumes; and why newer releases
    were passed over for it. The full Python, where given, against the pins' Requires-Python."""
    r = state.request
    floor = floor_needed(state, patch, c.label)
    if floor is not None:
        _floor_requirement(state, floor, reasons, requirements)
    if state.wheel_skips:
        _newer_skipped(state, patch, reasons)
    full = full_python(state, python)
    if r.python_version is not None and full == r.python_version:
        reasons.append(
            Reason("python", f"Python {full}: every pin's Requires-Python admits it", ("package_index",))
        )


def _floor_requirement(
    state: ResolverState, floor: TagFloor, reasons: list[Reason], requirements: list[HostRequirement]
) -> None:
    """The platform tags' floor as a host requirement (unless one as high is there), and a reason when the
    request describes the host."""
    flag = "--glibc" if floor.needs == "glibc" else "--macos"
    version = f"{floor.version[0]}.{floor.version[1]}"
    name = floor.needs.lower()
    given = describes_host(state)
    need = floor.origin or f"the pinned wheels' platform tags need {floor.text}"
    detail = f"{need}; the target has {host_words(state)}" if given else f"{need}; no {flag} given, assumed"
    if not any(
        q.name == name and q.version is not None and cached_version(q.version) >= cached_version(version)
        for q in requirements
    ):
        requirements.append(HostRequirement(name, version, detail))
    if given:
        reasons.append(Reason("platform", detail, ("package_index",)))


def _newer_skipped(state: ResolverState, patch: TorchPatch, reasons: list[Reason]) -> None:
    """Why newer releases were passed over for their wheels' platform tags or Python."""
    newer = [(v, b) for v, b in state.wheel_skips if cached_version(v) > cached_version(patch.version)]
    if not newer:
        return
    oldest, blocked = newer[-1]
    need = f" need {blocked.floor.text}" if blocked.floor is not None else " do not install"
    reasons.append(
        Reason(
            "platform",
            f"torch >= {oldest}:{need} ({blocked.why}); torch {patch.version} is the newest that installs",
            ("package_index", "pytorch_rfc_123649") if blocked.floor and blocked.floor.needs == "glibc"
            else ("package_index",),
        )
    )


def _plugin_notes(
    state: ResolverState,
    row: AscendNpuRow | CambriconMluRow,
    reasons: list[Reason],
    warnings: list[str],
    requirements: list[HostRequirement],
) -> None:
    if isinstance(row, AscendNpuRow):  # npu; mlu reads the Cambricon table
        reasons.append(
            Reason(
                "torch-npu",
                f"torch-npu {row.torch_npu} is Ascend's plugin for torch {row.torch} on the CPU build",
                tuple(row.source),
            )
        )
        if row.cann:
            requirements.append(
                HostRequirement("cann", row.cann, "Ascend CANN toolkit (not a pip package)")
            )
            warnings.append(
                f"torch-npu {row.torch_npu} needs Ascend CANN {row.cann} installed on the host"
            )
        else:
            warnings.append(f"the matrix has no CANN version for torch-npu {row.torch_npu}")
    else:
        requirements.append(
            HostRequirement(
                "torch_mlu",
                row.torch_mlu,
                "Cambricon's plugin wheel, distributed with its SDK (not a pip package)",
            )
        )
        if row.toolkit:
            requirements.append(
                HostRequirement("cambricon-toolkit", row.toolkit, "Cambricon toolkit (CTR)")
            )
        if row.driver:
            requirements.append(HostRequirement("cambricon-driver", row.driver, "Cambricon driver"))
        reasons.append(
            Reason(
                "torch_mlu",
                f"torch_mlu {row.torch_mlu} is Cambricon's plugin for torch {row.torch}",
                tuple(row.source),
            )
        )
        warnings.append(f"install torch_mlu {row.torch_mlu} from the Cambricon SDK after torch")
    note = state.matrix.install_note(PLUGINS[state.family].install_note)
    if note:
        reasons.append(Reason("install", note, ()))


def _evidence(
    state: ResolverState, version: str, label: str, python: str, reasons: list[Reason]
) -> JsonObject | None:
    if state.evidence is None:
        return None
    from compat_service.domain.evidence.steering import answer_notes

    assert state.steering is not None, "a resolution with evidence steers by it"
    cell = state.steering.status(version, label, python)
    reason, warning = answer_notes(cell, version, label, state.request.platform)
    if reason is not None:
        reasons.append(Reason("evidence", reason, ()))
    if warning is not None:
        state.warnings.append(warning)
    return {"status": cell.status, "hosts": cell.hosts, "detail": cell.detail}
