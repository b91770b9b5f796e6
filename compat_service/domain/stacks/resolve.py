"""`resolve_stack`: torch together with the ecosystem packages a request names (`--with vllm`).

For each package the candidate releases are its live releases the request admits and that publish for the
target platform, newest first. For a combination of candidates (newest first, at most `MAX_COMBINATIONS`):

1. the pins agree (two packages pin torchvision alike; a package pinning another stack package pins the
   chosen release);
2. the torch requirement is what each release's metadata states for the platform (torchao: the curated
   table, any of its rows; no row: unknown, said), intersected with `--torch`;
3. the build rule of each package (ecosystem.yaml ``torch_build``) names the torch build: ``default-index``
   the default-index build of the torch patch (the wheel on the index was built against it), ``prebuilt``
   a CUDA build whose major matches a prebuilt wheel (flash-attn), ``npu`` the Ascend plugin stack, ``any``
   none;
4. each matching torch patch (newest first) with that build goes to the torch resolver (`resolve`), so the
   driver, GPU-architecture and Python rules of the host apply to the whole stack; the first answer whose
   Python every package has a wheel for wins.

The answer is the torch resolution with the package pins applied (a package's exact companion pins win over
the matrix's pairing) and the packages in `Resolution.stack`, each with its origin, reason and sources. A
failure keeps the error model: when every candidate failed on the host alone the torch resolver's code
(driver-too-old, ...), else `stack-conflict`; both name the candidates tried and the nearest stacks that work.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING, cast

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from compat_service.domain.hardware_rules import runtime_fits
from compat_service.domain.resolver.request import BackendSpec, PackageRequest, TorchSpec
from compat_service.domain.resolver.resolution import HostRequirement, Pin, Reason, Resolution, StackPin
from compat_service.domain.resolver.stages import resolve
from compat_service.domain.stacks.catalog import Catalog, Package, Release, load_catalog
from compat_service.domain.stacks.host_wheels import torch_installs

if TYPE_CHECKING:
    from compat_service.domain.errors import AccelenvError
    from compat_service.domain.evidence.lookup import EvidenceLookup
    from compat_service.domain.matrix.interface import Matrix
    from compat_service.domain.matrix.model.rows import TorchMinor, TorchPatch
    from compat_service.domain.resolver.request import ResolveRequest

#: combinations of package releases tried before giving up (newest first)
MAX_COMBINATIONS = 1200
#: torch patches tried per combination (newest first)
MAX_PATCHES = 4
#: the companions a package may pin (they come from torch's index, with torch)
COMPANION_NAMES = ("torchvision", "torchaudio")
INDEX_SOURCE = "package_index"


class Attempt:
    """One combination tried and why it did not make a stack."""

    __slots__ = ("code", "host_only", "message", "oracle", "what")

    def __init__(self, what: str, code: str, message: str, host_only: bool, oracle: bool = False) -> None:
        self.what = what
        self.code = code
        self.message = message
        self.host_only = host_only
        #: the resolution oracle refused the release (said after the other reasons, unless the only one)
        self.oracle = oracle


class Search:
    """One stack resolution's state (plain slots: `resolve --with`'s fast path builds no dataclasses)."""

    __slots__ = ("allow_source", "attempts", "cache", "catalog", "evidence", "matrix", "oracle", "request")

    def __init__(self, request: ResolveRequest, matrix: Matrix, evidence: EvidenceLookup | None,
                 catalog: Catalog, oracle: bool = True) -> None:
        self.request = request
        #: heed the resolution oracle's outcomes (index/stack-oracle.yaml); off when the refresh checks anew
        self.oracle = oracle
        self.matrix = matrix
        self.evidence = evidence
        self.catalog = catalog
        self.attempts: list[Attempt] = []
        self.cache: dict[tuple[str, str | None, str | None, str], Resolution | AccelenvError] = {}
        #: a package without a prebuilt wheel for the torch found is built from source: only once every
        #: combination was tried for a prebuilt wheel
        self.allow_source = False


def resolve_stack(
    request: ResolveRequest,
    matrix: Matrix,
    evidence: EvidenceLookup | None = None,
    catalog: Catalog | None = None,
    *,
    alternatives: bool = True,
    oracle: bool = True,
) -> Resolution:
    """The torch resolution with every ``request.stack`` package; raises the error model's errors.

    ``oracle``: skip the releases a real resolver found unresolvable (`matrix refresh --oracle`)."""
    if not request.stack:
        return resolve(request, matrix, evidence)
    catalog = catalog if catalog is not None else load_catalog()
    packages = [(item, _known(catalog, item)) for item in request.stack]
    search = Search(request, matrix, evidence, catalog, oracle)
    pinned = _pinned_by_others(search, packages)
    candidates = [_candidates(search, item, package, pinned.get(package.name, set())) for item, package in packages]
    passes = (False, True) if any(p.torch_build == "prebuilt" for _i, p in packages) else (False,)
    for allow_source in passes:
        search.allow_source = allow_source
        for combination in itertools.islice(itertools.product(*candidates), MAX_COMBINATIONS):
            found = _try_combination(search, list(zip(packages, combination, strict=True)))
            if found is not None:
                return found
    raise _failure(search, alternatives)


# -- candidates -----------------------------------------------------------------------------------------


def _known(catalog: Catalog, item: PackageRequest) -> Package:
    package = catalog.get(item.name)
    if package is None:
        from compat_service.domain.resolver.request import invalid_request

        raise invalid_request(
            f"--with {item.name}: not a package accelenv resolves with torch",
            f"use torchvision, torchaudio, none, or an ecosystem package: {', '.join(catalog.names())} "
            "(a package is added by its line in matrix_data/index/refresh.yaml)",
            "--with",
            item.text,
        )
    return package


def _publishes(package: Package, release: Release, platform: str) -> bool:
    if package.torch_build == "wheel-pages":  # the default index's wheels (if any) are not the builds people use
        return bool(package.pages(release.version, platform))
    if release.wheels.get(platform):
        return True
    if package.torch_build == "jit":  # its sdist installs after torch: its ops compile at run time
        return release.sdist is not None
    if package.torch_build == "prebuilt":
        return release.sdist is not None or any(
            row["version"] == release.version and row["platform"] == platform for row in package.wheel_rows
        )
    return False


def _pinned_by_others(search: Search, packages: list[tuple[PackageRequest, Package]]) -> dict[str, set[Version]]:
    """The exact versions of each requested package that another requested package's releases pin (vllm 0.10.1
    pins xformers==0.0.31): release de-duplication keeps them, so an exact pin always finds its release."""
    names = {package.name for _item, package in packages}
    out: dict[str, set[Version]] = {}
    if len(names) < 2:
        return out  # one package pins no other requested one (`--with vllm`'s fast path)
    for item, package in packages:
        for release in package.releases:
            if release.yanked or not item.allows(release.version, release.prerelease):
                continue
            for name, version in release.pins(search.request.platform, None).items():
                if name in names and name != package.name:
                    out.setdefault(name, set()).add(Version(version))
    return out


def _known_torch(package: Package, release: Release, platform: str) -> bool:
    """Whether the release's torch requirement is known: stated by its metadata, by a curated row, or by its
    prebuilt wheel matrix (a release with none of these is tried after every release with one)."""
    if release.torch_specifier(platform, None) is not None or package.torch_build == "prebuilt":
        return True
    if package.torch_build == "wheel-pages":
        return bool(package.pages(release.version, platform))
    return bool(release.curated_torch and release.curated_torch.get("binaries"))


def _candidates(search: Search, item: PackageRequest, package: Package, keep: set[Version]) -> list[Release]:
    platform = search.request.platform
    allowed = [r for r in package.releases if not r.yanked and item.allows(r.version, r.prerelease)]
    found = _distinct([r for r in allowed if _publishes(package, r, platform) and _installs(search, package, r, None)
                       and _fits_host(search, package, r, None)], package, platform, keep)
    # "no torch requirement" is not "any torch": a release whose torch is unknown never outranks a known one
    found.sort(key=lambda r: not _known_torch(package, r, platform))
    if not found and any(not _installs(search, package, r, None) or not _fits_host(search, package, r, None)
                         for r in allowed):
        return found  # the oracle's (or the host's wheel tags') reasons are the attempts
    if not found:
        why = (
            f"the package index holds no release of {package.name} (its wheels are published elsewhere only, and "
            "the matrix has no row for them)"
            if not package.releases
            else f"{package.name} has no release matching {item.specifier}"
            if not allowed
            else _no_wheels(package, platform, item)
        )
        search.attempts.append(Attempt(item.text, "stack-conflict", why, host_only=False))
    return found


def _no_wheels(package: Package, platform: str, item: PackageRequest) -> str:
    """Why no release of ``item`` has a wheel for ``platform``: where the package's wheels are (a wheel-pages
    package's own pages; else the index, where other releases may have one)."""
    if package.torch_build == "wheel-pages":
        pages = sorted({p for row in package.page_rows for p in row["platforms"]})
        return f"{package.name}'s own wheel pages have no wheels for {platform} (they are for {', '.join(pages)})"
    others = package.platforms()
    if platform in others:
        return (f"no {package.name} release that {item.text} allows publishes wheels for {platform} on the package "
                "index (other releases do)")
    return f"{package.name} publishes no wheels for {platform}" + (
        f" (its wheels are for {', '.join(others)})" if others else "")


