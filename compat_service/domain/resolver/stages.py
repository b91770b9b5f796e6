"""`resolve(request, matrix)`: the newest torch patch that satisfies every constraint, pinned, with reasons.

Each candidate patch (newest first) goes through the stages in `STAGES`; the first patch that passes
them all wins, and within it the newest build variant that passes. When none does, the failure is
reported at the furthest stage any candidate reached, with the constraints that clashed there and the
nearest requests that would work (explanation.py; the codes are listed in compat_service/domain/errors.py).

Every stage is a plain function over one explicit `ResolverState` (state.py); the answer (answer.py) and
the explanation (explanation.py) are functions over the same state. The resolver reads the matrix only
through `Matrix`; it never imports pydantic on the success path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Union, cast

from packaging.version import Version

from compat_service.domain.backends import (
    CPU_WHEEL_FAMILIES,
    PLUGIN_FAMILIES,
    PLUGINS,
    RUNTIME_COLUMNS,
    RUNTIME_NAMES,
)
from compat_service.domain.hardware_rules import (
    ArchVerdict,
    GpuLookup,
    arch_coverage,
    arch_is_known,
    driver_rule,
    gpu_arch_for_names,
    runtime_fits,
    too_new_for,
)
from compat_service.domain.matrix.memo import MatrixMemo, RequestMemo
from compat_service.domain.matrix.model.rows import ArchList, AscendNpuRow
from compat_service.domain.resolver.answer import build_resolution
from compat_service.domain.resolver.conflict import Conflict
from compat_service.domain.resolver.explanation import (
    Fit,
    explain_failure,
    nearby_requests,
    to_error,
    torch_not_found,
)
from compat_service.domain.resolver.jetson import is_jetson_target, jetson_answer, on_sbsa_jetson
from compat_service.domain.resolver.known_bad import screen, skip_words
from compat_service.domain.resolver.request import implied_family, invalid_request
from compat_service.domain.resolver.state import (
    STAGE,
    STAGES,
    BackendRefusal,
    Candidate,
    CompanionsRefusal,
    DriverRefusal,
    Dropout,
    GpuArchRefusal,
    KnownBadRefusal,
    PlatformRefusal,
    PluginRefusal,
    PythonRefusal,
    Refusal,
    ResolverState,
    RuntimeRefusal,
    Trial,
    WheelsRefusal,
)
from compat_service.domain.resolver.vendor_rules import (
    check_intel_gpu_backend,
    rocm_fits,
    unpublished_companions,
)
from compat_service.domain.resolver.wheel_tags import blocked_wheels, build_blocked, describes_host
from compat_service.domain.versions import cached_version

if TYPE_CHECKING:
    from compat_service.domain.backends import Platform
    from compat_service.domain.evidence.lookup import EvidenceLookup
    from compat_service.domain.evidence.steering import EvidenceSteering
    from compat_service.domain.matrix.interface import Matrix
    from compat_service.domain.matrix.model.rows import (
        BuildVariant,
        CambriconMluRow,
        TorchMinor,
        TorchPatch,
        VariantAvailability,
    )
    from compat_service.domain.resolver.request import ResolveRequest, TorchSpec
    from compat_service.domain.resolver.resolution import Resolution
    from compat_service.domain.resolver.wheel_tags import Blocked


#: a vendor plugin's row (torch-npu, torch-mlu): `PLUGINS[family].table` names the matrix table
PluginRow = Union["AscendNpuRow", "CambriconMluRow"]


def resolve(request: ResolveRequest, matrix: Matrix, evidence: EvidenceLookup | None = None) -> Resolution:
    """Resolve one request; raises InvalidRequestError or an UnsatisfiableError subclass."""
    request, gpu = name_the_gpu(request, matrix)
    jetson = jetson_answer(request, matrix)  # a Jetson GPU: NVIDIA's JetPack wheels (jetson.py), no stages
    if jetson is not None:
        return _with_gpu_reason(jetson, gpu)
    request, sbsa_jetson = on_sbsa_jetson(request, matrix)  # Thor: the stages, on linux-aarch64
    _check_request(request, matrix)
    try:
        res = run(ResolverState(matrix, request, evidence))
    except Conflict as conflict:
        raise to_error(
            conflict, nearby_requests(conflict, request, matrix, try_resolve, minors_past_first_stages)
        ) from None
    if sbsa_jetson is not None:
        res = res.changed(reasons=(sbsa_jetson, *res.reasons))
    return _with_gpu_reason(res, gpu)


def name_the_gpu(request: ResolveRequest, matrix: Matrix) -> tuple[ResolveRequest, GpuLookup | None]:
    """--gpu 'RTX 5090' -> --gpu-arch sm_120 (and the family, when no --backend was given), from the matrix's
    GPU names; a name the matrix does not know, or one that contradicts --gpu-arch, is an invalid request."""
    if request.gpu is None:
        return request, None
    from compat_service.domain.resolver.request import BackendSpec, invalid_request

    products = [p.strip() for p in request.gpu.replace(";", ",").split(",") if p.strip()]
    found = gpu_arch_for_names(matrix, products)
    if found is None:
        examples = ", ".join(row.name for row in list(matrix.gpu_names())[:8])
        raise invalid_request(
            f"--gpu {request.gpu!r} is no GPU the matrix names",
            f"give --gpu-arch instead (sm_90, or 9.0 as nvidia-smi prints it; gfx942), or a name such as {examples}",
            "--gpu",
            request.gpu,
        )
    if request.gpu_arch is not None and request.gpu_arch != found.arch:
        raise invalid_request(
            f"--gpu {request.gpu!r} is {found.arch}, but --gpu-arch says {request.gpu_arch}",
            "give one of them",
            "--gpu",
            request.gpu,
        )
    backend = request.backend
    if request.backend_defaulted:
        from compat_service.domain.resolver.request import check_target_flags

        backend = BackendSpec(found.family, "family", found.family)
        check_target_flags(backend, request.driver, request.runtime)  # --gpu MI300X --runtime 6.3.4: rocm
    if found.family == "xpu":  # an Intel device family is no --gpu-arch: the name picks the xpu build
        check_intel_gpu_backend(request, backend)
        return request.changed(backend=backend), found
    return request.changed(gpu_arch=found.arch, backend=backend), found


def _with_gpu_reason(res: Resolution, gpu: GpuLookup | None) -> Resolution:
    if gpu is None:
        return res
    from compat_service.domain.resolver.resolution import Reason

    named = ", ".join(f"{product} is {arch} (matrix name {name!r})" for product, arch, name in gpu.matched)
    target = f"the xpu build (Intel device family {gpu.arch})" if gpu.family == "xpu" else gpu.arch
    reason = Reason("gpu", f"--gpu: {named}; resolved for {target}", gpu.source)
    warnings = (gpu.note,) if gpu.note else ()
    return res.changed(reasons=(reason, *res.reasons), warnings=(*warnings, *res.warnings))


#: a request the alternatives search tries -> what it reads of its answer, None when it does not resolve
#: (`try_resolve`)
_TRIED: RequestMemo[ResolveRequest, Fit | None] = RequestMemo("tried")


def try_resolve(request: ResolveRequest, matrix: Matrix) -> Fit | None:
    """Resolve without raising and without explaining a failure (the search only needs yes or no, and the
    answer's torch, build and Python); for the alternatives search. Answers are kept per matrix (bounded):
    pipelines and the web selector send many unsatisfiable requests, and their searches try the same nearby
    requests again and again."""
    return _TRIED.recall(matrix, lambda: request, lambda: _search_fit(request, matrix))


def _search_fit(request: ResolveRequest, matrix: Matrix) -> Fit | None:
    if is_jetson_target(request, matrix):  # NVIDIA's JetPack wheels (jetson.py)
        from compat_service.domain.errors import UnsatisfiableError

        try:
            res = jetson_answer(request, matrix)
        except UnsatisfiableError:
            res = None
        return None if res is None else Fit(res.torch_version, res.backend, res.family, res.python)
    try:
        return _fit(ResolverState(matrix, request, None))
    except Conflict:  # --strict, and the answer rests on unknown facts
        return None


def _fit(state: ResolverState) -> Fit | None:
    """What `run` answers (no evidence), as the search reads it: the answer itself (its sentences, pins and
    index) is built only where --strict makes its unknowns decide whether there is one."""
    trial = next(_trials_in_order(state, []), None)
    if trial is None:
        return None
    if state.request.strict:
        best = _best(state, trial.candidates)
        res = _checked(state, build_resolution(state, trial.minor, trial.patch, trial.python, best))
        return Fit(res.torch_version, res.backend, res.family, res.python)
    return Fit(trial.patch.version, _best(state, trial.candidates).label, state.family, trial.python)


def minors_past_first_stages(request: ResolveRequest, matrix: Matrix) -> frozenset[str]:
    """The torch minors of which a patch passes every stage but the companions for ``request`` with its --torch
    set to that minor: the only ones the nearest-torch search need resolve."""
    needs = _driver_needs(request, matrix)
    if request.driver is None or request.backend.family != "cuda":
        return frozenset(needs)
    have = cached_version(request.driver)
    return frozenset(minor for minor, need in needs.items() if need is None or need <= have)


#: (platform, a Python the matrix lists or None, backend kind, a label the matrix publishes or None, family, a
#: --gpu-arch the matrix names or None, companions) -> `_driver_needs`
_DRIVER_NEEDS: MatrixMemo[
    tuple[str, str | None, str, str | None, str | None, str | None, tuple[str, ...]], dict[str, Version | None]
] = MatrixMemo("first_stage_minors")


def _driver_needs(request: ResolveRequest, matrix: Matrix) -> dict[str, Version | None]:
    """minor -> the lowest driver a patch of it that passes the stages before the driver's needs (None: one of its
    builds has no known floor, so any driver passes), for the minors with such a patch: the stages folded over
    every patch up to the driver's, then the driver stage's floors (`_driver_floors`). Kept per matrix when
    every request field those stages read is one the matrix lists (no stage before the driver's reads --driver;
    a full Python, a C library or OS version, or a --runtime is computed afresh)."""
    r = request
    asked = r.backend.label if r.backend.kind == "label" else None
    key = (r.platform, r.python, r.backend.kind, asked, r.backend.family, r.gpu_arch, r.with_)
    memo = _DRIVER_NEEDS.table(matrix)
    found = memo.get(key)
    if found is not None:
        return found
    state = ResolverState(matrix, request, None)
    found = {}
    for minor in matrix.torch_minors():
        needs = [_lowest_floor(state, t) for t in _passing(state, minor, _BEFORE_DRIVER)]
        if needs:
            found[minor.minor] = None if None in needs else min(n for n in needs if n is not None)
    if _matrix_keyed(state, asked):
        memo[key] = found
    return found


def _matrix_keyed(state: ResolverState, asked: str | None) -> bool:
    """Whether every request field the stages before the driver's read is one the matrix lists (or absent)."""
    r, matrix = state.request, state.matrix
    return (
        (asked is None or matrix.build_variant(asked) is not None)
        and (r.python is None or r.python in _listed_pythons(matrix, r.platform))
        and (r.gpu_arch is None or r.gpu_arch in matrix.gpu_archs())
        and r.python_version is None
        and r.runtime is None
        and not describes_host(state)
    )


