"""Pure derivation of index facts from a project's file list and the METADATA of chosen wheels.

No I/O here: `refresh` fetches, this module decides which wheels' metadata it needs (`metadata_wanted`)
and turns files plus metadata into a `PackageFacts` (`derive_package`). Wheel names, tags, versions,
requirements and markers are parsed with ``packaging``.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from packaging.markers import InvalidMarker, Marker
from packaging.metadata import parse_email
from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from compat_service.domain.backends import PLATFORMS, python_sort_key
from compat_service.domain.matrix.index.index_facts import (
    PackageConfig,
    PackageFacts,
    RefreshConfig,
    ReleaseFact,
    RequirementFact,
    RuntimeFact,
    VariantIndexFacts,
    WheelFact,
)
from compat_service.domain.matrix.markers import evaluate, marker_environment


@dataclass(frozen=True)
class IndexFile:
    """One file of a project page, reduced to what the facts need."""

    filename: str
    url: str
    upload_time: dt.datetime | None
    yanked: bool
    yanked_reason: str | None
    requires_python: str | None
    sha256: str | None
    has_metadata: bool | None
    size: int | None


@dataclass(frozen=True)
class ParsedFile:
    file: IndexFile
    version: Version
    #: None for an sdist
    tags: frozenset[Tag] | None


@dataclass(frozen=True)
class BuildLabel:
    """A row of build_variants.yaml, as far as naming a runtime needs it."""

    label: str
    family: str
    runtime: str | None


def parse_file(file: IndexFile, project: str) -> ParsedFile | None:
    """The file's version and tags, or None for a file that is neither a wheel nor an sdist of ``project``."""
    try:
        if file.filename.endswith(".whl"):
            name, version, _build, tags = parse_wheel_filename(file.filename)
            parsed = ParsedFile(file, version, tags)
        else:
            name, version = parse_sdist_filename(file.filename)
            parsed = ParsedFile(file, version, None)
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None
    return parsed if canonicalize_name(name) == canonicalize_name(project) else None


def python_of(tag: Tag) -> str | None:
    """``cp312-cp312`` -> 3.12, ``cp313-cp313t`` -> 3.13t, ``cp37-cp37m`` and ``cp310-none`` -> 3.7 / 3.10,
    ``cp310-abi3`` and ``py310-none`` -> ``3.10+``, ``py3-none`` -> ``any``; None for other interpreters."""
    interpreter, abi = tag.interpreter, tag.abi
    if interpreter.startswith("py") and interpreter[2:] in ("3", "30") and abi == "none":
        return "any"
    if interpreter.startswith("py3") and interpreter[3:].isdigit() and abi == "none":
        return f"3.{interpreter[3:]}+"  # py39-none-manylinux (xformers 0.0.35): CPython 3.9 and later
    if not interpreter.startswith("cp") or not interpreter[2:].isdigit() or len(interpreter) < 4:
        return None  # PyPy, Jython, py2: not a platform accelenv resolves for
    version = f"{interpreter[2]}.{interpreter[3:]}"
    if abi == "abi3":
        return f"{version}+"
    if abi.startswith(interpreter) and abi[len(interpreter) :] in ("", "m", "u", "mu", "d", "dm"):
        return version
    if abi == f"{interpreter}t":
        return f"{version}t"
    if abi == "none":
        return version  # interpreter-specific, ABI-agnostic: older macOS torch wheels (cp310-none-macosx_...)
    return None


def platforms_of(platform_tag: str, config: RefreshConfig) -> list[str]:
    if platform_tag == "any":
        return [rule.platform for rule in config.platforms]
    return [rule.platform for rule in config.platforms if any(fnmatch.fnmatchcase(platform_tag, p) for p in rule.tags)]


def wheel_facts(parsed: ParsedFile, config: RefreshConfig) -> list[WheelFact]:
    found = set()
    for tag in parsed.tags or ():
        python = python_of(tag)
        if python is None:
            continue
        for platform in platforms_of(tag.platform, config):
            found.add((platform, python))
    return [WheelFact(platform=p, python=py, file=parsed.file.filename, sha256=parsed.file.sha256) for p, py in found]


def _python_rank(python: str) -> tuple[int, int, int]:
    if python == "any":
        return (3, 99, 0)
    if python.endswith("+"):
        return python_sort_key(python[:-1])
    return python_sort_key(python)


def _wheel_sort_key(fact: WheelFact) -> tuple[int, tuple[int, int, int], str]:
    return (PLATFORMS.index(fact.platform), _python_rank(fact.python), fact.file)


def since_filter(parsed: Iterable[ParsedFile], package: PackageConfig) -> list[ParsedFile]:
    floor = Version(package.since)
    return [p for p in parsed if p.version >= floor]


