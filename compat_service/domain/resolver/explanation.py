"""Explain why nothing fits, and what would: the one home of failures and their nearest alternatives.

- `explain_failure` / `torch_not_found`: the `Conflict` for the furthest stage any candidate patch reached.
  Each message names the constraints that clashed and where they came from ("torch 2.3 supports Python
  3.8–3.12; you asked for 3.13").
- `nearby_requests`: the failed request with one or two flags changed, resolved for real (never guessed)
  with the resolve function the caller passes in (so this module does not import the stages): the newest
  torch for that Python, the Python the asked torch supports, the CPU build, the driver to install, a
  build label the release publishes, the request without companions.
- `to_error`: the `Conflict` and its alternatives as the public `UnsatisfiableError` subclass named by its
  code (compat_service/domain/errors.py; imported only on failure: it pulls pydantic).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from packaging.version import Version

from compat_service.domain.backends import CPU_WHEEL_FAMILIES, PLUGINS, RUNTIME_NAMES, python_sort_key
from compat_service.domain.hardware_rules import newest_cuda_for_driver
from compat_service.domain.matrix.memo import MatrixMemo, RequestMemo
from compat_service.domain.record import Record
from compat_service.domain.resolver.conflict import CauseRow, Conflict
from compat_service.domain.resolver.request import BackendSpec, TorchSpec
from compat_service.domain.resolver.state import (
    STAGE,
    STAGES,
    BackendRefusal,
    CompanionsRefusal,
    DriverRefusal,
    Dropout,
    GpuArchRefusal,
    KnownBadRefusal,
    PlatformRefusal,
    PythonRefusal,
    Refusal,
    ResolverState,
    RuntimeRefusal,
    WheelsRefusal,
)
from compat_service.domain.resolver.vendor_rules import rocm_window
from compat_service.domain.resolver.wheel_tags import host_words

if TYPE_CHECKING:
    from compat_service.domain.errors import UnsatisfiableError
    from compat_service.domain.hardware_rules import DriverRule
    from compat_service.domain.matrix.interface import Matrix
    from compat_service.domain.resolver.request import ResolveRequest

class Fit(NamedTuple):
    """What the search reads of a nearby request's answer (the stages' `try_resolve` builds no more of it)."""

    torch_version: str
    backend: str
    family: str
    python: str


#: resolves a request without raising (None when it does not resolve): the stages' `try_resolve`
TryResolve = Callable[["ResolveRequest", "Matrix"], "Fit | None"]
#: the torch minors that pass the first stages for a request with its --torch set to them (the stages'
#: `minors_past_first_stages`): the others cannot resolve, so the nearest-torch search skips them unresolved
FirstStages = Callable[["ResolveRequest", "Matrix"], frozenset[str]]

#: what to change in a request to run a nearby one (a parameter's new value; None: drop it)
Flags = dict[str, "str | None"]


def torch_not_found(state: ResolverState) -> Conflict:
    versions = [p.version for m in state.matrix.torch_minors() for p in state.matrix.torch_patches(m)]
    known = (
        f"the matrix knows torch {versions[-1]} to {versions[0]}" if versions else "the matrix is empty"
    )
    return Conflict(
        "torch-not-found",
        f"no torch release in the matrix matches --torch {state.request.torch.text}",
        hint="ask for a version the matrix lists (`accelenv matrix show`), or 'latest'",
        causes=[(f"torch {state.request.torch.text}", "request: --torch", known)],
    )


class Failure(Record):
    """What every stage's explanation reads: the furthest stage's dropouts, one per minor, and the --torch cause."""

    __slots__ = ("state", "deaths", "by_minor", "asked", "torch_cause")
    state: ResolverState
    deaths: list[Dropout]
    #: the first dropout of each minor, newest first
    by_minor: dict[str, Dropout]
    #: "torch <the --torch text>"
    asked: str
    torch_cause: CauseRow

    def __init__(
        self,
        state: ResolverState,
        deaths: list[Dropout],
        by_minor: dict[str, Dropout],
        asked: str,
        torch_cause: CauseRow,
    ) -> None:
        self.state = state
        self.deaths = deaths
        self.by_minor = by_minor
        self.asked = asked
        self.torch_cause = torch_cause


_R = TypeVar("_R", bound=Refusal)


def _info(dropout: Dropout, kind: type[_R]) -> _R:
    """What the stage that refused ``dropout`` said (every dropout a stage's explanation reads is that stage's)."""
    assert isinstance(dropout.info, kind)
    return dropout.info


def explain_failure(state: ResolverState, stage: str, deaths: list[Dropout]) -> Conflict:
    """The `Conflict` for ``stage``, the furthest one any candidate patch reached (`EXPLAIN[stage]`)."""
    r = state.request
    asked = f"torch {r.torch.text}"
    by_minor: dict[str, Dropout] = {}
    for d in deaths:
        by_minor.setdefault(d.minor.minor, d)
    torch_cause: CauseRow = (asked, "request: --torch", f"matches {_span(deaths)}")
    conflict = EXPLAIN[stage](Failure(state, deaths, by_minor, asked, torch_cause))
    conflict.stage = stage
    return conflict


def _explain_platform(f: Failure) -> Conflict:
    r = f.state.request
    causes = [f.torch_cause] + [
        (
            f"torch {m} wheels",
            f"matrix: torch_releases {m}",
            f"published for {', '.join(_info(d, PlatformRefusal).platforms)}",
        )
        for m, d in f.by_minor.items()
    ]
    causes.append((f"platform {r.platform}", "request: --os/--arch", None))
    unknown = _unsourced(f.state, f.by_minor)
    causes += unknown
    if unknown and len(unknown) == len(f.by_minor):
        return Conflict(
            "platform-unsupported",
            f"the matrix does not know whether {f.asked} publishes wheels for {r.platform}: "
            "no source lists its builds there",
            hint="run `accelenv matrix refresh` to read the package index, or pick a release the matrix "
            "knows for this platform",
            causes=causes,
        )
    return Conflict(
        "platform-unsupported",
        f"{f.asked} publishes no wheels for {r.platform}",
        hint="pick another torch version or platform",
        causes=causes,
    )


def _explain_python(f: Failure) -> Conflict:
    r = f.state.request
    ranges = {m: _py_range(_info(d, PythonRefusal).pythons) for m, d in f.by_minor.items()}
    parts = [f"torch {m} supports Python {span} on {r.platform}" for m, span in ranges.items()]
    message = "; ".join(parts) + f"; you asked for {r.python}"
    causes: list[CauseRow] = [
        (f"python in {span}", f"matrix: torch_releases {m} python", None) for m, span in ranges.items()
    ]
    # (the Pythons of every refusing release: read only when more than three minors refused)
    refused = {p for d in f.deaths for p in _info(d, PythonRefusal).pythons} if len(f.by_minor) > 3 else set()
    everywhere = sorted(refused, key=python_sort_key)
    if len(f.by_minor) > 3 and everywhere and r.python:
        # Every release refused it: one line, the span of all of them (e.g. Python 2.7, 3.99).
        message = (
            f"no torch release in the matrix supports Python {r.python} on {r.platform}; "
            f"{_span(f.deaths)} span Python {_py_range(everywhere)}"
        )
        causes = causes[:1] + causes[-1:]
    causes.append((f"python == {r.python}", "request: --python", None))
    return Conflict(
        "python-unsupported",
        message,
        hint="use a Python the release supports, or a release that supports your Python",
        causes=causes,
        facts={"python": r.python},
    )


def _explain_wheels(f: Failure) -> Conflict:
    """A pinned wheel that does not install on the target: its platform tags (glibc, musl, macOS) or its
    Python (no wheel, or a Requires-Python that excludes the full version)."""
    r = f.state.request
    blocked = [b for d in f.deaths for b in _info(d, WheelsRefusal).blocked]
    lines = list(dict.fromkeys(b.why for b in blocked))
    causes: list[CauseRow] = [f.torch_cause]
    origin = "matrix: package index wheel files (torch_releases wheels, host_rules, mps)"
    causes += [(why, origin, None) for why in lines[:4]]
    if all(b.kind == "python" for b in blocked):
        causes.append((f"python == {r.python_version or r.python}", "request: --python", None))
        return Conflict(
            "python-unsupported",
            f"no {f.asked} install fits Python {r.python_version or r.python}: {lines[0]}",
            hint="use another Python patch or minor, or another torch release",
            causes=causes,
            facts={"python": r.python},
        )
    host = host_words(f.state)
    causes.append((host, "request: --glibc/--musl/--macos (or this host's)", None))
    if r.musl is not None:
        return Conflict(
            "platform-unsupported",
            f"PyTorch publishes no musllinux wheels: no torch release installs on a {host} host (Alpine)",
            hint="use a glibc-based image or host (Debian, Ubuntu: e.g. python:3.12-slim) and resolve with "
            "--glibc for it",
            causes=causes,
        )
    floors = [b.floor for b in blocked if b.floor is not None]
    lowest = min(floors, key=lambda fl: fl.version).text if floors else "a newer platform"
    return Conflict(
        "platform-unsupported",
        f"no {f.asked} wheel installs on {host}: {lines[0]} (the lowest need: {lowest})",
        hint=f"pick an older torch release whose wheels the target's {host.split()[0]} meets, or upgrade the "
        f"target to {lowest}",
        causes=causes,
    )


def _explain_plugin(f: Failure) -> Conflict:
    r = f.state.request
    plugin = PLUGINS[f.state.family]
    name = plugin.package
    rows = getattr(f.state.matrix, plugin.table)()
    torches = sorted({row.torch for row in rows}, key=Version, reverse=True)
    causes = [
        f.torch_cause,
        (
            f"{name} for torch {_span(f.deaths)} and Python {r.python or 'any'}",
            "request: --backend " + r.backend.text,
            f"vendor_backends lists {name} for torch {', '.join(torches[:8]) or 'nothing'}",
        ),
    ]
    return Conflict(
        "variant-not-published",
        f"{name} is not published for {f.asked} (Python {r.python or 'any'})",
        hint=f"choose a torch version {name} supports",
        causes=causes,
    )


def _explain_gpu_arch(f: Failure) -> Conflict:
    r = f.state.request
    causes: list[CauseRow] = [f.torch_cause, (f"gpu arch {r.gpu_arch}", "request: --gpu-arch", None)]
    for d in list(f.by_minor.values())[:2]:
        for label, verdict in _info(d, GpuArchRefusal).verdicts:
            assert verdict.row is not None  # a "no" rests on the row that says so
            causes.append(
                (
                    f"{label} of torch {d.patch.version} ships {verdict.shipped}",
                    f"matrix: gpu_archs ({', '.join(verdict.row.source)})",
                    None,
                )
            )
    return Conflict(
        "gpu-arch-unsupported",
        f"no {f.state.family} build of {f.asked} for {r.platform} runs on {r.gpu_arch}",
        hint="pick a torch release whose builds still (or already) ship this architecture",
        causes=causes,
        facts={"gpu_arch": r.gpu_arch},
    )


def _explain_driver(f: Failure) -> Conflict:
    r = f.state.request
    floors = [(label, rule) for d in f.deaths for label, rule in _info(d, DriverRefusal).floors]
    needed = min((rule.version for _, rule in floors if rule.version), key=Version)
    runs = newest_cuda_for_driver(f.state.matrix, r.driver or "0", r.os)
    lowest_cuda = min(
        (rule.toolkit.version for _, rule in floors if rule.toolkit is not None), key=Version, default="?"
    )
    runs_text = f"runs CUDA <= {runs}" if runs else "is older than every CUDA toolkit the matrix lists"
    message = (
        f"driver {r.driver} is below the floor of every {f.asked} CUDA build for {r.platform} "
        f"(the lowest: >= {needed}; CUDA >= {lowest_cuda})"
    )
    causes: list[CauseRow] = [f.torch_cause, (f"driver {r.driver}", "request: --driver", runs_text)]
    for label, rule in dict(floors).items():
        causes.append(
            (
                f"{label} needs driver >= {rule.version} ({rule.rule})",
                f"matrix: cuda {rule.toolkit.version if rule.toolkit else ''} "
                f"({', '.join(rule.toolkit.source) if rule.toolkit else 'unknown'})"
                + (f"; matrix: cuda minor_version_compatibility {rule.major_row.cuda_major}.x from "
                   f"{rule.major_floor} ({', '.join(rule.major_row.source)})"
                   if rule.major_row is not None and rule.major_floor else ""),
                _rule_detail(rule, r.gpu_arch),
            )
        )
    hint = (
        f"install NVIDIA driver >= {needed}, or use the CPU build. The rule: a CUDA build runs on a driver "
        "that meets its CUDA major's minor-version-compatibility floor when the GPU has SASS in the build, "
        "and needs its toolkit's own floor when the GPU runs it only through the build's PTX"
    )
    return Conflict("driver-too-old", message, hint=hint, causes=causes, facts={"driver_needed": needed})


def _explain_companions(f: Failure) -> Conflict:
    missing = sorted({n for d in f.deaths for n in _info(d, CompanionsRefusal).missing})
    unpublished = [d for d in f.deaths if _info(d, CompanionsRefusal).unpublished is not None]
    if unpublished and len(unpublished) == len(f.deaths):
        return _explain_unpublished(f, missing, unpublished)
    causes = [f.torch_cause] + [
        (
            f"{n} for torch {d.patch.version}",
            f"matrix: torch_releases {d.patch.version}",
            "unknown (null)",
        )
        for d in f.deaths[:4]
        for n in _info(d, CompanionsRefusal).missing
    ]
    return Conflict(
        "companion-unknown",
        f"the matrix has no {' or '.join(missing)} version for {f.asked}",
        hint="drop the companion with --with, or pick another torch version",
        causes=causes,
        facts={"missing": missing},
    )


def _explain_known_bad(f: Failure) -> Conflict:
    """Every build that fits is one a ``never`` rule of known_bad.yaml passes over (known_bad.py)."""
    refused = [(d.patch.version, c.label, rule) for d in f.deaths for c, rule in _info(d, KnownBadRefusal).refused]
    version, label, rule = refused[0]
    causes: list[CauseRow] = [f.torch_cause]
    seen: set[str] = set()
    for v, lab, rl in refused:
        if rl.id in seen:
            continue
        seen.add(rl.id)
        causes.append((f"torch {v} {lab}", f"matrix: known_bad.yaml {rl.id} ({', '.join(rl.source)})", rl.effect))
    return Conflict(
        "known-bad",
        f"torch {version} {label} is a known-bad combination for this target: {rule.effect} "
        f"[known issue {rule.id}: {', '.join(rule.source)}]",
        hint="take a request under 'what would work' (another patch or build of torch), or change the target",
        causes=causes[:8],
        facts={"rules": sorted(seen)},
    )


def _explain_unpublished(f: Failure, missing: list[str], deaths: list[Dropout]) -> Conflict:
    """The xpu index publishes no companion wheels for these releases on this platform (xpu.yaml)."""
    row = _info(deaths[0], CompanionsRefusal).unpublished
    assert row is not None  # (the caller passes the dropouts that have one)
    platform = f.state.request.platform
    causes = [f.torch_cause] + [
        (
            f"{' and '.join(missing)} for torch {row.torch} on {platform}",
            f"matrix: xpu support {row.torch} ({', '.join(row.source)})",
            "no wheels on the xpu index: build them from source, or install torch alone",
        )
    ]
    return Conflict(
        "companion-unknown",
        f"the xpu index publishes no {' or '.join(missing)} wheels for torch {row.torch} on {platform}",
        hint="install torch alone (--with none) and build the companions from source, or pick a newer torch",
        causes=causes,
        facts={"missing": missing},
    )


def _unsourced(state: ResolverState, by_minor: dict[str, Dropout]) -> list[CauseRow]:
    """Minors whose builds for this platform no source lists: 'not published' is unknown there."""
    return [
        (
            f"torch {m} builds for {state.request.platform}",
            f"matrix: torch_releases {m} platforms_unsourced",
            "no source lists them: unknown, not established as unpublished",
        )
        for m, d in by_minor.items()
        if state.request.platform in (d.minor.platforms_unsourced or [])
    ]


def _explain_backend(f: Failure) -> Conflict:
    state, asked, by_minor, torch_cause = f.state, f.asked, f.by_minor, f.torch_cause
    r = state.request
    wanted = r.backend.text
    if state.family == "mps" and r.os != "macos":
        return Conflict(
            "backend-unavailable",
            f"MPS exists only on macOS; the target is {r.platform}",
            hint="use --os macos --arch arm64, or another backend",
            causes=[
                (f"backend {wanted}", "request: --backend", None),
                (f"platform {r.platform}", "request: --os/--arch", None),
            ],
        )
    if state.family in PLUGINS:
        plugin = PLUGINS[state.family]
        install = state.matrix.vendor_install(plugin.install_note)
        if install is not None and r.platform not in install.platforms:
            return Conflict(
                "backend-unavailable",
                f"{plugin.package} is published only for {', '.join(install.platforms)}; the target is "
                f"{r.platform}",
                hint="use a Linux target for --backend " + wanted + ", or another backend",
                causes=[
                    (f"backend {wanted}", "request: --backend", None),
                    (
                        f"{plugin.package} platforms",
                        f"matrix: vendor_backends installs {plugin.install_note} ({', '.join(install.source)})",
                        ", ".join(install.platforms),
                    ),
                    (f"platform {r.platform}", "request: --os/--arch", None),
                ],
            )
    anywhere = _published_anywhere(state)
    causes = [torch_cause, (f"backend {wanted}", "request: --backend", None)]
    for m, d in list(by_minor.items())[:3]:
        causes.append(
            (
                f"torch {m} on {r.platform} publishes {', '.join(_info(d, BackendRefusal).labels)}",
                f"matrix: torch_releases {m} variants",
                None,
            )
        )
    unknown = _unsourced(state, by_minor)
    causes += unknown
    if unknown and len(unknown) == len(by_minor):
        known = ", ".join(sorted({label for d in by_minor.values() for label in _info(d, BackendRefusal).labels}))
        return Conflict(
            "variant-not-published",
            f"the matrix does not know whether {asked} publishes a {wanted} build for {r.platform}: no source "
            f"lists its /whl/<label> builds there (known: {known})",
            hint="run `accelenv matrix refresh` where PyTorch's variant indexes can be reached, or pick a "
            "release whose builds the matrix lists",
            causes=causes,
        )
    if not anywhere:
        return Conflict(
            "backend-unavailable",
            f"no torch release in the matrix publishes a {wanted} build for {r.platform}",
            hint="use another backend (cpu always exists) or another platform",
            causes=causes,
        )
    return Conflict(
        "variant-not-published",
        f"{asked} publishes no {wanted} build for {r.platform}",
        hint="pick a build label that release publishes, or a torch release that has it",
        causes=causes,
    )


#: (platform, backend kind, family or a label the matrix publishes) -> whether any release publishes such a build
_PUBLISHED_ANYWHERE: MatrixMemo[tuple[str, str, str], bool] = MatrixMemo("published_anywhere")


def _published_anywhere(state: ResolverState) -> bool:
    """Whether any release publishes the asked build (a label, or the family's) for the platform; kept per
    matrix for a family or a label the matrix publishes, computed for any other label."""
    r = state.request
    asked = r.backend.label if r.backend.kind == "label" else None
    key = (r.platform, r.backend.kind, asked or state.family)
    memo = _PUBLISHED_ANYWHERE.table(state.matrix)
    found = memo.get(key)
    if found is None:
        found = any(
            r.platform in v.platforms and _family_matches(state, v.label)
            for m in state.matrix.torch_minors()
            for v in m.variants
        )
        if asked is None or state.matrix.build_variant(asked) is not None:
            memo[key] = found
    return found


def _family_matches(state: ResolverState, label: str) -> bool:
    if state.request.backend.kind == "label":
        return label == state.request.backend.label
    build = state.matrix.build_variant(label)
    return build is not None and build.family == (
        "cpu" if state.family in CPU_WHEEL_FAMILIES else state.family
    )


def _py_range(pythons: list[str]) -> str:
    gil = [p for p in pythons if not p.endswith("t")]
    if not gil:
        return ", ".join(pythons) or "no Python"
    text = gil[0] if len(gil) == 1 else f"{gil[0]}–{gil[-1]}"
    threaded = [p for p in pythons if p.endswith("t")]
    return text + (f" (+{', '.join(threaded)})" if threaded else "")


def _span(deaths: list[Dropout]) -> str:
    versions = [d.patch.version for d in deaths]
    if not versions:
        return "nothing"
    return versions[0] if len(versions) == 1 else f"{versions[-1]}–{versions[0]}"


_CPU = BackendSpec("cpu", "label", "cpu")
#: the stages before `wheels`, the first that reads a build: they read none of the request's build fields (backend,
#: driver, GPU, runtime), only its torch, platform and Python, so a request every patch of which dropped out there
#: drops out there with the CPU build too (not tried)
_BUILD_BLIND = frozenset(STAGES[: STAGE["wheels"]])


#: (a ResolveRequest, its failure's code and facts, the resolving function) -> the nearby requests that resolve,
#: as the error lists them (text, flags as pairs)
_NEARBY: RequestMemo[
    tuple[ResolveRequest, str, tuple[tuple[str, object], ...], TryResolve],
    tuple[tuple[str, tuple[tuple[str, str | None], ...]], ...],
] = RequestMemo("nearby")
#: (a ResolveRequest with its torch blanked, the asked minor's position) -> that request with the nearest minor that
#: resolves, None = none
_NEAREST_TORCH: RequestMemo[tuple[ResolveRequest, int], ResolveRequest | None] = RequestMemo("nearest_torch")


def nearby_requests(
    conflict: Conflict, request: ResolveRequest, matrix: Matrix, try_resolve: TryResolve, first_stages: FirstStages
) -> list[tuple[str, Flags]]:
    """The nearby requests that resolve, nearest first (`_search_nearby`). Kept per matrix (bounded, oldest
    dropped), like the searches' own answers (`try_resolve`'s): the search is a function of the request, its
    failure's code and facts, and the matrix, and pipelines and the web selector send the same failing requests
    again and again. The failure itself is found and explained for every request."""
    def key() -> tuple[ResolveRequest, str, tuple[tuple[str, object], ...], TryResolve]:
        facts = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in sorted(conflict.facts.items()))
        return (request, conflict.code, facts, try_resolve)

    def search() -> tuple[tuple[str, tuple[tuple[str, str | None], ...]], ...]:
        searched = _search_nearby(conflict, request, matrix, try_resolve, first_stages)
        return tuple((text, tuple(flags.items())) for text, flags in searched)

    return [(text, dict(flags)) for text, flags in _NEARBY.recall(matrix, key, search)]


def _search_nearby(
    conflict: Conflict, request: ResolveRequest, matrix: Matrix, try_resolve: TryResolve, first_stages: FirstStages
) -> list[tuple[str, Flags]]:
    # the requests this search resolves, each once (the nearest torch's is listed again below)
    answers: dict[ResolveRequest, Fit | None] = {}

    def resolved(candidate: ResolveRequest, m: Matrix) -> Fit | None:
        if candidate not in answers:
            answers[candidate] = try_resolve(candidate, m)
        return answers[candidate]

    tries: list[tuple[str, ResolveRequest, Flags]] = []
    code = conflict.code
    minors = [m.minor for m in matrix.torch_minors()]  # newest first
    asked = _asked_minor(request, minors)
    if request.torch.kind != "latest":
        nearest = _nearest_fitting_torch(request, matrix, minors, asked, resolved, first_stages)
        if nearest is not None:
            tries.append(("the nearest torch release that fits the rest of the request", nearest, {}))
    if code == "python-unsupported":
        tries.append(
            ("a Python the asked torch supports", request.changed(python=None, python_version=None), {})
        )
    if code == "runtime-mismatch":
        name = RUNTIME_NAMES.get(request.backend.family or "", "runtime")
        for runtime in conflict.facts.get("runtimes", [])[:2]:
            tries.append((f"with {name} {runtime} installed", request.changed(runtime=runtime), {"runtime": runtime}))
    if code == "driver-too-old":
        needed = conflict.facts["driver_needed"]
        if request.backend.kind == "label":
            # cu130 asked on a driver of CUDA 12.x: the build of the family that driver runs (cu128, ...)
            family = BackendSpec("cuda", "family", "cuda")
            tries.append((f"the CUDA build driver {request.driver} runs", request.changed(backend=family), {}))
        tries.append(
            (f"install NVIDIA driver >= {needed}", request.changed(driver=needed), {"driver": needed})
        )
    if code == "backend-unavailable" and request.backend.kind == "label" and request.backend.family == "cuda":
        # --backend cu122 (what nvidia-smi's "CUDA Version: 12.2" suggests): the nearest CUDA builds published
        for label in _nearest_cuda_labels(request, matrix):
            nearest = request.changed(backend=BackendSpec(label, "label", "cuda"))
            tries.append((f"the nearest published CUDA build, {label}", nearest, {}))
        family = BackendSpec("cuda", "family", "cuda")
        tries.append(("the best CUDA build for the rest of the request", request.changed(backend=family), {}))
    if (
        code == "variant-not-published"
        and request.backend.kind == "label"
        and request.backend.family not in (None, "cpu")
    ):
        family = BackendSpec(request.backend.family or "", "family", request.backend.family)
        tries.append(
            (
                f"the best {request.backend.family} build of the asked torch",
                request.changed(backend=family),
                {},
            )
        )
    if code == "gpu-arch-unsupported" and request.torch.kind == "latest":
        # Older releases may still ship an architecture newer ones dropped (sm_50, sm_61, sm_70).
        for minor in matrix.torch_minors():
            older = request.changed(torch=TorchSpec(minor.minor, "minor"))
            if resolved(older, matrix) is not None:
                tries.append(("the newest torch whose builds still ship this GPU architecture", older, {}))
                break
    if code == "companion-unknown":
        known = tuple(n for n in request.with_ if n not in conflict.facts.get("missing", ()))
        tries.append(
            (
                "without the companions the matrix cannot pin",
                request.changed(with_=known),
                {"with": ",".join(known) or "none"},
            )
        )
    if request.backend.family != "cpu" and conflict.stage not in _BUILD_BLIND:
        cpu = request.changed(backend=_CPU, driver=None, gpu_arch=None, gpu=None, runtime=None)
        tries.append(("the CPU build", cpu, {"backend": "cpu"}))

    out: list[tuple[str, Flags]] = []
    distance: list[tuple[int, int]] = []
    seen: set[tuple[tuple[str, str], ...]] = set()
    asked_strings = request.to_strings()
    for description, candidate, fixed in tries:
        res = resolved(candidate, matrix)
        if res is None:
            continue
        flags = _changes(asked_strings, request, candidate, res) | fixed
        key = tuple(sorted((k, str(v)) for k, v in flags.items()))
        if key in seen:
            continue
        seen.add(key)
        out.append(
            (f"{description}: torch {res.torch_version} ({_build_words(res)}) on Python {res.python}", flags)
        )
        distance.append((_distance(res.torch_version, minors, asked), _host_change(request, candidate)))
    # Nearest to the request first: the asked torch (fewest minors away), then the smallest change to the
    # host (another CUDA build < a Python < a driver or runtime upgrade < giving up the accelerator); equal
    # ones keep the order they were tried in.
    order = sorted(range(len(out)), key=lambda i: distance[i])
    return [out[i] for i in order]


def _build_words(res: Fit) -> str:
    """``cu126``; a plugin or MPS answer as its family on the CPU wheel (``npu on cpu``)."""
    return res.backend if res.family in (res.backend, "cuda", "rocm", "xpu") else f"{res.family} on {res.backend}"


def _changes(before: dict[str, str], request: ResolveRequest, candidate: ResolveRequest, res: Fit) -> Flags:
    """What to change in ``request`` to run ``candidate`` as resolved: every parameter whose value differs (None:
    drop it), with --torch and --python pinned to the answer's and --backend to its build where that build is the
    family's own (an npu, mlu or mps answer's build label is the CPU wheel's: the family stays). The request with
    these changes applied is an answer, run as given (tests/domain/test_every_alternative_resolves.py).
    ``before``: ``request.to_strings()``, read once per search."""
    after = candidate.to_strings()
    flags: Flags = {k: v for k, v in after.items() if before.get(k) != v}
    flags.update({k: None for k in before if k not in after})
    flags["torch"] = res.torch_version
    python = candidate.python_version
    flags["python"] = python if python is not None and python.startswith(res.python + ".") else res.python
    if res.family == res.backend or res.family in ("cuda", "rocm", "xpu") and res.backend != "cpu":
        if candidate.backend != request.backend or request.backend.kind == "family":
            flags["backend"] = res.backend
    return {k: flags[k] for k in ("torch", "python", *sorted(k for k in flags if k not in ("torch", "python")))}


def _host_change(request: ResolveRequest, candidate: ResolveRequest) -> int:
    """How much an alternative changes the target: 0 none, more for a bigger change to the host."""
    cost = 0
    if candidate.backend.family != request.backend.family:
        cost += 4  # another family: the CPU build gives up the accelerator
    elif candidate.backend != request.backend:
        cost += 1
    if candidate.python != request.python:
        cost += 1
    if candidate.with_ != request.with_:
        cost += 1
    if candidate.driver != request.driver or candidate.runtime != request.runtime:
        cost += 2  # install another driver / vendor runtime
    return cost


def _nearest_cuda_labels(request: ResolveRequest, matrix: Matrix) -> list[str]:
    """The published CUDA labels nearest to the asked one (cu122 -> cu121 and cu124), below first."""
    asked = _cuda_number(request.backend.text)
    if asked is None:  # not a CUDA label: no CUDA neighbours
        return []
    labels = {
        v.label
        for m in matrix.torch_minors()
        for v in m.variants
        if request.platform in v.platforms and _cuda_number(v.label) is not None
    }
    below = sorted((lb for lb in labels if (_cuda_number(lb) or 0) < asked), key=lambda lb: _cuda_number(lb) or 0)[-1:]
    above = sorted((lb for lb in labels if (_cuda_number(lb) or 0) > asked), key=lambda lb: _cuda_number(lb) or 0)[:1]
    return below + above


def _cuda_number(label: str) -> int | None:
    """'cu122' -> 122, 'cu118' -> 118; None for other labels."""
    digits = label[2:]
    return int(digits) if label.startswith("cu") and digits.isdigit() else None


def _asked_minor(request: ResolveRequest, minors: list[str]) -> int:
    """Where the asked torch sits in the newest-first list of minors (0, the newest, for latest/specifiers)."""
    if request.torch.kind in ("minor", "exact"):
        text = ".".join(request.torch.text.split(".")[:2])
        if text in minors:
            return minors.index(text)
    return 0


def _distance(version: str, minors: list[str], asked: int) -> int:
    minor = ".".join(version.split(".")[:2])
    return abs(minors.index(minor) - asked) if minor in minors else len(minors)


def _nearest_fitting_torch(
    request: ResolveRequest,
    matrix: Matrix,
    minors: list[str],
    asked: int,
    try_resolve: TryResolve,
    first_stages: FirstStages,
) -> ResolveRequest | None:
    """The request with the nearest torch minor (either side of the asked one, newer first on a tie) that
    resolves; the minors are tried in order of distance, so a close one is found in a few resolves."""
    # Answers are kept per matrix (bounded): the search depends on the request but its torch and on where the
    # asked minor sits, and many failing requests share both (a pipeline's matrix, the web selector); the request
    # found is the key's with the nearest minor, so it is kept whole.
    def nearest() -> ResolveRequest | None:
        passing = first_stages(request, matrix)
        by_distance = sorted((i for i in range(len(minors)) if minors[i] in passing), key=lambda i: (abs(i - asked), i))
        for index in by_distance:
            candidate = request.changed(torch=TorchSpec(minors[index], "minor"))
            if try_resolve(candidate, matrix) is not None:
                return candidate
        return None

    return _NEAREST_TORCH.recall(matrix, lambda: (request.changed(torch=_ANY_TORCH), asked), nearest)


_ANY_TORCH = TorchSpec("latest", "latest")


def _explain_runtime(f: Failure) -> Conflict:
    state, asked, deaths, torch_cause = f.state, f.asked, f.deaths, f.torch_cause
    r = state.request
    name = RUNTIME_NAMES.get(state.family, "runtime")
    what = PLUGINS[state.family].package if state.family in PLUGINS else f"{state.family} build"
    offered: dict[str, str | None] = {}
    for d in deaths:
        for label, needs in _info(d, RuntimeRefusal).offered:
            offered.setdefault(label, needs)
    needs_text = ", ".join(f"{label} needs {name} {needs or 'unknown'}" for label, needs in list(offered.items())[:6])
    causes = [torch_cause, (f"{name} {r.runtime}", "request: --runtime", None)]
    table = "vendor_backends" if state.family in PLUGINS else "build_variants / rocm"
    causes += [
        (f"{label} needs {name} {needs or 'unknown'}", f"matrix: {table}", None)
        for label, needs in list(offered.items())[:6]
    ]
    runtimes = sorted({n for n in offered.values() if n}, reverse=True)
    window = rocm_window(state.matrix, r.runtime or "") if state.family == "rocm" else None
    if window is not None:
        causes.append(
            (
                f"the ROCm {window.kmd} kernel driver runs ROCm user space {', '.join(window.user_space)}",
                f"matrix: rocm kernel_user_space ({', '.join(window.source)})",
                "AMD's tested window; a ROCm wheel bundles its user space",
            )
        )
    return Conflict(
        "runtime-mismatch",
        f"no {what} for {asked} fits {name} {r.runtime}: {needs_text}",
        hint=f"install the {name} version a release needs ({', '.join(runtimes) or 'see the causes'}), or ask for "
        f"a torch release whose {what} the matrix maps to {name} {r.runtime}",
        causes=causes,
        facts={"runtimes": runtimes},
    )


def _rule_detail(rule: DriverRule, gpu_arch: str | None) -> str | None:
    if rule.rule == "toolkit-floor" and rule.coverage == "ptx":
        return f"{gpu_arch} runs it only through PTX JIT: the toolkit's own floor applies"
    if rule.rule == "toolkit-floor":
        return "no minor-version compatibility for this CUDA major: the toolkit's own floor applies"
    return None


#: how a failure at each stage (state.STAGES, in order) is explained; a test pins the keys to the stages
EXPLAIN: dict[str, Callable[[Failure], Conflict]] = {
    "platform": _explain_platform,
    "python": _explain_python,
    "wheels": _explain_wheels,
    "backend": _explain_backend,
    "plugin": _explain_plugin,
    "runtime": _explain_runtime,
    "gpu_arch": _explain_gpu_arch,
    "driver": _explain_driver,
    "companions": _explain_companions,
    "known_bad": _explain_known_bad,
}


def to_error(conflict: Conflict, alternatives: list[tuple[str, Flags]]) -> UnsatisfiableError:
    from compat_service.domain.errors import ERRORS, Alternative, Cause, UnsatisfiableError

    cls = ERRORS[conflict.code]
    assert issubclass(cls, UnsatisfiableError)
    return cls(
        conflict.message,
        hint=conflict.hint,
        causes=[Cause(constraint=c, origin=o, detail=d) for c, o, d in conflict.causes],
        alternatives=[Alternative(description=text, request=req) for text, req in alternatives],
    )