def _passing(state: ResolverState, minor: TorchMinor, stages: tuple[Stage, ...]) -> list[Trial]:
    """The trials of ``minor``'s patches that pass ``stages``."""
    out = []
    for patch in state.matrix.torch_patches(minor):
        outcome = _try_patch(state, minor, patch, stages)
        if isinstance(outcome, Trial):
            out.append(outcome)
    return out


def _lowest_floor(state: ResolverState, trial: Trial) -> Version | None:
    """The lowest driver floor over the trial's builds (None: one has no known floor, or not a CUDA request)."""
    if state.family != "cuda":
        return None
    _driver_floors(state, trial)
    floors = [c.floor.version if c.floor is not None else None for c in trial.candidates]
    if None in floors:
        return None
    return min(cached_version(f) for f in floors if f is not None)


#: platform -> every Python some patch publishes wheels for there
_LISTED_PYTHONS: MatrixMemo[str, frozenset[str]] = MatrixMemo("listed_pythons")


def _listed_pythons(matrix: Matrix, platform: str) -> frozenset[str]:
    """Every Python some patch publishes wheels for on ``platform`` (kept per matrix)."""
    memo = _LISTED_PYTHONS.table(matrix)
    found = memo.get(platform)
    if found is None:
        found = memo[platform] = frozenset(
            p
            for m in matrix.torch_minors()
            for patch in matrix.torch_patches(m)
            for p in matrix.pythons(m, patch, platform)
        )
    return found