def metadata_wanted(parsed: Iterable[ParsedFile], config: RefreshConfig) -> dict[tuple[str, str], ParsedFile]:
    """For each (version, platform): the wheel whose METADATA is read — the newest GIL CPython tag, then name."""
    best: dict[tuple[str, str], tuple[tuple[int, int, int], str, ParsedFile]] = {}
    for item in parsed:
        if item.tags is None or item.file.yanked:
            continue
        for fact in wheel_facts(item, config):
            if fact.python.endswith("t"):
                continue
            rank = (_python_rank(fact.python), item.file.filename)
            key = (str(item.version), fact.platform)
            if key not in best or rank > best[key][:2]:
                best[key] = (*rank, item)
    return {key: value[2] for key, value in best.items()}


def _environment(config: RefreshConfig, platform: str, python: str) -> dict[str, str]:
    rule = next(r for r in config.platforms if r.platform == platform)
    return marker_environment(rule.markers, python)


def marker_applies(marker: Marker | None, environment: Mapping[str, str]) -> bool:
    return evaluate(marker, dict(environment)) is True


def requirements_of(raw_metadata: bytes) -> tuple[list[Requirement], str | None]:
    """Requires-Dist (entries that do not parse are skipped) and Requires-Python of a METADATA file."""
    # the headers only: the long description after the first blank line holds no field read here
    raw, _unparsed = parse_email(raw_metadata.split(b"\n\n", 1)[0].split(b"\r\n\r\n", 1)[0])
    requirements = []
    for text in raw.get("requires_dist", []):
        try:
            requirements.append(Requirement(text))
        except (InvalidRequirement, InvalidMarker):
            continue
    return requirements, raw.get("requires_python")


def _pinned_version(requirement: Requirement) -> str | None:
    specs = list(requirement.specifier)
    if len(specs) == 1 and specs[0].operator in ("==", "==="):
        return specs[0].version.removesuffix(".*")
    return None


def label_for(family: str, version: str | None, labels: Iterable[BuildLabel]) -> str | None:
    """The build label whose family and runtime (major.minor) match a pinned runtime version."""
    if version is None:
        return None
    try:
        release = Version(version).release
    except InvalidVersion:
        return None
    short = ".".join(str(part) for part in release[:2])
    for row in labels:
        if row.family == family and row.runtime == short:
            return row.label
    return None


def runtime_fact(
    requirements: list[Requirement],
    environment: Mapping[str, str],
    config: RefreshConfig,
    labels: list[BuildLabel],
    platform: str,
    filename: str,
) -> RuntimeFact:
    for rule in config.runtimes:
        for requirement in requirements:
            if canonicalize_name(requirement.name) != canonicalize_name(rule.requirement):
                continue
            if not marker_applies(requirement.marker, environment):
                continue
            version = _pinned_version(requirement)
            return RuntimeFact(
                platform=platform,
                family=rule.family,
                label=label_for(rule.family, version, labels),
                version=version,
                requirement=str(requirement),
                toolkit=version if rule.pins_toolkit else None,
                file=filename,
            )
    cpu = next((row.label for row in labels if row.family == "cpu"), "cpu")
    return RuntimeFact(platform=platform, family="cpu", label=cpu, version=None, requirement=None, file=filename)


def derive_package(
    package: PackageConfig,
    config: RefreshConfig,
    files: Iterable[IndexFile],
    metadata: Mapping[str, bytes],
    labels: list[BuildLabel],
    *,
    index: str,
    retrieved: dt.date,
    variant_indexes: list[VariantIndexFacts] | None = None,
) -> PackageFacts:
    """Every fact of one project: ``metadata`` maps a wheel file name to its raw METADATA."""
    parsed = [p for p in (parse_file(f, package.name) for f in files) if p is not None]
    parsed = since_filter(parsed, package)
    by_version: dict[Version, list[ParsedFile]] = defaultdict(list)
    for item in parsed:
        by_version[item.version].append(item)
    derive = _Derive(package, config, metadata, labels, metadata_wanted(parsed, config))
    releases = [derive.release(version, by_version[version]) for version in sorted(by_version)]
    return PackageFacts(
        package=package.name,
        index=index,
        retrieved=retrieved,
        releases=releases,
        variant_indexes=variant_indexes or [],
    )