def _installs(search: Search, package: Package, release: Release, python: str | None) -> bool:
    """False (with the reason kept as an attempt) when the resolution oracle found that the stack of this release
    does not install on the target (at ``python``, else the request's Python, else at every Python checked)."""
    if not search.oracle:
        return True
    request = search.request
    why = release.oracle_failure(request.platform, python or request.python)
    if why is None:
        return True
    at = f" with Python {python or request.python}" if python or request.python else ""
    search.attempts.append(Attempt(
        f"{package.name} {release.version}", "stack-conflict",
        f"{package.name} {release.version} does not install on {request.platform}{at}: {why} (checked by a real "
        f"resolver: {package.oracle_source})", False, oracle=True))
    return False


def _fits_host(search: Search, package: Package, release: Release, python: str | None) -> bool:
    """False (with the reason kept as an attempt) when no wheel of the release installs on the described host:
    its platform tags (glibc, musl, macOS) or its Requires-Python against the full Python (`host_wheels`)."""
    from compat_service.domain.stacks.host_wheels import platform_blocked, python_blocked

    request = search.request
    why = platform_blocked(request, package, release, python)
    code = "platform-unsupported"
    if why is None:
        why, code = python_blocked(request, package, release, python), "python-unsupported"
    if why is None:
        return True
    search.attempts.append(Attempt(f"{package.name} {release.version}", code, why, host_only=True))
    return False


def _distinct(releases: list[Release], package: Package, platform: str, keep: set[Version]) -> list[Release]:
    """The newest release of each group that asks the same of torch and the target (same torch requirement,
    curated row, prebuilt wheels, Requires-Python and wheel tags): an older one of a group could only fail
    where the newer one did, so the combinations stay few. A release another requested package pins exactly
    (``keep``) is always kept."""
    seen: set[tuple[object, ...]] = set()
    out = []
    for release in releases:
        rows = tuple(
            (tuple(row["torch"]), row["cuda_major"], tuple(row["python"])) for row in package.wheel_rows
            if row["version"] == release.version and row["platform"] == platform
        )
        curated = tuple(release.curated_torch["binaries"] or ()) if release.curated_torch else None
        pages = tuple((tuple(row["torch"]), tuple(row["builds"])) for row in package.pages(release.version, platform))
        key = (release.torch_specifier(platform, None), curated, rows, pages, release.requires_python,
               release.wheels.get(platform, ()), release.wheel_tags.get(platform, ()),
               tuple(sorted(release.pins(platform, None).items())),
               release.policy is not None, package.final_release_matches is not None and not release.prerelease,
               tuple(c["package"] for c in release.companions),
               tuple(sorted(release.oracle.get(platform, {}).items())))
        if package.final_release_matches is not None or key not in seen or release.parsed in keep:
            seen.add(key)
            out.append(release)
    return out


# -- one combination ------------------------------------------------------------------------------------


class Plan:
    """What a combination of releases asks of torch."""

    __slots__ = ("any_of", "chosen", "not_after", "pins", "reasons", "torch_specs", "unknowns")

    def __init__(self, chosen: list[tuple[Package, Release]], torch_specs: list[SpecifierSet],
                 any_of: list[list[str]], pins: dict[str, tuple[str, str]], unknowns: list[str],
                 reasons: list[Reason], not_after: tuple[str, str] | None = None) -> None:
        self.chosen = chosen
        #: the torch requirements stated by the releases' metadata (all must hold)
        self.torch_specs = torch_specs
        #: curated requirements given as alternatives (torchao 0.12.0: 2.7.1, 2.6.0 or 2.5.0): one of each holds
        self.any_of = any_of
        #: package name -> (exact version, who pins it) for the stack's pins of other packages
        self.pins = pins
        self.unknowns = unknowns
        self.reasons = reasons
        #: a default-index package that gives torch a range: its binaries were built against a torch released
        #: no later than the package (ISO date of its first upload, and who says so)
        self.not_after = not_after