def _check_request(request: ResolveRequest, matrix: Matrix) -> None:
    if request.backend.kind == "auto":
        raise invalid_request(
            "--backend auto needs host detection, which only runs on the target host",
            "run `accelenv resolve` on the host, or name the backend (cuda, rocm, cu121, cpu, ...)",
            "--backend",
            "auto",
        )
    family = request.backend.family
    if request.gpu_arch:
        vendor = implied_family(None, request.gpu_arch)
        if family in ("cuda", "rocm") and family != vendor:
            raise invalid_request(
                f"--gpu-arch {request.gpu_arch} is {'an AMD' if vendor == 'rocm' else 'an NVIDIA'} "
                f"architecture but --backend {request.backend.text} is {family}",
                "give the GPU architecture of the backend you ask for",
                "--gpu-arch",
                request.gpu_arch,
            )
        known = matrix.gpu_archs()
        if not arch_is_known(request.gpu_arch, known):
            raise invalid_request(
                f"--gpu-arch {request.gpu_arch} is not an architecture the matrix knows",
                "use one of the architectures the matrix lists (gpu_archs.yaml, rocm.yaml): "
                + ", ".join(known),
                "--gpu-arch",
                request.gpu_arch,
            )


def run(state: ResolverState) -> Resolution:
    """The stages over every matching patch, newest first; raises a `Conflict` when none passes."""
    deaths: list[Dropout] = []
    passed: list[Trial] = []
    for trial in _trials_in_order(state, deaths):
        if (chosen := _pick(state, trial, passed)) is not None:
            return chosen
    if passed and state.steering is not None:
        return _unverified(state, state.steering, passed[0])
    raise _failure(state, deaths) if deaths else torch_not_found(state)