class _Derive:
    """One project's release facts from its files and the METADATA of the wheels read."""

    def __init__(
        self,
        package: PackageConfig,
        config: RefreshConfig,
        metadata: Mapping[str, bytes],
        labels: list[BuildLabel],
        wanted: Mapping[tuple[str, str], ParsedFile],
    ) -> None:
        self.config = config
        self.metadata = metadata
        self.labels = labels
        self.wanted = wanted
        self.names = {canonicalize_name(n) for n in package.requirements}
        self.want_runtime = any(canonicalize_name(r.requirement) in self.names for r in config.runtimes)

    def release(self, version: Version, files: list[ParsedFile]) -> ReleaseFact:
        items = sorted(files, key=lambda p: p.file.filename)
        live = [p for p in items if not p.file.yanked]
        wheels: set[WheelFact] = set()
        for item in live:
            wheels.update(wheel_facts(item, self.config))
        requires_python = next(((p.file.requires_python, p.file.filename) for p in live if p.file.requires_python),
                               (None, None))
        runtimes: list[RuntimeFact] = []
        requirements: list[RequirementFact] = []
        for platform in PLATFORMS:
            choice = self.wanted.get((str(version), platform))
            if choice is None or choice.file.filename not in self.metadata:
                continue
            reqs, metadata_python = requirements_of(self.metadata[choice.file.filename])
            if requires_python[0] is None and metadata_python:
                # the page gave none (older uploads): the wheel's own Requires-Python, from its METADATA
                requires_python = (metadata_python, choice.file.filename)
            if self.want_runtime:
                runtimes.append(self._runtime(reqs, choice, platform))
            pythons = {w.python for w in wheels if w.platform == platform}
            requirements += self._requirements(reqs, platform, pythons, choice.file.filename)
        return _release_fact(version, items, sorted(wheels, key=_wheel_sort_key), requires_python, runtimes,
                             requirements)

    def _runtime(self, reqs: list[Requirement], choice: ParsedFile, platform: str) -> RuntimeFact:
        """The accelerator runtime the chosen wheel's requirements pin, for its newest Python's environment."""
        python = max((w.python for w in wheel_facts(choice, self.config) if w.platform == platform), key=_python_rank)
        environment = _environment(self.config, platform, python)
        return runtime_fact(reqs, environment, self.config, self.labels, platform, choice.file.filename)

    def _requirements(
        self, reqs: list[Requirement], platform: str, pythons: set[str], filename: str
    ) -> list[RequirementFact]:
        """The requirements on the recorded packages an install on ``platform`` pulls in (not extras, not the
        runtime, not ones whose marker holds for none of the platform's wheels)."""
        out = []
        for requirement in reqs:
            if not self._recorded(requirement):
                continue
            if not any(marker_applies(requirement.marker, _environment(self.config, platform, py)) for py in pythons):
                continue  # declared for other platforms only (triton on Windows: platform_system == "Linux")
            out.append(
                RequirementFact(
                    platform=platform,
                    name=canonicalize_name(requirement.name),
                    specifier=str(requirement.specifier),
                    marker=str(requirement.marker) if requirement.marker is not None else None,
                    file=filename,
                )
            )
        return out

    def _recorded(self, requirement: Requirement) -> bool:
        """A requirement on a package the facts record, not an optional extra and not the runtime."""
        if canonicalize_name(requirement.name) not in self.names:
            return False
        if requirement.marker is not None and "extra" in str(requirement.marker):
            return False  # optional extras are not what an install pulls in
        required = canonicalize_name(requirement.name)
        return not any(required == canonicalize_name(r.requirement) for r in self.config.runtimes)


def _release_fact(
    version: Version,
    items: list[ParsedFile],
    wheels: list[WheelFact],
    requires_python: tuple[str | None, str | None],
    runtimes: list[RuntimeFact],
    requirements: list[RequirementFact],
) -> ReleaseFact:
    live = [p for p in items if not p.file.yanked]
    uploads = [p.file.upload_time for p in items if p.file.upload_time is not None]
    yanked_items = [p for p in items if p.file.yanked]
    return ReleaseFact(
        version=str(version),
        first_upload=min(uploads) if uploads else None,
        prerelease=version.is_prerelease,
        postrelease=version.is_postrelease,
        yanked=bool(items) and not live,
        yanked_reason=_yanked_reason(yanked_items) if not live else None,
        yanked_files=[p.file.filename for p in yanked_items],
        requires_python=requires_python[0],
        requires_python_file=requires_python[1],
        sdist=next((p.file.filename for p in live if p.tags is None), None),
        wheels=wheels,
        runtimes=runtimes,
        requirements=requirements,
    )


def _yanked_reason(yanked: list[ParsedFile]) -> str | None:
    return next((p.file.yanked_reason for p in yanked if p.file.yanked_reason), None)


def variant_wheels(
    files: Iterable[IndexFile], package: PackageConfig, config: RefreshConfig, label: str
) -> dict[str, list[WheelFact]]:
    """A variant index's wheels of this label, by public version (``2.13.0+cu130`` -> ``2.13.0``)."""
    out: dict[str, set[WheelFact]] = defaultdict(set)
    parsed = [p for p in (parse_file(f, package.name) for f in files) if p is not None and p.tags is not None]
    for item in since_filter(parsed, package):
        if item.file.yanked or (item.version.local is not None and item.version.local != label):
            continue
        out[item.version.public].update(wheel_facts(item, config))
    return {v: sorted(ws, key=_wheel_sort_key) for v, ws in sorted(out.items(), key=lambda kv: Version(kv[0]))}