def _plan(search: Search, combo: list[tuple[tuple[PackageRequest, Package], Release]]) -> Plan | None:
    platform, python = search.request.platform, search.request.python
    chosen = [(package, release) for (_item, package), release in combo]
    names = {package.name: release for package, release in chosen}
    pins: dict[str, tuple[str, str]] = {}
    specs: list[SpecifierSet] = []
    any_of: list[list[str]] = []
    not_after: tuple[str, str] | None = None
    unknowns: list[str] = []
    reasons: list[Reason] = []
    what = ", ".join(f"{p.name} {r.version}" for p, r in chosen)
    for package, release in chosen:
        for name, version in release.pins(platform, python).items():
            if name == "torch":
                continue
            other = names.get(name)
            if other is not None and Version(other.version) != Version(version):
                search.attempts.append(Attempt(what, "stack-conflict",
                                               f"{package.name} {release.version} pins {name}=={version}", False))
                return None
            if name in pins and Version(pins[name][0].split("+")[0]) != Version(version.split("+")[0]):
                search.attempts.append(Attempt(
                    what, "stack-conflict",
                    f"{package.name} {release.version} pins {name}=={version}, {pins[name][1]} pins "
                    f"{name}=={pins[name][0]}", False))
                return None
            pins[name] = (version, f"{package.name} {release.version}")
        if package.torch_build == "wheel-pages":
            rows = package.pages(release.version, platform)
            minors = list(dict.fromkeys(m for row in rows for m in row["torch"]))
            any_of.append([f"=={m}.*" for m in minors])
            reasons.append(Reason(
                "stack", f"{package.name} {release.version}: its binaries are on the project's own wheel pages, one "
                f"per torch minor and build, for torch {', '.join(minors)} on {platform} (curated)",
                tuple(dict.fromkeys(s for row in rows for s in row["source"]))))
            continue
        stated = release.torch_specifier(platform, python)
        if stated is not None:
            specs.append(SpecifierSet(stated))
            if package.torch_build == "default-index" and "torch" not in release.pins(platform, python) \
                    and release.first_upload:
                earliest = min(filter(None, [release.first_upload, not_after[0] if not_after else None]))
                not_after = (earliest, f"{package.name} {release.version}")
            continue
        minors = [m for w in package.wheel_rows if w["version"] == release.version and w["platform"] == platform
                  for m in w["torch"]] if package.torch_build == "prebuilt" and not search.allow_source \
            and search.request.torch.kind == "latest" else []
        if minors:  # torch not asked: before any source build, the newest torch one of its prebuilt wheels fits
            any_of.append([f"=={m}.*" for m in dict.fromkeys(minors)])
        row = release.curated_torch
        if row is not None and row.get("binaries"):
            any_of.append(list(row["binaries"]))
            built = "its PyTorch extension requires" if package.torch_build == "extension" else \
                "its binaries were built for"
            reasons.append(Reason(
                "stack", f"{package.name} {release.version} declares no torch requirement; {built} "
                f"torch {' or '.join(row['binaries'])} (curated)", tuple(row["source"])))
        elif package.torch_build != "prebuilt":  # prebuilt: its wheel matrix is the requirement
            unknowns.append(f"{package.name} {release.version} states no torch requirement and the matrix has no "
                            "compatibility row for it: any torch was allowed")
    return Plan(chosen, specs, any_of, pins, unknowns, reasons, not_after)


def _admits(plan: Plan, version: str) -> bool:
    if not all(spec.contains(version, prereleases=True) for spec in plan.torch_specs):
        return False
    return all(any(SpecifierSet(s).contains(version, prereleases=True) for s in row) for row in plan.any_of)


def _patches(search: Search, plan: Plan) -> Iterator[tuple[TorchMinor, TorchPatch]]:
    spec = search.request.torch
    named = spec.minor_named()
    count = 0
    paged = any(package.torch_build == "wheel-pages" for package, _release in plan.chosen)
    for minor in search.matrix.torch_minors():
        if named is not None and minor.minor != named:
            continue
        if paged and named is None and any(minor.minor in row["torch"] for p, r in plan.chosen
                                           for row in p.pages(r.version, search.request.platform)):
            why = _page_labels(search, plan, minor, [None])[1]
            if why is not None:  # no wheel page for the asked build of this minor: the next minor may have one
                what = ", ".join(f"{p.name} {r.version}" for p, r in plan.chosen)
                search.attempts.append(Attempt(f"{what} with torch {minor.minor}", "stack-conflict", why, False))
                continue
        if minor.status != "released" and not spec.names_minor(minor.minor):
            continue
        for patch in search.matrix.torch_patches(minor):
            released = patch.release_date
            if plan.not_after and released is not None and released.isoformat() > plan.not_after[0]:
                continue  # released after the package: its binaries cannot have been built against it
            if spec.matches(patch.version, minor.minor) and _admits(plan, patch.version) \
                    and torch_installs(search.request, patch, search.matrix):
                yield minor, patch
                count += 1
                if count >= MAX_PATCHES:
                    return


def _default_label(minor: TorchMinor, platform: str) -> str | None:
    return next((row.label for row in minor.default_index if row.platform == platform), None)


def _labels(search: Search, plan: Plan, minor: TorchMinor) -> tuple[list[str | None], str | None]:
    """The torch build labels the stack allows for a minor (None: the resolver chooses), or why none."""
    request, platform = search.request, search.request.platform
    rules = {package.torch_build for package, _ in plan.chosen}
    asked = request.backend.label
    family = request.backend.family
    if "npu" in rules:
        if family != "npu":
            name = next(p.name for p, _ in plan.chosen if p.torch_build == "npu")
            return [], (f"{name} runs on Ascend NPUs with torch_npu; the target's backend is "
                        f"{request.backend.text} (ask for --backend npu)")
        return [None], None
    labels: list[str | None] = [None]
    if "default-index" in rules:
        label = _default_label(minor, platform)
        names = ", ".join(p.name for p, _ in plan.chosen if p.torch_build == "default-index")
        built = _built_against(search, plan, minor, label)
        if built is not None:
            if built[1] is not None:
                return built
            labels = built[0]
        elif label is None:
            plan.unknowns.append(f"the default-index build of torch {minor.minor} on {platform} is not in the "
                                 f"matrix: the build {names} go with is unknown")
        elif asked is not None and asked != label:
            return [], (f"{names}'s wheels on the default index go with torch {minor.minor}'s default-index build "
                        f"{label}; --backend {asked} asks for another build")
        elif family not in (None, "auto") and family != _family(search, label) and family != "mps":
            return [], (f"{names}'s wheels on the default index go with torch {minor.minor}'s default-index build "
                        f"{label}, not a {family} build")
        else:
            labels = [label]
    if "wheel-pages" in rules:
        labels, why = _page_labels(search, plan, minor, labels)
        if why is not None:
            return [], why
    if "prebuilt" in rules:
        majors = {row["cuda_major"] for p, r in plan.chosen for row in p.wheel_rows if row["version"] == r.version}
        if labels != [None]:
            return labels, None  # checked against the prebuilt wheels after the resolution
        cuda = [v.label for v in minor.variants if platform in v.platforms
                and _family(search, v.label) == "cuda" and _cuda_major(search, v.label) in majors]
        if asked is not None:
            cuda = [label for label in cuda if label == asked]
        if family in (None, "auto", "cuda") and cuda:
            labels = sorted(cuda, key=lambda lbl: _runtime_key(search, lbl), reverse=True) + [None]
    return labels, None