def _trials_in_order(state: ResolverState, deaths: list[Dropout]) -> Iterator[Trial]:
    """The patches --torch matches that pass every stage, in the order the answer takes them (newest first),
    each tried when the previous one is passed over; those that drop out go to ``deaths``. With --gpu-arch, a
    patch whose every build has an *unknown* arch list waits until no patch with a known, covering list
    remains: "unknown" must not beat "known to work"."""
    unknown_arch: list[Trial] = []
    for minor, patch in _matching_patches(state.request.torch, state.matrix):
        outcome = _try_patch(state, minor, patch)
        if isinstance(outcome, Dropout):
            deaths.append(outcome)
            state.skipped.append((patch.version, _skip_reason(state, outcome)))
        elif state.request.gpu_arch and _arch_lists_unknown(outcome):
            unknown_arch.append(outcome)
            state.skipped.append((patch.version, f"no sourced arch list to check {state.request.gpu_arch} against"))
        else:
            yield outcome
    yield from unknown_arch


def _failure(state: ResolverState, deaths: list[Dropout]) -> Conflict:
    """The failure at the furthest stage any patch reached, explained."""
    furthest = max(d.stage for d in deaths)
    return explain_failure(state, STAGES[furthest], [d for d in deaths if d.stage == furthest])


def _unverified(state: ResolverState, steering: EvidenceSteering, first: Trial) -> Resolution:
    """The evidence passed over every build of every patch that passed the stages: the first one's best build
    (the answer says what the evidence found), or with --require-verified the failure that says none is."""
    if state.request.require_verified:
        raise steering.not_verified(f"torch {state.request.torch.text}", state.family, state.request.python)
    best = _best(state, first.candidates)
    return _checked(state, build_resolution(state, first.minor, first.patch, first.python, best))


def _arch_lists_unknown(trial: Trial) -> bool:
    return all(c.arch is not None and c.arch.coverage == "unknown" for c in trial.candidates)


def _skip_reason(state: ResolverState, dropout: Dropout) -> str:
    """Why the answer passed over a newer patch (noting the first wheel that does not install)."""
    info = dropout.info
    if isinstance(info, WheelsRefusal):
        first = info.blocked[0]
        state.wheel_skips.append((dropout.patch.version, first))
        return f"{first.package} wheels need {first.floor.text}" if first.floor is not None else first.why
    if isinstance(info, KnownBadRefusal):
        return skip_words(info.refused[0][1])
    if isinstance(info, (PlatformRefusal, BackendRefusal)) and state.request.platform in (
        dropout.minor.platforms_unsourced or ()
    ):
        return f"could not confirm: no source lists its {state.request.platform} builds yet"
    return _SKIP_REASONS[STAGES[dropout.stage]]


#: (torch spec kind, its text naming latest or a minor or patch of the matrix) -> the (minor, patch) pairs it
#: matches, newest first
_MATCHING_PATCHES: MatrixMemo[tuple[str, str], list[tuple[TorchMinor, TorchPatch]]] = MatrixMemo("matching_patches")


def _matching_patches(spec: TorchSpec, matrix: Matrix) -> list[tuple[TorchMinor, TorchPatch]]:
    """The (minor, patch) pairs --torch matches, newest first; kept per matrix for a --torch that names what
    the matrix holds (latest, one of its minors or patch versions), computed for any other."""
    named = spec.minor_named()
    memo = _MATCHING_PATCHES.table(matrix)
    key = (spec.kind, spec.text)
    found = memo.get(key)
    if found is not None:
        return found
    found = [
        (minor, patch)
        for minor in matrix.torch_minors()
        if (named is None or minor.minor == named)
        and (minor.status == "released" or spec.names_minor(minor.minor))
        for patch in matrix.torch_patches(minor)
        if spec.matches(patch.version, minor.minor)
    ]
    if spec.kind == "latest" or (spec.kind in ("minor", "exact") and any(
        (minor.minor if spec.kind == "minor" else patch.version) == spec.text for minor, patch in found
    )):
        memo[key] = found
    return found


