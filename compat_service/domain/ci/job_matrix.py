"""A CI test matrix: every (torch, build, Python, OS/arch) combination that exists, in GitHub Actions' shape.

`ci_matrix(request, matrix, evidence=None)` is the one implementation behind ``GET /v1/ci-matrix`` and
``accelenv ci matrix`` (same answer, JSON). It answers ``{"include": [cell, ...], "excluded": [...]}``:

- the candidate combinations are the product of the request's axes: for each torch minor the range selects,
  its newest matching patch; each Python (``supported``: every Python some selected release has a wheel for
  on a selected platform; or the listed ones); each platform (OS x arch); each build label of the selected
  families (or the listed builds) that the release publishes;
- a combination the matrix rules out outright is excluded at the coarsest level that explains it, each with
  its ``code`` (the resolver's code for the same failure) and a one-line ``reason``: a release with no wheel
  for a platform, a Python with no wheel (``no cp313 wheel for torch 2.3 on linux-x86_64``), a family or a
  listed build the release does not publish for the platform;
- every other combination is resolved by the resolver itself (`resolve()` with the exact version, Python,
  platform and build label), so a cell exists exactly when the resolver accepts it; one the resolver refuses
  (no companion release, say) is excluded with the resolver's code and message.

``mode=pr`` keeps the extremes of the full matrix: the oldest and newest torch, each with its oldest and newest
Python (on the first requested family that has the cell, its newest-runtime build), plus one cell per family
(that family's newest torch, newest Python, newest runtime). Each cell's ``role`` says where its torch sits:
``oldest``, ``newest`` or ``interior``.

Pure domain code: it reads the matrix through `Matrix` and resolves through `resolve`.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from packaging.version import Version

from compat_service.domain.backends import (
    ARCHES,
    LABEL_FAMILIES,
    OSES,
    is_build_label,
    label_family,
    normalise_arch,
    python_sort_key,
)
from compat_service.domain.ci.github_limits import GITHUB_MAX_JOBS, fit_github_limits, parse_max_cells, parse_shard
from compat_service.domain.ci.runners import runner_for
from compat_service.domain.json_types import JsonObject
from compat_service.domain.matrix.interface import parse_version
from compat_service.domain.resolver.install_commands import pip_commands
from compat_service.domain.resolver.install_formats import render
from compat_service.domain.resolver.request import (
    BackendSpec,
    PackageRequest,
    ResolveRequest,
    TorchSpec,
    invalid_request,
    parse_python,
    parse_torch_spec,
    parse_with_stack,
)
from compat_service.domain.resolver.stages import resolve

if TYPE_CHECKING:
    from compat_service.domain.evidence.lookup import EvidenceLookup
    from compat_service.domain.matrix.interface import Matrix
    from compat_service.domain.matrix.model.rows import TorchMinor, TorchPatch, VariantAvailability
    from compat_service.domain.resolver.resolution import Resolution
    from compat_service.domain.stacks.catalog import Catalog

#: the install formats a cell's ``install`` may be written in (`install_formats`; ``dockerfile`` = docker)
INSTALL_FORMATS = ("pip", "requirements", "uv", "conda", "docker")
FORMAT_ALIASES = {"dockerfile": "docker"}
MODES = ("full", "pr")

#: the one-line check a cell's job runs after installing (verify-env compares the job's environment)
CHECK_COMMAND = "accelenv verify-env"


@dataclass(frozen=True)
class CiMatrixRequest:
    """What `ci_matrix` is asked; built by `CiMatrixRequest.from_strings` (API query, CLI flags)."""

    torch: TorchSpec
    #: None = every Python a selected release supports
    pythons: tuple[str, ...] | None
    families: tuple[str, ...]
    #: None = every build of the selected families
    builds: tuple[str, ...] | None
    platforms: tuple[tuple[str, str], ...]
    with_: tuple[str, ...]
    mode: str
    fmt: str
    #: ecosystem packages (``with=vllm``), resolved with torch per cell (compat_service.domain.stacks)
    stack: tuple[PackageRequest, ...] = ()
    #: the most cells the answer (one shard) may hold (github_limits: 256 jobs per matrix)
    max_cells: int = GITHUB_MAX_JOBS
    #: (I, N): the I-th of N balanced parts of the matrix; None = the whole matrix
    shard: tuple[int, int] | None = None

    @classmethod
    def from_strings(
        cls,
        *,
        torch: str | None = None,
        python: str | None = None,
        family: str | None = None,
        build: str | None = None,
        os: str | None = None,
        arch: str | None = None,
        with_: str | None = None,
        mode: str | None = None,
        format: str | None = None,
        max_cells: str | int | None = None,
        shard: str | None = None,
    ) -> CiMatrixRequest:
        spec = parse_torch_spec(torch)
        pythons = _pythons(python)
        builds = _builds(build)
        families = _families(family, builds)
        platforms = _platforms(os, arch)
        mode_value = (mode or "full").strip().lower()
        if mode_value not in MODES:
            raise invalid_request(
                f"mode {mode_value!r} is not a matrix mode",
                "use mode=full (every combination) or mode=pr (the extremes plus one cell per family)",
                "mode",
                mode_value,
            )
        fmt = (format or "pip").strip().lower()
        fmt = FORMAT_ALIASES.get(fmt, fmt)
        if fmt not in INSTALL_FORMATS:
            raise invalid_request(
                f"format {fmt!r} is not an install format",
                f"use one of: {', '.join(INSTALL_FORMATS)} (or dockerfile)",
                "format",
                fmt,
            )
        if fmt == "docker" and any(os_name != "linux" for os_name, _ in platforms):
            raise invalid_request(
                "format docker builds Linux images, and the matrix names another OS",
                "ask for os=linux, or another format",
                "format",
                fmt,
            )
        companions, stack = parse_with_stack(with_)
        return cls(spec, pythons, families, builds, platforms, companions, mode_value, fmt, stack,
                   parse_max_cells(max_cells), parse_shard(shard))


def _split(text: str | None) -> list[str]:
    return [part.strip().lower() for part in (text or "").split(",") if part.strip()]


def _pythons(text: str | None) -> tuple[str, ...] | None:
    parts = _split(text)
    if not parts or parts == ["supported"]:
        return None
    out = []
    for part in parts:
        value = parse_python(part)
        if value is not None and value not in out:
            out.append(value)
    return tuple(sorted(out, key=python_sort_key))


def _builds(text: str | None) -> tuple[str, ...] | None:
    parts = _split(text)
    if not parts:
        return None
    bad = [p for p in parts if not is_build_label(p)]
    if bad:
        raise invalid_request(
            f"build {', '.join(bad)}: not a build label",
            "use build labels such as cpu, cu121, rocm6.0 or xpu, comma-separated",
            "build",
            ",".join(bad),
        )
    return tuple(dict.fromkeys(parts))


def _families(text: str | None, builds: tuple[str, ...] | None) -> tuple[str, ...]:
    parts = _split(text)
    if not parts:
        if builds is not None:
            return tuple(dict.fromkeys(label_family(b) or "" for b in builds))
        return LABEL_FAMILIES
    bad = [p for p in parts if p not in LABEL_FAMILIES]
    if bad:
        raise invalid_request(
            f"family {', '.join(bad)}: not a wheel family of the CI matrix",
            f"use {', '.join(LABEL_FAMILIES)} (macOS' MPS is its cpu wheel; npu and mlu are plugins: "
            "resolve them with GET /v1/resolve)",
            "family",
            ",".join(bad),
        )
    if builds is not None:
        _builds_of(builds, parts)
    return tuple(dict.fromkeys(parts))


def _builds_of(builds: tuple[str, ...], families: list[str]) -> None:
    """Refuse builds outside the families asked for."""
    outside = [b for b in builds if label_family(b) not in families]
    if outside:
        raise invalid_request(
            f"build {', '.join(outside)} is not of family {', '.join(families)}",
            "drop family= (the builds name their families) or list builds of those families",
            "build",
            ",".join(outside),
        )


def _platforms(os_text: str | None, arch_text: str | None) -> tuple[tuple[str, str], ...]:
    oses = _split(os_text) or ["linux"]
    arches = _split(arch_text) or ["x86_64"]
    for value in oses:
        if value not in OSES:
            raise invalid_request(f"os {value!r} is not supported", f"use one of: {', '.join(OSES)}", "os", value)
    out: list[tuple[str, str]] = []
    for value in arches:
        if normalise_arch("linux", value) not in ARCHES:
            raise invalid_request(
                f"arch {value!r} is not supported", f"use one of: {', '.join(ARCHES)}", "arch", value
            )
        for os_name in oses:
            pair = (os_name, normalise_arch(os_name, value))
            if pair not in out:
                out.append(pair)
    return tuple(out)


# ------------------------------------------------------------------------------------------- the answer


def ci_matrix(request: CiMatrixRequest, matrix: Matrix, evidence: EvidenceLookup | None = None) -> JsonObject:
    """The matrix for ``request`` (see the module's docstring); raises TorchNotFoundError when the torch
    range selects no release, MatrixTooLargeError when the answer would not fit GitHub's limits."""
    catalog = _stack_catalog(request)
    excluded: list[JsonObject] = []
    unknown: list[JsonObject] = []
    chosen = _chosen(request, matrix, excluded, unknown)
    pythons = request.pythons or tuple(
        sorted({p for minor, patch, platform, *_ in chosen for p in python_list(minor, patch, platform)},
               key=python_sort_key)
    )
    cells: list[JsonObject] = []
    for minor, patch, platform, os_name, arch, labels in chosen:
        version = patch.version
        supported = python_list(minor, patch, platform)
        for python in pythons:
            if python not in supported:
                excluded.append({
                    "torch": version, "os": os_name, "arch": arch, "python": python, "code": "python-unsupported",
                    "reason": f"no cp{python.replace('.', '')} wheel for torch {version} on {platform}",
                })
                continue
            for label in labels:
                cell = _cell(request, matrix, evidence, catalog, version, label, python, os_name, arch, excluded)
                if cell is not None:
                    cells.append(cell)
    _assign_roles(cells)
    if request.mode == "pr":
        cells = _pr_cells(cells, request.families)
    cells_total = len(cells)
    cells, limits = fit_github_limits(cells, request.max_cells, request.shard)
    return {
        "include": cells,
        "excluded": excluded,
        "unknown": unknown,
        "request": _request_echo(request, pythons),
        "total": len(cells),
        "cells_total": cells_total,
        "limits": limits,
    }


Candidate = tuple["TorchMinor", "TorchPatch"]


def _stack_catalog(request: CiMatrixRequest) -> Catalog | None:
    """The ecosystem catalog when the request names packages (each checked: an unknown package is the
    request's error, not every cell's exclusion)."""
    if not request.stack:
        return None
    from compat_service.domain.stacks.catalog import load_catalog
    from compat_service.domain.stacks.resolve import _known

    catalog = load_catalog()
    for item in request.stack:
        _known(catalog, item)
    return catalog


def _chosen(
    request: CiMatrixRequest, matrix: Matrix, excluded: list[JsonObject], unknown: list[JsonObject]
) -> list[tuple[TorchMinor, TorchPatch, str, str, str, list[str]]]:
    """(minor, patch, platform, os, arch, build labels) of every release and platform the cells cover."""
    groups = _releases(request.torch, matrix)
    platform_names = [f"{o}-{a}" for o, a in request.platforms]
    chosen: list[tuple[TorchMinor, TorchPatch, str, str, str, list[str]]] = []
    for candidates in groups:
        for (os_name, arch), platform in zip(request.platforms, platform_names):
            for (minor, patch), labels in _chosen_builds(request, matrix, candidates, platform, (os_name, arch),
                                                         excluded, unknown):
                chosen.append((minor, patch, platform, os_name, arch, labels))
    return chosen


def _releases(spec: TorchSpec, matrix: Matrix) -> list[list[Candidate]]:
    """The candidate releases, one group per torch minor the range selects (oldest minor first), each its
    patches matching ``spec``, newest first; for ``latest`` one group: every released patch, newest first.
    A group's first patch is the one a cell uses; a later one only stands in for a build the matrix cannot
    say the newer ones publish (see `_chosen_builds`)."""
    out = _release_groups(spec, matrix)
    if not out:
        from compat_service.domain.errors import Cause, TorchNotFoundError

        raise TorchNotFoundError(
            f"no torch release matches torch={spec.text}",
            hint="GET /v1/torch lists the releases the matrix knows; use a range such as >=2.3",
            causes=[Cause(constraint=f"torch {spec.text}", origin="request")],
        )
    if spec.kind == "latest":
        return [[c for group in out for c in group]]
    out.reverse()
    return out


def _release_groups(spec: TorchSpec, matrix: Matrix) -> list[list[Candidate]]:
    """Each minor's patches matching ``spec``, newest minor first (a minor not released only when named)."""
    out = []
    for minor in matrix.torch_minors():
        if minor.status != "released" and not spec.names_minor(minor.minor):
            continue
        patches = [(minor, p) for p in matrix.torch_patches(minor) if spec.matches(p.version, minor.minor)]
        if patches:
            out.append(patches)
    return out


def _published(minor: TorchMinor, patch: TorchPatch, platform: str) -> list[VariantAvailability]:
    return [v for v in minor.variants if (v.patches is None or patch.version in v.patches) and platform in v.platforms]


def _chosen_builds(
    request: CiMatrixRequest,
    matrix: Matrix,
    candidates: list[Candidate],
    platform: str,
    os_arch: tuple[str, str],
    excluded: list[JsonObject],
    unknown: list[JsonObject],
) -> list[tuple[Candidate, list[str]]]:
    """The (release, build labels) pairs this group of candidates contributes on ``platform``.

    Each selected build comes from the newest candidate. Where the matrix cannot say whether that release
    publishes it (the platform is in its minor's ``platforms_unsourced``), the combination is listed in
    ``unknown`` (never in ``excluded``: it is not known to be missing), and the next candidate known to
    publish the build stands in for it, as long as every newer one is unknown there; so a release the matrix
    is still learning about never empties a matrix. A gap the matrix does know of is excluded, at the newest
    candidate, as before."""
    os_name, arch = os_arch
    newest = candidates[0][1]
    where = {"torch": newest.version, "os": os_name, "arch": arch}
    by_candidate = [
        (candidate, {v.label: _family(matrix, v.label) for v in _published(*candidate, platform)},
         platform in (candidate[0].platforms_unsourced or ()))
        for candidate in candidates
    ]
    first_unsourced = by_candidate[0][2]
    if not by_candidate[0][1] and not first_unsourced:
        excluded.append({**where, "code": "platform-unsupported",
                         "reason": f"no torch {newest.version} wheel for {platform}"})
        return []
    if request.builds is not None:
        wanted = [("build", label, lambda fams, label=label: [label] if label in fams else [])
                  for label in request.builds]
    else:
        wanted = [("family", family, lambda fams, family=family: [lb for lb, f in fams.items() if f == family])
                  for family in request.families]
    chosen: dict[str, tuple[Candidate, list[str]]] = {}
    for key, value, pick in wanted:
        found: tuple[Candidate, list[str]] | None = None
        for candidate, families, unsourced in by_candidate:
            labels = pick(families)
            if labels:
                found = (candidate, labels)
                break
            if not unsourced:  # a known gap: an older release does not stand in for it
                break
        if found is not None and found[0][1] is newest:
            _add(chosen, found)
            continue
        if not first_unsourced:
            code = "variant-not-published" if key == "build" else "backend-unavailable"
            excluded.append({**where, key: value, "code": code,
                             "reason": f"torch {newest.version} has no {value} build for {platform}"})
            continue
        stand_in = (f"; torch {found[0][1].version}, the newest release known to publish it, is in the matrix "
                    "instead" if found else "")
        unknown.append({**where, key: value, "code": "variant-unknown", "status": "unknown",
                        "reason": f"the matrix does not know whether torch {newest.version} publishes a {value} "
                                  f"build for {platform}: no source lists its builds there{stand_in}"})
        if found is not None:
            _add(chosen, found)
    return list(chosen.values())


def _add(chosen: dict[str, tuple[Candidate, list[str]]], found: tuple[Candidate, list[str]]) -> None:
    candidate, labels = found
    version = candidate[1].version
    _, have = chosen.setdefault(version, (candidate, []))
    have.extend(label for label in labels if label not in have)


def python_list(minor: TorchMinor, patch: TorchPatch, platform: str) -> list[str]:
    """The Pythons ``patch`` has wheels for on ``platform`` (the resolver's rule: a patch's override wins)."""
    entries = patch.python_override if patch.python_override is not None else minor.python
    found: list[str] = []
    for entry in entries:
        if entry.platforms is None or platform in entry.platforms:
            found.extend(v for v in entry.versions if v not in found)
    return sorted(found, key=python_sort_key)


def _family(matrix: Matrix, label: str) -> str | None:
    row = matrix.build_variant(label)
    return row.family if row is not None else label_family(label)


def _cell(
    request: CiMatrixRequest,
    matrix: Matrix,
    evidence: EvidenceLookup | None,
    catalog: Catalog | None,
    version: str,
    label: str,
    python: str,
    os_name: str,
    arch: str,
    excluded: list[JsonObject],
) -> JsonObject | None:
    from compat_service.domain.errors import AccelenvError

    family = _family(matrix, label)
    resolve_request = ResolveRequest(
        torch=TorchSpec(version, "exact"),
        python=python,
        os=os_name,
        arch=arch,
        backend=BackendSpec(label, "label", family),
        with_=request.with_,
        stack=request.stack,
    )
    try:
        if request.stack:
            from compat_service.domain.stacks.resolve import resolve_stack

            res = resolve_stack(resolve_request, matrix, evidence, catalog)
        else:
            res = resolve(resolve_request, matrix, evidence)
    except AccelenvError as exc:
        excluded.append(
            {
                "torch": version,
                "build": label,
                "python": python,
                "os": os_name,
                "arch": arch,
                "code": exc.code,
                "reason": exc.message,
            }
        )
        return None
    return _cell_json(request, matrix, res, (version, label, python, os_name, arch))


def _cell_json(
    request: CiMatrixRequest, matrix: Matrix, res: Resolution, cell: tuple[str, str, str, str, str]
) -> JsonObject:
    """One job of the matrix: the answer's pins and install, and what the job runs on and checks; ``cell`` is
    its (torch, build, Python, os, arch)."""
    version, label, python, os_name, arch = cell
    build_row = matrix.build_variant(label)
    arch_row = matrix.arch_list(version, label, res.platform)
    pins = {**res.pins, **{p.name: p.version for p in res.stack}}
    runs_on, container = runner_for(res.platform, res.family)
    return {
        "name": f"torch {version} {label} py{python} {res.platform}",
        "torch": version,
        "build": label,
        "family": res.family,
        "runtime": build_row.runtime if build_row is not None else None,
        "python": python,
        "os": os_name,
        "arch": arch,
        "platform": res.platform,
        "pins": pins,
        "index_url": res.index_url,
        "index_option": res.index_option,
        "install": render(res, request.fmt),
        "install_argv": install_argv(res),
        "requirements": [{"name": r.name, "version": r.version, "detail": r.detail} for r in res.requirements],
        "driver_floor": next((r.version for r in res.requirements if r.name.endswith("driver")), None),
        "arch_list": list(arch_row.archs) if arch_row is not None else None,
        "ptx": arch_row.ptx if arch_row is not None else None,
        "evidence": res.evidence["status"] if res.evidence else "declared",
        "status": res.status,
        "role": "interior",
        "runs_on": runs_on,
        "container": container,
        "check": check_command(version, label, python, pins),
    }


def install_argv(res: Resolution) -> list[list[str]]:
    """The cell's pip commands as argument lists (``["pip", "install", ...]``): data a job runs without a shell
    (``python -m pip install ...``), never a command line to evaluate. Split from `pip_commands`, the one
    rendering of the install, by shlex on the service's side."""
    return [shlex.split(command) for command in pip_commands(res)]


def check_command(version: str, label: str, python: str, pins: dict[str, str]) -> str:
    """The one-line `accelenv verify-env` a cell's job runs after its install."""
    parts = [CHECK_COMMAND, f"--expect torch=={_public(version)}+{label}"]
    parts += [f"--expect {name}=={_public(v)}" for name, v in pins.items() if name != "torch"]
    parts.append(f"--python {python}")
    return " ".join(parts)


def _public(version: str) -> str:
    return version.split("+", 1)[0]


def _assign_roles(cells: list[JsonObject]) -> None:
    if not cells:
        return
    versions = sorted({c["torch"] for c in cells}, key=lambda v: parse_version(v) or v)
    oldest, newest = versions[0], versions[-1]
    for c in cells:
        c["role"] = "newest" if c["torch"] == newest else "oldest" if c["torch"] == oldest else "interior"


def _runtime_key(cell: JsonObject) -> Version:
    return parse_version(cell["runtime"] or "0") or Version("0")


def _pr_cells(cells: list[JsonObject], families: Iterable[str]) -> list[JsonObject]:
    """The extremes: the oldest and the newest torch of the matrix, each with its oldest and newest Python
    (free-threaded builds aside; the family first in the request, then the newest runtime, where several
    cells share a torch and Python), plus one cell per family (its newest torch, Python and runtime)."""
    order = {f: i for i, f in enumerate(families)}
    picked: list[JsonObject] = []
    if cells:
        _add_extremes(_oldest_torch(cells), order, picked)
        _add_extremes(_newest_torch(cells), order, picked)
    for family in order:
        group = [c for c in cells if c["family"] == family]
        if group:
            _add_once(_newest_cell(group), picked)
    return picked


def _newest_cell(group: list[JsonObject]) -> JsonObject:
    """The group's cell of the newest torch, Python and runtime (free-threaded builds aside)."""
    gil = _with_gil(_newest_torch(group))
    python = max((c["python"] for c in gil), key=python_sort_key)
    return max((c for c in gil if c["python"] == python), key=_runtime_key)


def _add_extremes(group: list[JsonObject], order: dict[str, int], picked: list[JsonObject]) -> None:
    """The group's cells with its oldest and its newest Python (the family first in the request, then the
    newest runtime, where several share it)."""
    gil = _with_gil(group)
    for pick in (min, max):
        python = pick((c["python"] for c in gil), key=python_sort_key)
        same = [c for c in gil if c["python"] == python]
        first = min(order.get(c["family"], len(order)) for c in same)
        _add_once(max((c for c in same if order.get(c["family"], len(order)) == first), key=_runtime_key), picked)


def _with_gil(group: list[JsonObject]) -> list[JsonObject]:
    """The group's cells but the free-threaded builds' (all of them when there are only those)."""
    return [c for c in group if not c["python"].endswith("t")] or group


def _oldest_torch(group: list[JsonObject]) -> list[JsonObject]:
    bottom = min((c["torch"] for c in group), key=lambda v: parse_version(v) or v)
    return [c for c in group if c["torch"] == bottom]


def _newest_torch(group: list[JsonObject]) -> list[JsonObject]:
    top = max((c["torch"] for c in group), key=lambda v: parse_version(v) or v)
    return [c for c in group if c["torch"] == top]


def _add_once(cell: JsonObject, picked: list[JsonObject]) -> None:
    if cell not in picked:
        picked.append(cell)


def _request_echo(request: CiMatrixRequest, pythons: tuple[str, ...]) -> JsonObject:
    return {
        "torch": request.torch.text,
        "python": list(pythons),
        "family": list(request.families),
        "build": list(request.builds) if request.builds is not None else None,
        "platforms": [f"{o}-{a}" for o, a in request.platforms],
        "with": [*request.with_, *(p.text for p in request.stack)],
        "mode": request.mode,
        "format": request.fmt,
        "max_cells": request.max_cells,
        "shard": f"{request.shard[0]}/{request.shard[1]}" if request.shard else None,
    }