def _page_labels(search: Search, plan: Plan, minor: TorchMinor,
                 labels: list[str | None]) -> tuple[list[str | None], str | None]:
    """The builds of ``minor`` every wheel-pages package of the plan has a page for (CUDA newest first, then the
    rest), narrowed by the request's --backend and by the builds other rules allow; or why none."""
    request, platform = search.request, search.request.platform
    builds: set[str] | None = None
    for package, release in plan.chosen:
        if package.torch_build == "wheel-pages":
            paged = {b for row in package.pages(release.version, platform) if minor.minor in row["torch"]
                     for b in row["builds"]}
            builds = paged if builds is None else builds & paged
    names = ", ".join(p.name for p, _ in plan.chosen if p.torch_build == "wheel-pages")
    published = {v.label for v in minor.variants if platform in v.platforms}
    found: list[str | None] = [*sorted((b for b in builds or () if b in published),
                   key=lambda lbl: (_family(search, lbl) == "cuda", _runtime_key(search, lbl)), reverse=True)]
    if labels != [None]:
        found = [lbl for lbl in found if lbl in labels]
    asked, family = request.backend.label, request.backend.family
    if asked is not None:
        found = [lbl for lbl in found if lbl == asked]
    elif family not in (None, "auto"):
        found = [lbl for lbl in found if lbl is not None and _family(search, lbl) == family]
    if not found:
        have = ", ".join(sorted(builds or ())) or "no build"
        return [], (f"{names}'s wheel pages for torch {minor.minor} on {platform} are for {have}; --backend "
                    f"{request.backend.text} asks for another build")
    return found, None

def _built_against(search: Search, plan: Plan, minor: TorchMinor,
                   default: str | None) -> tuple[list[str | None], str | None] | None:
    """The torch build for the releases whose documents say which build their wheels were compiled against
    (ecosystem.yaml ``torch_index``: vLLM 0.11.1-0.19.x and CUDA 12.9; xformers' wheels and their CUDA), as
    `_labels` answers; None when no chosen release has a row.

    A binary built against one CUDA build runs on a build of the same CUDA major and no older minor (NVIDIA's minor
    version compatibility), so each row admits its own build and those; a default-index package without a row
    admits its default-index build and those. The build is the default-index one when every package admits it
    (no other index), else the one they all admit (the oldest such); --backend must name one they all admit."""
    rows = [(p, r) for p, r in plan.chosen if p.torch_build == "default-index" and r.torch_index]
    if not rows:
        return None
    request, platform = search.request, search.request.platform
    published = [v.label for v in minor.variants if platform in v.platforms]
    built = [(f"{p.name} {r.version}", str(r.torch_index["label"])) for p, r in rows]  # type: ignore[index]
    built += [(p.name, default) for p, r in plan.chosen if p.torch_build == "default-index" and not r.torch_index
              and default is not None]
    def admitted(label: str) -> bool:
        return all(label == b or _minor_compatible(search, b, label) for _who, b in built)
    who, first = built[0]
    asked = request.backend.label
    if asked is not None:
        if not admitted(asked):
            return [], (f"{who}'s wheels were built against torch {minor.minor}'s {first} build; --backend {asked} "
                        "asks for another build")
        choice = asked
    elif default is not None and default in published and admitted(default):
        choice = default
    else:
        fits = sorted((lbl for lbl in published if admitted(lbl)), key=lambda lbl: _runtime_key(search, lbl))
        if not fits:
            others = "; ".join(f"{w}'s against {b}" for w, b in built[1:])
            return [], (f"{who}'s wheels were built against torch's {first} build"
                        + (f", {others}" if others else f", which torch {minor.minor} does not publish for {platform}"))
        choice = fits[0]
    if choice not in published:
        return [], (f"{who}'s wheels were built against torch's {choice} build, which torch {minor.minor} does not "
                    f"publish for {platform}")
    family = request.backend.family
    if family not in (None, "auto") and family != _family(search, choice):
        return [], f"{who}'s wheels were built against torch {minor.minor}'s {first} build, not a {family} build"
    for name, label in built:
        if label != choice:
            _note(plan, Reason(
                "stack", f"{name}: its wheels were built against torch {minor.minor}'s {label} build; the {choice} "
                "build is the same CUDA major, no older (CUDA minor version compatibility)", ("nv_minor_compat",)))
    return [choice], None


def _minor_compatible(search: Search, built: str, runs: str) -> bool:
    """A binary built against the CUDA of ``built`` runs with the CUDA of ``runs``: same major, no older minor."""
    old, new = _runtime_key(search, built), _runtime_key(search, runs)
    return _family(search, built) == _family(search, runs) == "cuda" and bool(old) and old[:1] == new[:1] \
        and new >= old


def _note(plan: Plan, reason: Reason) -> None:
    if reason not in plan.reasons:
        plan.reasons.append(reason)


def _family(search: Search, label: str) -> str | None:
    row = search.matrix.build_variant(label)
    return row.family if row is not None else None


def _cuda_major(search: Search, label: str) -> int | None:
    row = search.matrix.build_variant(label)
    if row is None or row.runtime is None:
        return None
    return int(str(row.runtime).split(".")[0])


def _runtime_key(search: Search, label: str) -> tuple[int, ...]:
    row = search.matrix.build_variant(label)
    return tuple(int(x) for x in str(row.runtime).split(".")) if row is not None and row.runtime else ()


def _try_combination(search: Search, combo: list[tuple[tuple[PackageRequest, Package], Release]]) -> Resolution | None:
    plan = _plan(search, combo)
    if plan is None:
        return None
    what = ", ".join(f"{p.name} {r.version}" for p, r in plan.chosen)
    tried_any = False
    for minor, patch in _patches(search, plan):
        tried_any = True
        labels, why = _labels(search, plan, minor)
        if why is not None:
            search.attempts.append(Attempt(f"{what} with torch {patch.version}", "stack-conflict", why, False))
            continue
        for label in labels:
            answer = _resolve_torch(search, plan, patch.version, label)
            if isinstance(answer, Resolution):
                final = _finish(search, plan, answer)
                if final is not None:
                    return final
            elif answer is not None:
                search.attempts.append(Attempt(f"{what} with torch {patch.version}" + (f" ({label})" if label else ""),
                                               answer.code, answer.message, host_only=True))
    if not tried_any:
        torch_text = " and ".join([*(str(s) or "any" for s in plan.torch_specs),
                                   *(" or ".join(row) for row in plan.any_of)]) or "any torch"
        asked = search.request.torch.text
        platform, python = search.request.platform, search.request.python
        pinned = "; ".join(
            f"{p.name} {r.version} {'pins' if 'torch' in r.pins(platform, python) else 'requires'} "
            f"torch{r.torch_specifier(platform, python) or ''}"
            for p, r in plan.chosen if r.torch_specifier(platform, python) is not None)
        search.attempts.append(Attempt(what, "stack-conflict",
                                       (pinned or f"{what} needs torch {torch_text}")
                                       + (f"; you asked for torch {asked}" if asked != "latest" else
                                          "; the matrix has no such torch release"), False))
    return None