#: why a patch was passed over, per stage (the answer lists the skipped newer patches with these)
_SKIP_REASONS = {
    "platform": "no wheels for this platform",
    "python": "no wheels for this Python",
    "wheels": "its wheels do not install on the target",
    "backend": "no build of the asked backend",
    "plugin": "no vendor plugin for it",
    "runtime": "no build for the given --runtime",
    "gpu_arch": "no kernels for the GPU",
    "driver": "needs a newer driver",
    "companions": "companion versions unknown or not published",
    "known_bad": "a known-bad combination",
}


def _checked(state: ResolverState, res: Resolution) -> Resolution:
    """The answer, or with --strict a `rests-on-unknown` failure when it rests on facts the matrix lacks."""
    if state.request.strict and res.unknowns:
        raise Conflict(
            "rests-on-unknown",
            f"torch {res.torch_version} {res.backend} is the only answer, and it rests on data the matrix "
            "does not have",
            hint="drop --strict to take the answer with its warnings, or check the facts by hand "
            "(`accelenv probe` on the target records them)",
            causes=[(u, "matrix: unknown (null)", None) for u in res.unknowns]
            + [("--strict", "request: --strict", "accept only answers whose deciding facts are sourced")],
        )
    return res


def _pick(state: ResolverState, trial: Trial, passed: list[Trial]) -> Resolution | None:
    """The answer from this patch's best build (`_checked`); None, and the trial noted in ``passed``, when the
    evidence passes over every build of it (broken, or unverified with --require-verified) and an alternative
    may remain (compat_service/domain/evidence/steering.py)."""
    minor, patch, python, candidates = trial.minor, trial.patch, trial.python, trial.candidates
    if state.steering is None:
        return _checked(state, build_resolution(state, minor, patch, python, _best(state, candidates)))
    picked = state.steering.pick(
        patch.version, python, candidates, lambda c: c.label, lambda cs: _best(state, cs)
    )
    if picked is None:
        passed.append(trial)
        return None
    state.warnings.extend(state.steering.notes(patch.version, picked.label))
    return _checked(state, build_resolution(state, minor, patch, python, picked))


def _platform_stage(state: ResolverState, t: Trial) -> Refusal | None:
    t.on_platform = state.matrix.variants_on_platform(t.minor, t.patch.version, state.request.platform)
    if t.on_platform:
        return None
    published = [v for v in t.minor.variants if v.patches is None or t.patch.version in v.patches]
    return PlatformRefusal(sorted({p for v in published for p in v.platforms}))


def _python_stage(state: ResolverState, t: Trial) -> Refusal | None:
    t.pythons = state.matrix.pythons(t.minor, t.patch, state.request.platform)
    python = state.request.python or _newest_gil_python(t.pythons)
    if python is None or python not in t.pythons:
        return PythonRefusal(t.pythons)
    t.python = python
    return None


def _wheels_stage(state: ResolverState, t: Trial) -> Refusal | None:
    """The pinned wheels install on the target (its Python, its platform tags); then the builds the backend
    request admits (the backend stage refuses when none), each of whose wheel must install too."""
    blocked = _python_wheels(state, t)
    if blocked:
        return WheelsRefusal(blocked)
    t.candidates = _variants(state, t.patch.version, t.on_platform)
    if not t.candidates or not describes_host(state):
        return None
    builds = [(c, build_blocked(state, t.patch.version, c.label)) for c in t.candidates]
    refused = [b for _, b in builds if b is not None]
    if len(refused) == len(builds):
        return WheelsRefusal(refused)
    t.candidates = [c for c, b in builds if b is None]
    return None


def _python_wheels(state: ResolverState, t: Trial) -> list[Blocked]:
    """The pinned wheels that do not install for the trial's Python; with no --python, the newest Python whose
    pinned wheels all install is taken instead, where an older one has them."""
    blocked = blocked_wheels(state, t.patch, t.python)
    if blocked and state.request.python is None:
        for older in reversed([p for p in t.pythons if not p.endswith("t") and p != t.python]):
            if not blocked_wheels(state, t.patch, older):
                t.python = older
                return []
    return blocked


def _backend_stage(state: ResolverState, t: Trial) -> Refusal | None:
    if t.candidates:
        return None
    return BackendRefusal(sorted({v.label for v in t.on_platform}))


def _plugin_stage(state: ResolverState, t: Trial) -> Refusal | None:
    if state.family not in PLUGIN_FAMILIES:
        return None
    plugin = _plugin_row(state, t.patch.version, t.python, state.request.platform)
    if plugin is None:
        return PluginRefusal()
    for c in t.candidates:
        c.plugin_row = plugin
    return None