def _resolve_torch(search: Search, plan: Plan, version: str, label: str | None) -> Resolution | AccelenvError | None:
    """The torch resolver for one patch and build, at the Python every package of the plan has a wheel for.

    The error classes are not imported here: they pull pydantic, which the success path never needs."""
    request = search.request
    base = request.changed(stack=(), torch=TorchSpec(version, "exact"))
    if label is not None:
        base = base.changed(backend=BackendSpec(label, "label", _family(search, label)))
    pythons: list[str | None] = [request.python]
    last: AccelenvError | Resolution | None = None
    tried: set[str | None] = set()
    while pythons:
        python = pythons.pop(0)
        if python in tried:
            continue
        tried.add(python)
        key = (version, label, python, request.backend.text)
        if key not in search.cache:
            try:
                search.cache[key] = resolve(base.changed(python=python), search.matrix, search.evidence)
            except Exception as exc:
                if not hasattr(exc, "code") or not hasattr(exc, "exit_code"):
                    raise  # not an AccelenvError: a bug, not an answer
                search.cache[key] = cast("AccelenvError", exc)
        answer = search.cache[key]
        if not isinstance(answer, Resolution):
            return answer
        misfits = [(p, r) for p, r in plan.chosen if not _fits_python(p, r, request.platform, answer.python)]
        if not misfits:
            if all(_fits_host(search, p, r, answer.python) for p, r in plan.chosen):
                return answer
            return None  # the attempt says which wheel the host cannot install
        names = ", ".join(f"{p.name} {r.version}" for p, r in misfits)
        last = _python_error(f"{names} has no wheel for Python {answer.python} on {request.platform}")
        if request.python is None:
            pythons += [py for py in _torch_pythons(search, version) if py != answer.python
                        and all(_fits_python(p, r, request.platform, py) for p, r in plan.chosen)][:1]
    return last


def _fits_python(package: Package, release: Release, platform: str, python: str) -> bool:
    if package.torch_build == "wheel-pages":
        rows = package.pages(release.version, platform)
        return any(row["python"] is None or python in row["python"] for row in rows)
    if release.wheels.get(platform):
        return release.fits_python(platform, python)
    return True  # prebuilt/sdist packages: checked against their wheel rows when pinned


def _torch_pythons(search: Search, version: str) -> list[str]:
    from compat_service.domain.backends import python_sort_key

    found: set[str] = set()
    for minor in search.matrix.torch_minors():
        if version.startswith(minor.minor + "."):
            for row in minor.python:
                if row.platforms is None or search.request.platform in row.platforms:
                    found.update(row.versions)
    return sorted(found, key=python_sort_key, reverse=True)


def _python_error(message: str) -> AccelenvError:
    from compat_service.domain.errors import PythonUnsupportedError

    return PythonUnsupportedError(message)


# -- the answer -----------------------------------------------------------------------------------------


def _finish(search: Search, plan: Plan, res: Resolution) -> Resolution | None:
    request = search.request
    if not all(_installs(search, package, release, res.python) for package, release in plan.chosen):
        return None
    requirements_floor: list[HostRequirement] = []
    too_old = _gpu_floor_failure(search, plan, res, requirements_floor)
    if too_old is not None:
        what = ", ".join(f"{p.name} {r.version}" for p, r in plan.chosen)
        search.attempts.append(Attempt(what, "gpu-arch-unsupported", too_old, host_only=True))
        return None
    platform = request.platform
    _host_floors(search, plan, res, requirements_floor)
    packages = list(res.packages)
    reasons = list(res.reasons) + plan.reasons  # the curated torch rows the plan followed
    warnings = list(res.warnings)
    unknowns = list(res.unknowns) + plan.unknowns
    raised = {q.name for q in requirements_floor if q.name in ("glibc", "macos")}  # the stack's wheels ask more
    requirements = [q for q in res.requirements if q.name not in raised] + requirements_floor
    stack: list[StackPin] = []
    # the pins of the stack's releases on torch's companions and plugins win over the matrix's pairing
    for name, (version, by) in sorted(plan.pins.items()):
        current = next((p for p in packages if p.name == name), None)
        if current is None and name not in (*COMPANION_NAMES, "torch-npu"):
            continue
        if current is not None:
            local = current.version.split("+", 1)[1] if "+" in current.version and "+" not in version else None
            pinned = f"{version}+{local}" if local else version
            if Version(current.version.split("+")[0]) != Version(version.split("+")[0]):
                # what the torch resolver said about the release it paired no longer applies
                warnings = [w for w in warnings if f"{name} {current.version}" not in w]
                reasons.append(Reason("stack", f"{by} pins {name}=={version} (the matrix pairs torch "
                                      f"{res.torch_version} with {name} {current.version})", (INDEX_SOURCE,)))
            packages = [dataclasses.replace(p, version=pinned) if p.name == name else p for p in packages]
        else:
            packages.append(Pin(name, version, res.index_url if name in COMPANION_NAMES else None))
            reasons.append(Reason("stack", f"{by} pins {name}=={version}", (INDEX_SOURCE,)))
    for package, release in plan.chosen:
        curated = tuple(release.torch_index["source"]) if release.torch_index else ()
        led = next((f"{p.name} {r.version}" for p, r in plan.chosen if r.torch_index), None)
        pins = [Reason("stack", _why(search, package, release, res, led), (INDEX_SOURCE, *package.sources, *curated))]
        if package.torch_build == "prebuilt":
            pin = _prebuilt(search, package, release, res, warnings, unknowns, requirements)
            if pin is None:
                return None
            stack.append(pin)
        elif package.torch_build == "wheel-pages":
            pin = _page_pin(search, package, release, res, unknowns)
            if pin is None:
                return None
            stack.append(pin)
        elif package.torch_build == "extension":
            pin = _extension_pin(search, package, release, res, unknowns, pins[0])
            if pin is None:
                return None
            stack.append(pin)
            pins[0] = Reason("stack", pin.reason, pin.sources)
        else:
            stated = release.torch_specifier(platform, res.python)
            no_deps = stated is not None and not SpecifierSet(stated).contains(res.torch_version, prereleases=True)
            pinned_torch = release.pins(platform, res.python).get("torch")
            if package.torch_build == "default-index" and stated and not pinned_torch:
                unknowns.append(f"{package.name} {release.version} requires torch{stated} (a range): which torch its "
                                "binaries were built against is not in the matrix; only torch released before it "
                                f"({release.first_upload}) was considered")
            if package.torch_build is None:
                unknowns.append(f"which torch build {package.name}'s binaries go with is not in the matrix "
                                + ("(its ecosystem.yaml row leaves torch_build unknown)" if package.sources
                                   else "(no row in ecosystem.yaml)"))
            origin = "sdist" if package.torch_build == "jit" and not release.wheels.get(platform) else "index"
            stack.append(StackPin(package.name, release.version, origin, pins[0].detail,
                                  pins[0].sources, None, no_deps))
        if package.final_release_matches or release.policy:
            mismatch = _policy(package, release, stack, requirements, unknowns, warnings, search, res)
            if mismatch is not None:
                search.attempts.append(Attempt(f"{package.name} {release.version}", "runtime-mismatch", mismatch,
                                               host_only=True))
                return None
        reasons += pins
    reasons += _companions(search, plan, res, stack, unknowns)
    tried = [a for a in search.attempts if a.host_only]
    for attempt in tried[:3]:
        reasons.append(Reason("stack", f"not {attempt.what}: {attempt.message}"))
    for pin in stack:
        if pin.no_deps:
            warnings.append(f"{pin.name} {pin.version} is installed with --no-deps: its metadata pins another torch "
                            f"than the {res.torch_version} this stack needs")
        if pin.builds:
            warnings.append(f"{pin.builds} {pin.version} ({pin.name}[{pin.extras[0]}]) is built from source on the "
                            "target: it needs the CUDA toolkit (nvcc) of torch's CUDA major, cuDNN and a C++ "
                            "compiler (its installation guide's prerequisites)")
        if pin.origin == "sdist":
            warnings.append(f"{pin.name} {pin.version} is built from source on the target (no prebuilt wheel fits): "
                            "it needs the CUDA toolkit (nvcc) of torch's CUDA major and a C++ compiler")
    exact = res.torch_version.split("+")[0]
    reasons = [dataclasses.replace(r, detail=r.detail.replace(
        f"matching --torch {exact}", f"the stack's torch requirement admits (with --torch {request.torch.text})"))
        if r.decision == "torch" else r for r in reasons]
    if res.evidence is not None:
        reasons.append(Reason("evidence", f"the stack's torch cell (torch {res.torch_version}, {res.backend}, "
                              f"Python {res.python}) is {res.evidence.get('status')} by probe reports"))
    if request.strict and unknowns:
        # --strict holds for the stack's own unknowns as for torch's: try the next combination
        what = ", ".join(f"{p.name} {r.version}" for p, r in plan.chosen)
        search.attempts.append(Attempt(f"{what} with torch {res.torch_version}", "rests-on-unknown",
                                       f"--strict: the answer rests on data the matrix lacks: {unknowns[0]}",
                                       host_only=True))
        return None
    return res.changed(
        packages=tuple(packages), reasons=tuple(reasons), warnings=tuple(dict.fromkeys(warnings)),
        unknowns=tuple(dict.fromkeys(unknowns)), requirements=tuple(requirements), stack=tuple(stack),
    )


def _why(search: Search, package: Package, release: Release, res: Resolution, led: str | None = None) -> str:
    """Why this release: what its metadata states and the torch build it goes with (``led``: the package whose
    curated build the stack follows, when another one's)."""
    platform = search.request.platform
    stated = release.torch_specifier(platform, res.python)
    pins = release.pins(platform, res.python)
    parts = [f"torch{stated}" if stated else None]
    parts += [f"{n}=={v}" for n, v in sorted(pins.items()) if n in (*COMPANION_NAMES, "torch-npu")]
    pinned = ", ".join(p for p in parts if p) or "no torch requirement"
    newest = "the release asked for" if any(i.name == package.name and i.specifier.startswith("==")
                                            for i in search.request.stack) else "the newest release that fits"
    built = release.torch_index
    build = {
        "default-index": f"its wheels were built against torch's {built['label']} build ({built['detail']}, curated)"
        + ("" if built["label"] == res.backend else f"; the {res.backend} build is the same CUDA major, no older "
           "(CUDA minor version compatibility)")
        if built else f"its wheel goes with torch {res.torch_version}'s default-index build; the {res.backend} build "
        f"{led} needs is the same CUDA major, no older (CUDA minor version compatibility)"
        if led else f"its wheel goes with torch {res.torch_version}'s default-index build ({res.backend})",
        "any": "its wheel carries binaries for every runtime",
        "prebuilt": "a prebuilt wheel for this torch, CUDA major and Python",
        "npu": "the Ascend plugin stack (torch_npu)",
        "jit": "its ops are compiled at run time against the installed torch (nvcc or hipcc on the target)",
        "extension": "its PyTorch integration comes with an extra",
        "wheel-pages": f"its wheel is on the project's own page for torch {res.torch_version} ({res.backend})",
    }.get(package.torch_build or "", "the torch build its binaries need is unknown")
    if not release.wheels and release.sdist is None:  # a release only the project's own pages carry
        return f"{package.name} {release.version}: {newest}; the package index holds no file of it; {build}"
    return (f"{package.name} {release.version}: {newest}; its {platform} wheel METADATA states {pinned}; "
            f"{build}")


def _companions(search: Search, plan: Plan, res: Resolution, stack: list[StackPin],
                unknowns: list[str]) -> list[Reason]:
    """The packages a chosen release requires unpinned (vLLM >= 0.25: torchcodec), pinned to the newest release
    built for the stack's torch (that package's curated table) with a wheel for the target (their reasons); else
    an unknown."""
    reasons = []
    platform, exact = search.request.platform, res.torch_version.split("+")[0]
    asked = {item.name for item in search.request.stack}
    for package, release in plan.chosen:
        for row in release.companions:
            name = row["package"]
            if name in asked or any(pin.name == name for pin in stack):
                continue  # asked for with --with: resolved with the stack
            other = search.catalog.get(name)
            found = next((r for r in other.releases if not r.yanked and not r.prerelease and r.curated_torch
                          and r.curated_torch.get("binaries") and r.fits_python(platform, res.python)
                          and any(SpecifierSet(spec).contains(exact, prereleases=True)
                                  for spec in r.curated_torch["binaries"])), None) if other else None
            if found is None:
                unknowns.append(f"{package.name} {release.version} requires {name}: no {name} release built for torch "
                                f"{exact} with a {platform} wheel for Python {res.python} is in the matrix, so pip "
                                "picks one")
                continue
            built = " or ".join(found.curated_torch["binaries"])  # type: ignore[index]
            pin = StackPin(
                name, found.version, "index",
                f"{name} {found.version}: {package.name} {release.version} requires {name} without a torch-aware "
                f"pin; the newest {name} built for torch {exact} (its binaries: torch {built}, curated)",
                (*row["source"], *found.curated_torch["source"], INDEX_SOURCE),  # type: ignore[index]
                None, False)
            stack.append(pin)
            reasons.append(Reason("stack", pin.reason, pin.sources))
    return reasons