def _runtime_stage(state: ResolverState, t: Trial) -> Refusal | None:
    runtime = state.request.runtime
    if runtime is None:
        return None
    if state.family in PLUGIN_FAMILIES:
        return _plugin_runtime_stage(state, t)
    if state.family != "rocm":
        return None
    fits = [c for c in t.candidates if runtime_fits("rocm", runtime, c.build_row.runtime) is not False]
    # the host's own ROCm minor first, else a release AMD's kernel-driver window admits (vendor_rules)
    fits = fits or [c for c in t.candidates if rocm_fits(state.matrix, runtime, c.build_row.runtime)]
    if not fits:
        return RuntimeRefusal([(c.label, c.build_row.runtime) for c in t.candidates])
    for c in fits:
        if c.build_row.runtime is None:
            c.runtime_unknown = f"whether {c.label} runs on ROCm {runtime} (its ROCm release is unknown)"
    t.candidates = fits
    return None


def _plugin_runtime_stage(state: ResolverState, t: Trial) -> Refusal | None:
    """The vendor plugin row for --runtime (one whose runtime is unknown, said so, when none is known to fit)."""
    plugin, runtime_note, offered = _plugin_for_runtime(state, t.patch.version, t.python, state.request.platform)
    if plugin is None:
        return RuntimeRefusal(offered)
    for c in t.candidates:
        c.plugin_row = plugin
        c.runtime_unknown = runtime_note
    return None


def _gpu_arch_stage(state: ResolverState, t: Trial) -> Refusal | None:
    if not state.request.gpu_arch or state.family not in ("cuda", "rocm"):
        return None
    verdicts = []
    for c in t.candidates:
        c.arch = verdict = _arch_verdict(state, t.patch.version, c, state.request.platform)
        verdicts.append((c.label, verdict))
    covered = [c for c in t.candidates if c.arch is not None and c.arch.coverage != "no"]
    if not covered:
        return GpuArchRefusal(verdicts)
    t.candidates = covered
    return None


def _driver_stage(state: ResolverState, t: Trial) -> Refusal | None:
    """Each CUDA build's driver floor (the answer names it); with --driver, the builds it meets."""
    if state.family != "cuda":
        return None
    _driver_floors(state, t)
    if state.request.driver is None:
        return None
    have = cached_version(state.request.driver)
    fits = [
        c for c in t.candidates if c.floor is None or c.floor.version is None or cached_version(c.floor.version) <= have
    ]
    if not fits:  # then every build has a known floor above the driver
        return DriverRefusal([(c.label, c.floor) for c in t.candidates if c.floor is not None])
    t.candidates = fits
    return None


def _driver_floors(state: ResolverState, t: Trial) -> None:
    """Each build's driver floor, from its toolkit (the one the default index's wheels pin, else its own) and its
    coverage of --gpu-arch."""
    pinned = state.matrix.default_toolkits(t.minor, state.request.platform)
    for c in t.candidates:
        toolkit = pinned.get(c.label) or c.build_row.runtime_full
        coverage = c.arch.coverage if c.arch is not None else None
        c.floor = driver_rule(state.matrix, c.build_row.runtime, toolkit, state.request.os, coverage)


def _companions_stage(state: ResolverState, t: Trial) -> Refusal | None:
    missing = [name for name in state.request.with_ if getattr(t.patch, name).version is None]
    if missing:
        return CompanionsRefusal(missing)
    if state.family == "xpu":
        r = state.request
        missing, row = unpublished_companions(state.matrix, t.patch.version, r.platform, r.with_)
        if missing:
            return CompanionsRefusal(missing, row)
    return None


def _known_bad_stage(state: ResolverState, t: Trial) -> Refusal | None:
    candidates, refused = screen(state, t.patch, t.python, t.candidates)
    if not candidates:
        return KnownBadRefusal(refused)
    t.candidates = candidates
    return None


#: a stage: None when the patch passes it (the stage narrows the trial's builds and notes what it found), else
#: what refused it
Stage = Callable[[ResolverState, Trial], "Refusal | None"]

#: the stages, in `STAGES` order (a test pins the keys to them): `run` folds every patch over all of them
STAGE_CHECKS: dict[str, Stage] = {
    "platform": _platform_stage,
    "python": _python_stage,
    "wheels": _wheels_stage,
    "backend": _backend_stage,
    "plugin": _plugin_stage,
    "runtime": _runtime_stage,
    "gpu_arch": _gpu_arch_stage,
    "driver": _driver_stage,
    "companions": _companions_stage,
    "known_bad": _known_bad_stage,
}
_ALL_STAGES = tuple(STAGE_CHECKS.values())
#: what the nearest-torch search folds over (`minors_past_first_stages`): the stages before the driver's, whose
#: floors it then compares with --driver
_BEFORE_DRIVER = _ALL_STAGES[: STAGE["driver"]]


def _try_patch(
    state: ResolverState, minor: TorchMinor, patch: TorchPatch, stages: tuple[Stage, ...] = _ALL_STAGES
) -> Dropout | Trial:
    """The patch through ``stages`` (a prefix of `STAGE_CHECKS`, in order): where it dropped out, or what passed."""
    trial = Trial(minor, patch)
    for index, stage in enumerate(stages):
        refusal = stage(state, trial)
        if refusal is not None:
            return Dropout(index, minor, patch, refusal)
    return trial


def _arch_verdict(state: ResolverState, version: str, c: Candidate, platform: str) -> ArchVerdict:
    """The build's coverage of --gpu-arch. An unknown list never beats a known "no": when a newer patch's
    list for this label is known and the GPU is newer than everything it ships, an older patch of the same
    label (whose list is unknown) cannot ship it either, so it inherits that "no"."""
    gpu = state.request.gpu_arch or ""
    verdict = _arch_coverage(state, version, c.label, c.build_row.runtime, platform, gpu)
    if verdict.coverage != "unknown":
        return verdict
    key = (c.label, version)
    if key not in state.arch_refused:
        state.arch_refused[key] = _newer_known_no(state, version, c, platform, gpu)
    return state.arch_refused[key] or verdict


#: (patch, build label, its runtime, platform, a --gpu-arch the matrix names) -> its coverage
_ARCH_COVERAGE: MatrixMemo[tuple[str, str, str | None, str, str], ArchVerdict] = MatrixMemo("arch_coverage")


def _arch_coverage(
    state: ResolverState, version: str, label: str, runtime: str | None, platform: str, gpu: str
) -> ArchVerdict:
    """`arch_coverage`, kept per matrix for a GPU architecture the matrix names (the patch, its build label and
    runtime and the platform it publishes them for are the matrix's own): the nearest-torch search asks it for
    every build of every minor it tries."""
    key = (version, label, runtime, platform, gpu)
    memo = _ARCH_COVERAGE.table(state.matrix)
    found = memo.get(key)
    if found is None:
        found = arch_coverage(state.matrix, version, label, runtime, platform, gpu)
        if gpu in state.matrix.gpu_archs():
            memo[key] = found
    return found


def _newer_known_no(
    state: ResolverState, version: str, c: Candidate, platform: str, gpu: str
) -> ArchVerdict | None:
    """The nearest newer patch's known verdict for this label, when it is a "no" for a GPU newer than
    everything that list ships (the request's --torch may not even match that patch)."""
    here = cached_version(version)
    newer = [
        p.version
        for m in state.matrix.torch_minors()
        for p in state.matrix.torch_patches(m)
        if cached_version(p.version) > here
    ]
    for other in sorted(newer, key=cached_version):
        known = _arch_coverage(state, other, c.label, c.build_row.runtime, platform, gpu)
        if known.coverage == "unknown":
            continue
        if known.coverage == "no" and isinstance(known.row, ArchList) and too_new_for(gpu, known.row):
            return known
        return None
    return None


#: (patch, platform, backend kind or a label the matrix publishes, family) -> the (variant, build) rows it admits
_VARIANT_ROWS: MatrixMemo[tuple[str, str, str, str], tuple[tuple[VariantAvailability, BuildVariant], ...]] = (
    MatrixMemo("variant_rows")
)


def _variants(state: ResolverState, version: str, on_platform: tuple[VariantAvailability, ...]) -> list[Candidate]:
    """Fresh candidates (the later stages annotate them) for the builds the backend request admits."""
    r = state.request
    rows: tuple[tuple[VariantAvailability, BuildVariant], ...] | None
    # keyed by the backend kind, or by a label the matrix publishes (a label is free text: any other one
    # filters directly)
    asked = r.backend.kind if r.backend.kind != "label" else r.backend.label or ""
    if r.backend.kind == "label" and state.matrix.build_variant(asked) is None:
        rows = _variant_rows(state, on_platform)
    else:
        key = (version, r.platform, asked, state.family)
        memo = _VARIANT_ROWS.table(state.matrix)
        rows = memo.get(key)
        if rows is None:
            rows = memo[key] = _variant_rows(state, on_platform)
    return [Candidate(v.label, v, build) for v, build in rows]