def _prebuilt(search: Search, package: Package, release: Release, res: Resolution, warnings: list[str],
              unknowns: list[str], requirements: list[HostRequirement]) -> StackPin | None:
    """flash-attn: the prebuilt wheel for this torch minor, CUDA major, Python and platform; else from source."""
    platform = search.request.platform
    minor = ".".join(res.torch_version.split("+")[0].split(".")[:2])
    major = _cuda_major(search, res.backend) if res.family == "cuda" else None
    for row in package.wheel_rows:
        if row["version"] != release.version or row["platform"] != platform:
            continue
        excluded = any(e.get("torch") == minor and e.get("python") == res.python for e in row["exclude"])
        sources = (*row["source"], *package.sources)
        if minor in row["torch"] and major == row["cuda_major"] and res.python in row["python"] and not excluded:
            cp = "cp" + res.python.replace(".", "")
            known = _torch_abi(package, res.torch_version)
            abi = known[0] if known and known[0] in row["cxx11abi"] else \
                "TRUE" if "TRUE" in row["cxx11abi"] else row["cxx11abi"][0]
            url = row["url"].format(version=release.version, cuda_major=major, torch=minor, abi=abi, cp=cp)
            if known and known[0] == abi:
                sources = (*sources, *known[1])
            elif len(row["cxx11abi"]) > 1:
                unknowns.append(f"which C++ ABI torch {res.torch_version} ({res.backend}) was built with is not in "
                                f"the matrix: the {package.name} wheel named is cxx11abi{abi}; if "
                                "torch._C._GLIBCXX_USE_CXX11_ABI is False use the cxx11abiFALSE wheel")
            return StackPin(package.name, release.version, "url",
                            f"{package.name} {release.version}: the prebuilt wheel for torch {minor} + cu{major} + "
                            f"{cp} on {platform}, C++ ABI {abi} (release assets, curated)", sources, url)
    if release.sdist is None or res.family != "cuda" or major is None:
        search.attempts.append(Attempt(
            f"{package.name} {release.version} with torch {res.torch_version}", "stack-conflict",
            f"no {package.name} {release.version} wheel for torch {minor} + {res.backend} + Python {res.python} on "
            f"{platform}, and its source build needs a CUDA torch", False))
        return None
    if not search.allow_source:
        search.attempts.append(Attempt(
            f"{package.name} {release.version} with torch {res.torch_version}", "stack-conflict",
            f"no prebuilt {package.name} {release.version} wheel for torch {minor} + cu{major} + Python "
            f"{res.python} on {platform}", False))
        return None
    requirements.append(HostRequirement("cuda-toolkit (nvcc)", f"{major}", f"{package.name} {release.version} builds "
                                        f"from source: nvcc's major must be torch's CUDA major ({major})"))
    nearest = [row for row in package.wheel_rows if row["platform"] == platform and res.python in row["python"]]
    if nearest:
        row = max(nearest, key=lambda r: Version(r["version"]))
        warnings.append(f"no prebuilt {package.name} wheel for torch {minor} + cu{major} + Python {res.python}: the "
                        f"nearest that has one is {package.name} {row['version']} for torch {', '.join(row['torch'])} "
                        f"+ cu{row['cuda_major']} "
                        f"(ask --torch {row['torch'][-1]} --with {package.name}=={row['version']})")
    return StackPin(package.name, release.version, "sdist",
                    f"{package.name} {release.version}: no prebuilt wheel for torch {minor} + cu{major} + Python "
                    f"{res.python} on {platform}; built from the sdist on the index (nvcc {major}.x, C++ compiler)",
                    (INDEX_SOURCE, *package.sources))


def _extension_pin(search: Search, package: Package, release: Release, res: Resolution, unknowns: list[str],
                   why: Reason) -> StackPin | None:
    """transformer-engine: the release with the extra that brings its PyTorch integration and the one selecting
    the core library built for torch's CUDA major (its documents' ``pip install --no-build-isolation
    transformer_engine[pytorch]``); the extra's package is an sdist that builds against the installed torch."""
    platform = search.request.platform
    row = release.extension
    what = f"{package.name} {release.version} with torch {res.torch_version}"
    if res.family != "cuda":
        search.attempts.append(Attempt(what, "stack-conflict", (
            f"{package.name} builds its PyTorch extension against a CUDA torch (its installation guide's "
            f"prerequisites: CUDA, cuDNN); torch {res.torch_version} is a {res.backend} build"), False))
        return None
    if row is None:
        unknowns.append(f"how {package.name} {release.version} installs its PyTorch integration is not in the matrix "
                        f"(no extension row in ecosystem.yaml): the bare package was pinned")
        return StackPin(package.name, release.version, "index", why.detail, why.sources)
    major = _cuda_major(search, res.backend) if res.family == "cuda" else None
    if major is None or str(major) not in row["cuda_extras"]:
        majors = ", ".join(f"CUDA {m}" for m in row["cuda_extras"])
        search.attempts.append(Attempt(what, "stack-conflict", (
            f"{package.name} {release.version} ships its core library for {majors} only; torch {res.torch_version} "
            f"is a {res.backend} build ({package.name}'s PyTorch extension needs the core of torch's CUDA major)"),
            False))
        return None
    if platform not in row["platforms"]:
        unknowns.append(f"{package.name}'s installation guide names {', '.join(row['platforms'])} only: whether "
                        f"{package.name} {release.version} builds and runs on {platform} is not in the matrix")
    extra = row["cuda_extras"][str(major)]
    core = f"[{extra}] selects the core library for torch's CUDA {major}" if extra else \
        f"the core library it requires is the CUDA {major} one"
    detail = (f"{why.detail}: the [{row['extra']}] extra ({row['builds']}, built on the target against the "
              f"installed torch: no build isolation, after torch); {core} ({row['detail']}, curated)")
    sources = tuple(dict.fromkeys((*why.sources, *row["source"])))
    return StackPin(package.name, release.version, "index", detail, sources, None, False,
                    (row["extra"], *((extra,) if extra else ())), row["builds"])


def _page_pin(search: Search, package: Package, release: Release, res: Resolution,
              unknowns: list[str]) -> StackPin | None:
    """PyG, mmcv, DGL: the release from the project's own wheel page for this torch minor and build (pip's
    --find-links); its sdist on the default index would build against whatever torch is installed."""
    platform = search.request.platform
    minor = ".".join(res.torch_version.split("+")[0].split(".")[:2])
    for row in package.pages(release.version, platform):
        if minor in row["torch"] and res.backend in row["builds"]:
            url = row["url"].format(torch=minor, build=res.backend)
            if row["python"] is None:
                unknowns.append(f"which Pythons {package.name}'s wheel page {url} has wheels for is not in the matrix "
                                f"(Python {res.python} was assumed)")
            return StackPin(package.name, release.version, "find-links",
                            f"{package.name} {release.version}: from the project's own wheel page for torch {minor} + "
                            f"{res.backend} on {platform} (pip --find-links {url}); the default index has no wheel "
                            "built for this torch", (*row["source"], *package.sources), url)
    search.attempts.append(Attempt(
        f"{package.name} {release.version} with torch {res.torch_version}", "stack-conflict",
        f"no {package.name} {release.version} wheel page for torch {minor} + {res.backend} on {platform}", False))
    return None


def _torch_abi(package: Package, torch_version: str) -> tuple[str, tuple[str, ...]] | None:
    """The C++ ABI of the default-index build of ``torch_version`` (the first row whose specifier holds), with
    its sources, or None (unknown)."""
    exact = torch_version.split("+")[0]
    for row in package.abi_rows:
        if SpecifierSet(row["torch"]).contains(exact, prereleases=True):
            return row["abi"], tuple(row["source"])
    return None


def _host_floors(search: Search, plan: Plan, res: Resolution, requirements: list[HostRequirement]) -> None:
    """What the stack's pinned wheels' platform tags ask of the host (glibc, macOS), where more than torch's pins
    ask: the answer's host needs say it (the target's own version, or the floor assumed without --glibc/--macos)."""
    from compat_service.domain.stacks.host_wheels import describes_host, host_words, stack_floor
    from compat_service.domain.versions import cached_version as _v

    for package, release in plan.chosen:
        floor = stack_floor(search.request, package, release, res.python)
        if floor is None:
            continue
        version = f"{floor.version[0]}.{floor.version[1]}"
        name = floor.needs.lower()
        if any(q.name == name and q.version is not None and _v(q.version) >= _v(version)
               for q in (*res.requirements, *requirements)):
            continue
        given = describes_host(search.request)
        flag = "--glibc" if name == "glibc" else "--macos"
        detail = (f"{package.name} {release.version} wheels need {floor.text}; "
                  + (f"the target has {host_words(search.request)}" if given else f"no {flag} given, assumed"))
        requirements[:] = [q for q in requirements if q.name != name]
        requirements.append(HostRequirement(name, version, detail))