def _variant_rows(
    state: ResolverState, on_platform: tuple[VariantAvailability, ...]
) -> tuple[tuple[VariantAvailability, BuildVariant], ...]:
    if state.family == "mps" and state.request.os != "macos":
        return ()
    if state.family in PLUGIN_FAMILIES:
        install = state.matrix.vendor_install(PLUGINS[state.family].install_note)
        if install is not None and state.request.platform not in install.platforms:
            return ()
    out = []
    for v in on_platform:
        build = state.matrix.build_variant(v.label)
        if build is None:
            continue
        if state.request.backend.kind == "label":
            ok = v.label == state.request.backend.label or _same_rocm_line(state.request.backend.label or "", build)
        elif state.family in CPU_WHEEL_FAMILIES:
            ok = build.family == "cpu"
        else:
            ok = build.family == state.family
        if ok:
            out.append((v, build))
    return tuple(out)


def _same_rocm_line(label: str, build: BuildVariant) -> bool:
    """--backend rocm6.2 (a major.minor label) takes every rocm6.2.x build (rocm6.2.4 too)."""
    if build.family != "rocm" or not label.startswith("rocm") or build.runtime is None:
        return False
    asked = label[4:].split(".")
    return len(asked) == 2 and build.runtime.split(".")[:2] == asked


def _plugin_row(state: ResolverState, torch_version: str, python: str, platform: str) -> PluginRow | None:
    fits = _plugin_rows(state, torch_version, python, platform)
    return fits[0] if fits else None


def _plugin_rows(state: ResolverState, torch_version: str, python: str, platform: str) -> list[PluginRow]:
    """The plugin rows for this torch and Python, best first: not end-of-life, then the newest release."""
    plugin = PLUGINS[state.family]
    rows = getattr(state.matrix, plugin.table)()
    name = plugin.version_field
    want = Version(torch_version)
    fits = [
        r
        for r in rows
        if Version(r.torch).release == want.release
        and not Version(getattr(r, name)).is_prerelease
        and python in _plugin_pythons(r, platform, python)
    ]
    fits.sort(
        key=lambda r: (not isinstance(r, AscendNpuRow) or r.status != "eol", Version(getattr(r, name))), reverse=True
    )
    return fits


def _plugin_for_runtime(
    state: ResolverState, torch_version: str, python: str, platform: str
) -> tuple[PluginRow | None, str | None, list[tuple[str, str | None]]]:
    """The best plugin row for --runtime: one whose runtime the matrix maps to it, else one whose runtime is
    unknown (the answer says so); with neither, what the rows need instead."""
    plugin = PLUGINS[state.family]
    column = RUNTIME_COLUMNS[state.family]
    rows = _plugin_rows(state, torch_version, python, platform)
    have = state.request.runtime or ""
    known = [r for r in rows if runtime_fits(state.family, have, getattr(r, column)) is True]
    if known:
        return known[0], None, []
    unknown = [r for r in rows if runtime_fits(state.family, have, getattr(r, column)) is None]
    if unknown:
        row = unknown[0]
        name = RUNTIME_NAMES[state.family]
        package = f"{plugin.package} {getattr(row, plugin.version_field)}"
        note = f"whether {package} runs on {name} {have} (no sourced {name} version)"
        return row, note, []
    return None, None, [(getattr(r, plugin.version_field), getattr(r, column)) for r in rows]


def _plugin_pythons(row: PluginRow, platform: str, python: str) -> list[str]:
    """The Pythons a plugin row has wheels for on this platform: per architecture where the index gives
    them, else the row's list; a row without a list (unknown) admits the asked Python."""
    by_platform = row.python_by_platform if isinstance(row, AscendNpuRow) else None  # Cambricon's has none
    if by_platform:  # the request's platform is one of PLATFORMS (parsing checks it), the Literal the rows key by
        return list(by_platform.get(cast("Platform", platform)) or [])
    return list(row.python) if row.python is not None else [python]


def _best(state: ResolverState, candidates: list[Candidate]) -> Candidate:
    have = cached_version(state.request.driver) if state.request.driver is not None else None

    def key(c: Candidate) -> tuple[int, int, Version]:
        known = 0 if c.arch is not None and c.arch.coverage == "unknown" else 1
        # a build the driver runs only if the (unnamed) GPU has SASS in it yields to one it runs on any GPU
        sure = 1
        if have is not None and (c.arch is None or c.arch.coverage == "unknown") and c.floor is not None:
            own = c.floor.toolkit_floor
            sure = 0 if own is not None and have < cached_version(own) else 1
        return known, sure, cached_version(c.build_row.runtime or "0")

    return max(candidates, key=key)


def _newest_gil_python(pythons: list[str]) -> str | None:
    gil = [p for p in pythons if not p.endswith("t")]
    return gil[-1] if gil else None