def _gpu_floor_failure(search: Search, plan: Plan, res: Resolution,
                       requirements: list[HostRequirement]) -> str | None:
    """Why a package's kernels do not run on the target's GPU (its architecture floor), or None; without a
    --gpu-arch the floor becomes a host requirement of the answer."""
    arch = search.request.gpu_arch
    for package, release in plan.chosen:
        floor = package.gpu_floor
        if floor is None or res.family != "cuda":
            continue
        if arch is None or not arch.startswith("sm_"):
            requirements.append(HostRequirement("gpu-arch", f">={floor['arch']}", floor["detail"]))
        elif int(arch[3:]) < int(floor["arch"][3:]):
            return (f"{package.name} {release.version} needs an NVIDIA GPU of {floor['arch']} or newer; the target "
                    f"is {arch} ({floor['detail']})")
    return None


def _policy(package: Package, release: Release, stack: list[StackPin], requirements: list[HostRequirement],
            unknowns: list[str], warnings: list[str], search: Search, res: Resolution) -> str | None:
    """vllm-ascend: the vLLM release its policy pairs it with, and the CANN it needs; why the host's CANN
    (--runtime) is not that one, or None."""
    row = release.policy or {}
    partner = package.final_release_matches
    version = row.get("vllm")
    sources = tuple(row.get("source", ())) or package.sources
    if version is None and partner and not release.prerelease:
        version = release.version
    if partner:
        if version is None:
            unknowns.append(f"which {partner} release {package.name} {release.version} goes with is not in its "
                            "policy table")
        else:
            other = search.catalog.get(partner)
            match = other.release(version) if other is not None else None
            stated = match.torch_specifier(search.request.platform, res.python) if match is not None else None
            no_deps = stated is not None and not SpecifierSet(stated).contains(res.torch_version, prereleases=True)
            stack.insert(len(stack) - 1, StackPin(
                partner, version, "index",
                f"{package.name} {release.version}'s version policy pairs it with {partner} {version}",
                sources, None, no_deps))
    cann = row.get("cann")
    have = search.request.runtime if res.family == "npu" else None
    if cann:
        if have is not None and runtime_fits("npu", have, cann) is False:
            return (f"{package.name} {release.version} needs CANN {cann} (its release compatibility matrix); the "
                    f"host has CANN {have}")
        if not any(r.name == "cann" and r.version == cann for r in requirements):
            requirements.append(HostRequirement("cann", cann, f"{package.name} {release.version}'s release "
                                                "compatibility matrix"))
    else:
        unknowns.append(f"the CANN version {package.name} {release.version} needs is not in its policy table"
                        + (f": whether it runs on CANN {have} is unknown" if have else ""))
    return None


# -- failure --------------------------------------------------------------------------------------------


def _failure(search: Search, alternatives: bool) -> AccelenvError:
    from compat_service.domain.errors import ERRORS, Alternative, Cause, StackConflictError

    request = search.request
    ordered = sorted(search.attempts, key=lambda a: a.oracle)  # the oracle's refusals after the other reasons
    keys = dict.fromkeys((a.what, a.code, a.message, a.host_only, a.oracle) for a in ordered)
    attempts = [Attempt(*key) for key in keys]
    # one cause per distinct clash (the first candidate that met it), nearest candidates first
    distinct = list({a.message: a for a in reversed(attempts)}.values())[::-1]
    causes = [Cause(constraint=a.message, origin=f"stack: {a.what}") for a in distinct[:6]]
    host = [a for a in attempts if a.host_only]
    names = " + ".join(i.text for i in request.stack)
    if host and len(host) == len(attempts) and len({a.code for a in host}) == 1:
        cls = ERRORS.get(host[0].code, StackConflictError)
        message = f"no {names} stack fits this host: {host[0].message}"
        hint = "see the stacks that work below, or name another --with release, --torch or --backend"
    elif request.strict and any(a.code == "rests-on-unknown" for a in attempts):
        cls = ERRORS["rests-on-unknown"]
        first = next(a.message for a in attempts if a.code == "rests-on-unknown")
        message = f"no {names} stack fits with --strict: {first}"
        hint = "drop --strict to take the answer with what it rests on, or name releases whose facts are sourced"
    else:
        cls = StackConflictError
        first = attempts[0].message if attempts else "no candidate release"
        message = f"no {names} stack fits: {first}"
        hint = "see the stacks that work below; a --with package's pins decide torch and its companions"
    alts = [Alternative(description=d, request=r) for d, r in (_nearest(search) if alternatives else [])]
    return cls(message, hint=hint, causes=causes, alternatives=alts)


def _nearest(search: Search) -> list[tuple[str, dict[str, str]]]:
    """Nearby requests that work: the stack without --torch's limit, the nearest release of a pinned package,
    torch without the stack."""
    request = search.request
    out: list[tuple[str, dict[str, str]]] = []
    tries: list[ResolveRequest] = []
    if request.torch.kind != "latest":
        tries.append(request.changed(torch=TorchSpec("latest", "latest")))
    for item in request.stack:
        if item.specifier:
            loose = tuple(PackageRequest(i.name, "") if i is item else i for i in request.stack)
            tries.append(request.changed(stack=loose))
    if request.python is not None:
        tries.append(request.changed(python=None))
    if request.backend.family in ("cpu", None) and request.os != "macos":
        # a CPU target: the same stack on a CUDA host (the ecosystem's wheels are mostly CUDA builds)
        tries.append(request.changed(backend=BackendSpec("cuda", "family", "cuda")))
    if request.backend.kind == "label":
        tries.append(request.changed(backend=BackendSpec(request.backend.family or "cpu", "family",
                                                                       request.backend.family)))
    from compat_service.domain.errors import AccelenvError

    for attempt in tries:
        try:
            found = resolve_stack(attempt, search.matrix, None, search.catalog, alternatives=False)
        except AccelenvError:
            continue  # that one does not work either
        text = " + ".join(f"{p.name} {p.version}" for p in found.stack)
        target = f" on a {found.family} target" if found.family != (request.backend.family or "cpu") else ""
        out.append((f"{text} with torch {found.torch_version} ({found.backend}, Python {found.python}){target}",
                    found_request(attempt, found)))
    try:
        alone = resolve(request.changed(stack=()), search.matrix, None)
        names = ", ".join(i.name for i in request.stack)
        out.append((f"torch {alone.torch_version} ({alone.backend}) without {names}",
                    request.changed(stack=()).to_strings()))
    except AccelenvError:
        pass  # torch alone does not fit either: no such alternative
    return _unique(out)[:4]


def _unique(items: list[tuple[str, dict[str, str]]]) -> list[tuple[str, dict[str, str]]]:
    seen: set[str] = set()
    out = []
    for description, req in items:
        if description not in seen:
            seen.add(description)
            out.append((description, req))
    return out


def found_request(request: ResolveRequest, found: Resolution) -> dict[str, str]:
    """The request that names the stack found exactly (for an alternative)."""
    pinned = tuple(PackageRequest(p.name, f"=={p.version}") for p in found.stack
                   if any(i.name == p.name for i in request.stack))
    return request.changed(stack=pinned, torch=TorchSpec(found.torch_version.split("+")[0], "exact")
                               ).to_strings()
