"""The ecosystem catalog: every ecosystem package's releases as the index states them, with the curated rows.

The ecosystem packages are the projects ``matrix_data/index/refresh.yaml`` reads beyond torch and its own
companions (`index_layer.PROJECTS`): a line there adds a package. For each, the generated facts
(``index/<package>.yaml``: torch and companion pins per platform with their markers, Requires-Python, wheels
per platform and Python, sdist, yanked) are joined with ``ecosystem.yaml`` (the torch build the binaries go
with, torchao's table, flash-attn's prebuilt wheels, vllm-ascend's policy).

Built once per content: the compiled catalog is JSON in the matrix cache directory, keyed by a hash of the
files it is made of and of this module and the schema, so `accelenv resolve --with vllm` reads one small JSON
file and never YAML or pydantic. No pydantic on the fast path. Each package is kept in it as a JSON text of
its own, parsed when the package is first asked for: `--with vllm` parses vllm's facts, not every package's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from compat_service.domain.json_types import JsonObject

if TYPE_CHECKING:
    from compat_service.domain.errors import Cause
    from compat_service.domain.matrix.problems import Problem
    from compat_service.domain.stacks.schema import CompanionRow, ExtensionRow, TorchIndexRow, TorchRow, WheelPageRow

ECOSYSTEM_FILE = "ecosystem.yaml"
#: bump when the compiled layout changes
CATALOG_FORMAT = "9"
ORACLE_FILE = "stack-oracle.yaml"
_OWN_FILES = tuple(Path(__file__).with_name(name) for name in ("catalog.py", "schema.py"))


class Requirement:
    """One Requires-Dist entry a release's wheel states for a platform."""

    __slots__ = ("marker", "name", "specifier")

    def __init__(self, name: str, specifier: str, marker: str | None) -> None:
        self.name = name
        self.specifier = specifier
        self.marker = marker

    @property
    def exact(self) -> str | None:
        """The version of an ``==X`` pin (local tag kept), else None."""
        spec = self.specifier.strip()
        if spec.startswith("==") and "," not in spec and not spec.endswith(".*"):
            return spec[2:].strip()
        return None


class Release:
    """One release of an ecosystem package (plain slots, not a dataclass: built on `resolve --with`'s fast path)."""

    __slots__ = (
        "_parsed",
        "curated_torch",
        "first_upload",
        "oracle",
        "package",
        "policy",
        "prerelease",
        "requires",
        "requires_python",
        "companions",
        "sdist",
        "torch_index",
        "extension",
        "version",
        "wheel_tags",
        "wheels",
        "yanked",
    )

    def __init__(
        self,
        *,
        package: str,
        version: str,
        yanked: bool,
        prerelease: bool,
        requires_python: str | None,
        sdist: str | None,
        wheels: dict[str, tuple[str, ...]],
        wheel_tags: dict[str, tuple[tuple[str, str], ...]] | None = None,
        requires: dict[str, tuple[Requirement, ...]],
        curated_torch: JsonObject | None,
        policy: JsonObject | None,
        first_upload: str | None = None,
        oracle: dict[str, dict[str, str | None]] | None = None,
        torch_index: JsonObject | None = None,
        companions: tuple[JsonObject, ...] = (),
        extension: JsonObject | None = None,
    ) -> None:
        self.package = package
        self.version = version
        self.yanked = yanked
        self.prerelease = prerelease
        self.requires_python = requires_python
        self.sdist = sdist
        #: platform -> Python tags of its wheels (``3.11``, ``3.13t``, ``3.8+`` abi3, ``any``)
        self.wheels = wheels
        #: platform -> (Python tag, the wheel's platform tags dot-joined as in its file name) per wheel file
        #: (``("3.12", "manylinux_2_28_x86_64")``): what `host_wheels` checks against the target's tags
        self.wheel_tags = wheel_tags or {}
        #: platform -> the requirements read from that platform's wheel
        self.requires = requires
        #: curated torch row (torchao): {"binaries": [...], "python_api": [...], "source": [...]}
        self.curated_torch = curated_torch
        #: curated policy row (vllm-ascend): {"vllm": ..., "cann": ..., "source": [...]}
        self.policy = policy
        #: the UTC date of the release's first upload (ISO), where the index gives it
        self.first_upload = first_upload
        #: the resolution oracle's outcomes (index/stack-oracle.yaml): platform -> Python -> None when the stack
        #: answer resolved with every pin unchanged, else why not (the failing requirement)
        self.oracle = oracle or {}
        #: the torch build its wheels were compiled against (schema.TorchIndexRow as a plain dict: label, detail,
        #: source), where the package's documents name one; None: the default-index build of its pin
        self.torch_index = torch_index
        #: ecosystem packages it requires unpinned (schema.CompanionRow as plain dicts: package, source)
        self.companions = companions
        #: how it installs its PyTorch integration (schema.ExtensionRow as a plain dict: extra, builds,
        #: cuda_extras keyed by the CUDA major as text, platforms, detail, source), where its documents say
        self.extension = extension
        self._parsed: Version | None = None

    @property
    def parsed(self) -> Version:
        if self._parsed is None:
            self._parsed = Version(self.version)
        return self._parsed

    def requirements(self, platform: str, python: str | None) -> tuple[Requirement, ...]:
        """The requirements that apply on ``platform`` for ``python`` (markers evaluated)."""
        out = []
        for req in self.requires.get(platform, ()):
            if req.marker is None or python is None or _marker_holds(req.marker, platform, python):
                out.append(req)
        return tuple(out)

    def torch_specifier(self, platform: str, python: str | None) -> str | None:
        """The torch requirement the metadata states on ``platform`` ('' = any torch); None = states none."""
        found = [r.specifier for r in self.requirements(platform, python) if r.name == "torch"]
        return ",".join(s for s in found if s) if found else None

    def pins(self, platform: str, python: str | None) -> dict[str, str]:
        """Exact pins (``==X``) of other packages on ``platform``."""
        return {r.name: r.exact for r in self.requirements(platform, python) if r.exact is not None}

    def oracle_failure(self, platform: str, python: str | None) -> str | None:
        """Why the oracle found this release's stack unresolvable on ``platform`` (at ``python``; without one:
        at every Python it checked), or None (resolvable, or not checked)."""
        checked = self.oracle.get(platform)
        if not checked:
            return None
        if python is not None:
            return checked.get(python)
        failures = list(checked.values())
        return failures[0] if all(failures) else None

    def fits_python(self, platform: str, python: str) -> bool:
        tags = self.wheels.get(platform, ())
        if not _python_in(self.requires_python, python):
            return False
        return any(_tag_fits(tag, python) for tag in tags)


class Package:
    """An ecosystem package: the curated rule and its releases, newest first (yanked and pre-releases included;
    the resolver skips them unless named)."""

    __slots__ = (
        "abi_rows",
        "final_release_matches",
        "gpu_floor",
        "index",
        "name",
        "oracle_source",
        "page_rows",
        "releases",
        "retrieved",
        "sources",
        "torch_build",
        "wheel_rows",
    )

    def __init__(self, *, name: str, torch_build: str | None, sources: tuple[str, ...], index: str | None,
                 retrieved: str | None, releases: tuple[Release, ...], wheel_rows: tuple[JsonObject, ...],
                 final_release_matches: str | None, oracle_source: str | None = None,
                 abi_rows: tuple[JsonObject, ...] = (), gpu_floor: JsonObject | None = None,
                 page_rows: tuple[JsonObject, ...] = ()) -> None:
        self.name = name
        #: the project's own wheel pages (schema.WheelPageRow as plain dicts): PyG's, mmcv's, DGL's
        self.page_rows = page_rows
        #: the C++ ABI of torch's default-index builds per torch specifier (schema.AbiRow as plain dicts)
        self.abi_rows = abi_rows
        #: the oldest NVIDIA architecture its kernels run on (schema.GpuFloor as a plain dict), or None
        self.gpu_floor = gpu_floor
        self.torch_build = torch_build
        self.sources = sources
        self.index = index
        self.retrieved = retrieved
        self.releases = releases
        #: flash-attn's prebuilt wheel rows (schema.WheelRow as plain dicts)
        self.wheel_rows = wheel_rows
        self.final_release_matches = final_release_matches
        #: who checked the stack answers and where (``uv 0.13.9 against pip-default, 2026-12-06``), or None
        self.oracle_source = oracle_source

    def release(self, version: str) -> Release | None:
        try:
            wanted = Version(version)
        except InvalidVersion:
            return None
        return next((r for r in self.releases if r.parsed == wanted), None)

    def platforms(self) -> list[str]:
        """Platforms any live release publishes wheels (or prebuilt wheels) for."""
        found = {p for r in self.releases if not r.yanked for p, tags in r.wheels.items() if tags}
        found |= {row["platform"] for row in self.wheel_rows}
        found |= {platform for row in self.page_rows for platform in row["platforms"]}
        return sorted(found)

    def pages(self, version: str, platform: str) -> list[JsonObject]:
        """The wheel-page rows that carry ``version`` on ``platform``."""
        return [row for row in self.page_rows if version in row["versions"] and platform in row["platforms"]]


class Catalog:
    """The ecosystem packages by name; each is parsed and built from its compiled JSON text the first time it
    is asked for."""

    def __init__(self, raw: dict[str, str]) -> None:
        self._raw = raw
        self._built: dict[str, Package] = {}

    @property
    def packages(self) -> dict[str, Package]:
        return {name: self.get(name) for name in self._raw}  # type: ignore[misc]

    def names(self) -> list[str]:
        return sorted(self._raw)

    def get(self, name: str) -> Package | None:
        if name not in self._built:
            raw = self._raw.get(name)
            if raw is None:
                return None
            self._built[name] = _package(json.loads(raw))
        return self._built[name]

    def fact_count(self) -> int:
        """Release facts, wheel (platform x Python) facts and requirement facts: what the catalog rests on."""
        count = 0
        for package in self.packages.values():
            for release in package.releases:
                count += 1 + sum(len(t) for t in release.wheels.values())
                count += sum(len(r) for r in release.requires.values())
        return count


# -- helpers (pure) -----------------------------------------------------------------------------------------


def _python_key(python: str) -> tuple[int, int]:
    major, minor = python.rstrip("t").split(".")[:2]
    return int(major), int(minor)


def _tag_fits(tag: str, python: str) -> bool:
    """Whether a wheel's Python tag installs on ``python`` (``3.8+`` abi3 never on a free-threaded build)."""
    if tag == "any":
        return True
    if tag.endswith("+"):
        return not python.endswith("t") and _python_key(python) >= _python_key(tag[:-1])
    return tag == python


def _python_in(requires_python: str | None, python: str) -> bool:
    if not requires_python:
        return True
    try:
        spec = SpecifierSet(requires_python)
    except InvalidSpecifier:
        return True  # an unreadable Requires-Python is not enforced by pip either
    return spec.contains(f"{python.rstrip('t')}.0", prereleases=True)


_MARKER_ENV: dict[str, dict[str, str]] = {}


def _marker_holds(marker: str, platform: str, python: str) -> bool:
    from packaging.markers import InvalidMarker, Marker

    from compat_service.domain.matrix.markers import evaluate, marker_environment

    base = _MARKER_ENV.get(platform)
    if base is None:
        return True  # a platform without a marker environment: keep the requirement (cannot tell)
    try:
        return evaluate(Marker(marker), marker_environment(base, python.rstrip("t"))) is not False
    except InvalidMarker:
        return True  # pip skips what it cannot read too: keep the requirement


# -- loading ------------------------------------------------------------------------------------------------


def _key(data_dir: Path) -> str:
    """The key of the compiled catalog: this module, the schema and the data files by path, size and
    modification time (reading the generated YAML on every `resolve --with` costs more than the answer; any
    edit, checkout or refresh changes a file's stats)."""
    from compat_service.domain.matrix.loading.snapshot import stat_key

    files = [*_OWN_FILES, data_dir / ECOSYSTEM_FILE, data_dir / "sources.yaml", *(data_dir / "index").glob("*.yaml")]
    return stat_key(CATALOG_FORMAT, sorted(files))


_LOADED: dict[str, Catalog] = {}


def load_catalog(data_dir: Path | None = None) -> Catalog:
    """The catalog of ``data_dir`` (default: the bundled matrix_data), from its compiled JSON when current."""
    from compat_service.domain.matrix.loading.snapshot import bundled_data_dir, cache_file, read_cached, write_cached

    base = Path(data_dir) if data_dir is not None else bundled_data_dir()
    key = _key(base)
    if key in _LOADED:
        return _LOADED[key]
    compiled = cache_file("ecosystem", key)
    content = read_cached(compiled, key)
    raw = None
    if content is not None:
        try:
            raw = json.loads(content)
        except ValueError:
            raw = None
    if raw is None:
        built = compile_catalog(base)
        raw = {
            "format": built["format"],
            "marker_env": built["marker_env"],
            "packages": {p["name"]: json.dumps(p, separators=(",", ":")) for p in built["packages"]},
        }
        write_cached(compiled, key, json.dumps(raw, separators=(",", ":")).encode())
    catalog = _from_raw(raw)
    _LOADED[key] = catalog
    return catalog


def _from_raw(raw: JsonObject) -> Catalog:
    """The catalog of the compiled file: the marker environments, and each package's JSON text by name."""
    _MARKER_ENV.update(raw.get("marker_env", {}))
    return Catalog(raw["packages"])


def _package(p: JsonObject) -> Package:
    releases = tuple(
        Release(
            package=p["name"],
            version=r["version"],
            yanked=r["yanked"],
            prerelease=r["prerelease"],
            requires_python=r["requires_python"],
            sdist=r["sdist"],
            wheels={k: tuple(v) for k, v in r["wheels"].items()},
            wheel_tags={k: tuple((py, tags) for py, tags in v) for k, v in r.get("wheel_tags", {}).items()},
            requires={k: tuple(Requirement(*item) for item in v) for k, v in r["requires"].items()},
            curated_torch=r.get("curated_torch"),
            policy=r.get("policy"),
            first_upload=r.get("first_upload"),
            oracle=r.get("oracle"),
            torch_index=r.get("torch_index"),
            companions=tuple(r.get("companions", ())),
            extension=r.get("extension"),
        )
        for r in p["releases"]
    )
    return Package(
        name=p["name"],
        torch_build=p["torch_build"],
        sources=tuple(p["sources"]),
        index=p["index"],
        retrieved=p["retrieved"],
        releases=releases,
        wheel_rows=tuple(p["wheel_rows"]),
        final_release_matches=p.get("final_release_matches"),
        oracle_source=p.get("oracle_source"),
        abi_rows=tuple(p.get("abi_rows", ())),
        gpu_floor=p.get("gpu_floor"),
        page_rows=tuple(p.get("page_rows", ())),
    )


def ecosystem_problems(data_dir: Path) -> list[Cause]:
    """Every problem of ecosystem.yaml and the ecosystem's generated files (`matrix validate` reports them)."""
    from compat_service.domain.errors import MatrixDataError

    try:
        compile_catalog(data_dir)
    except MatrixDataError as exc:  # its causes are the problems
        return list(exc.causes)
    return []


def compile_catalog(data_dir: Path) -> JsonObject:
    """Read and validate everything the catalog is made of (YAML, pydantic): the slow path, once per content."""
    import yaml
    from pydantic import ValidationError

    from compat_service.domain.errors import MatrixDataError
    from compat_service.domain.matrix.index.index_facts import PackageFacts, RefreshConfig
    from compat_service.domain.matrix.index.index_layer import PROJECTS, read_index_file
    from compat_service.domain.matrix.problems import Problem, format_loc
    from compat_service.domain.stacks.schema import EcosystemFile, StackOracleFile

    problems: list[Problem] = []
    config, found = read_index_file(data_dir, "refresh.yaml", RefreshConfig)
    problems += found
    names = [p.name for p in config.packages if p.name not in PROJECTS] if config is not None else []
    curated: JsonObject = {}
    file = data_dir / ECOSYSTEM_FILE
    if file.is_file():
        try:
            parsed = EcosystemFile.model_validate(yaml.safe_load(file.read_text(encoding="utf-8")))
            curated = {p.name: p for p in parsed.packages}
        except yaml.YAMLError as exc:
            problems.append(Problem(ECOSYSTEM_FILE, "", f"YAML error: {exc}"))
        except ValidationError as exc:
            problems += [Problem(ECOSYSTEM_FILE, format_loc(e["loc"]), e["msg"]) for e in exc.errors()]
    try:
        keys = {s["key"] for s in yaml.safe_load((data_dir / "sources.yaml").read_text(encoding="utf-8"))["sources"]}
    except (OSError, yaml.YAMLError, KeyError, TypeError):
        keys = set()
    try:
        variants = yaml.safe_load((data_dir / "build_variants.yaml").read_text(encoding="utf-8"))["variants"]
        labels = {v["label"] for v in variants}
    except (OSError, yaml.YAMLError, KeyError, TypeError):
        labels = set()
    for name, package in curated.items():
        if name not in names:
            problems.append(
                Problem(ECOSYSTEM_FILE, name, "not an ecosystem package: add its line to index/refresh.yaml")
            )
        rows = (*package.torch, *package.wheels, *package.policy, *package.cxx11abi, *package.wheel_pages,
                *package.torch_index, *package.companions, *package.extension,
                *((package.gpu_floor,) if package.gpu_floor else ()))
        cited = [*package.source, *(s for row in rows for s in row.source)]
        for key in cited:
            if key not in keys:
                problems.append(Problem(ECOSYSTEM_FILE, f"{name}.source", f"source key {key!r} is not in sources.yaml"))
        for row in package.torch:
            for spec in [*(row.binaries or []), *(row.python_api or [])]:
                try:
                    SpecifierSet(spec)
                except InvalidSpecifier:
                    where = f"{name}.torch.{row.version}"
                    problems.append(Problem(ECOSYSTEM_FILE, where, f"{spec!r} is not a specifier"))
        problems += _torch_index_problems(name, package.torch_index, labels)
        for ext in package.extension:
            if _specifier(ext.versions) is None:
                problems.append(Problem(ECOSYSTEM_FILE, f"{name}.extension.{ext.versions}",
                                        f"{ext.versions!r} is not a specifier"))
        for companion in package.companions:
            where = f"{name}.companions.{companion.versions}"
            if _specifier(companion.versions) is None:
                problems.append(Problem(ECOSYSTEM_FILE, where, f"{companion.versions!r} is not a specifier"))
            if companion.package not in names:
                problems.append(Problem(ECOSYSTEM_FILE, where, f"{companion.package!r} is not an ecosystem package"))
    oracle: dict[tuple[str, str], dict[str, dict[str, str | None]]] = {}
    oracle_source = None
    oracle_file = data_dir / "index" / ORACLE_FILE
    if oracle_file.is_file():
        try:
            checked = StackOracleFile.model_validate(yaml.safe_load(oracle_file.read_text(encoding="utf-8")))
        except yaml.YAMLError as exc:
            problems.append(Problem(f"index/{ORACLE_FILE}", "", f"YAML error: {exc}"))
        except ValidationError as exc:
            problems += [Problem(f"index/{ORACLE_FILE}", format_loc(e["loc"]), e["msg"]) for e in exc.errors()]
        else:
            oracle_source = f"{checked.resolver} against {checked.index}, {checked.retrieved}"
            for o in checked.outcomes:
                if o.needs_build:
                    continue  # installs by building an sdist on the host: not a refusal
                why = None if o.resolvable else (
                    f"{o.failing} cannot be installed" if o.failing else f"pins changed: {', '.join(o.changed)}"
                    if o.changed else "no resolution")
                oracle.setdefault((o.package, o.version), {}).setdefault(o.platform, {})[o.python] = why
    packages = []
    for name in names:
        facts, found = read_index_file(data_dir, f"{name}.yaml", PackageFacts)
        problems += found
        row = curated.get(name)
        torch_rows = {r.version: r for r in row.torch} if row else {}
        policy_rows = {r.version: r for r in row.policy} if row else {}
        index_rows: list[tuple[SpecifierSet, TorchIndexRow]] = []
        for index_row in row.torch_index if row else ():
            spec = _specifier(index_row.versions)
            if spec is not None:
                index_rows.append((spec, index_row))
        companion_rows: list[tuple[SpecifierSet, CompanionRow]] = []
        for companion in row.companions if row else ():
            spec = _specifier(companion.versions)
            if spec is not None:
                companion_rows.append((spec, companion))
        extension_rows: list[tuple[SpecifierSet, ExtensionRow]] = []
        for ext in row.extension if row else ():
            spec = _specifier(ext.versions)
            if spec is not None:
                extension_rows.append((spec, ext))
        releases = []
        for release in sorted(facts.releases if facts else [], key=lambda r: _sort_key(r.version), reverse=True):
            wheels: dict[str, list[str]] = {}
            wheel_tags: dict[str, list[list[str]]] = {}
            for w in release.wheels:
                wheels.setdefault(w.platform, [])
                if w.python not in wheels[w.platform]:
                    wheels[w.platform].append(w.python)
                entry = [w.python, _platform_tags(w.file)]
                if entry not in wheel_tags.setdefault(w.platform, []):
                    wheel_tags[w.platform].append(entry)
            requires: dict[str, list[list[str | None]]] = {}
            for req in release.requirements:
                requires.setdefault(req.platform, []).append([req.name, req.specifier, req.marker])
            # a row names a release, or a release series (``0.8``: every 0.8.x, as torchcodec's table does)
            torch_row = torch_rows.get(release.version) or torch_rows.get(_series(release.version))
            policy_row = policy_rows.get(release.version)
            index_row = next((r for spec, r in index_rows if spec.contains(release.version, prereleases=True)), None)
            ext_row = next((r for spec, r in extension_rows if spec.contains(release.version, prereleases=True)),
                           None)
            releases.append({
                "version": release.version, "yanked": release.yanked, "prerelease": release.prerelease,
                "requires_python": release.requires_python, "sdist": release.sdist,
                "wheels": wheels, "wheel_tags": wheel_tags, "requires": requires,
                "curated_torch": torch_row.model_dump() if torch_row else None,
                "policy": policy_row.model_dump() if policy_row else None,
                "first_upload": release.first_upload.date().isoformat() if release.first_upload else None,
                "oracle": oracle.get((name, release.version)),
                "torch_index": index_row.model_dump(exclude={"versions"}) if index_row else None,
                "companions": [c.model_dump(exclude={"versions"}) for spec, c in companion_rows
                               if spec.contains(release.version, prereleases=True)],
                "extension": ext_row.model_dump(mode="json", exclude={"versions"}) if ext_row else None,
            })
        if row is not None and row.torch_build == "wheel-pages":
            releases = _with_page_releases(releases, row.wheel_pages, torch_rows)
        packages.append({
            "name": name,
            "torch_build": row.torch_build if row else None,
            "sources": list(row.source) if row else [],
            "index": facts.index if facts else None,
            "retrieved": facts.retrieved.isoformat() if facts else None,
            "releases": releases,
            "wheel_rows": [w.model_dump() for w in row.wheels] if row else [],
            "final_release_matches": row.final_release_matches if row else None,
            "oracle_source": oracle_source if any(r["oracle"] for r in releases) else None,
            "abi_rows": [a.model_dump() for a in row.cxx11abi] if row else [],
            "gpu_floor": row.gpu_floor.model_dump() if row and row.gpu_floor else None,
            "page_rows": [w.model_dump() for w in row.wheel_pages] if row else [],
        })
    if problems:
        raise MatrixDataError(
            f"the ecosystem data has {len(problems)} problem(s)",
            hint="fix matrix_data/ecosystem.yaml or re-run `accelenv matrix refresh` for generated files",
            causes=[p.to_cause() for p in problems],
        )
    marker_env = {rule.platform: dict(rule.markers) for rule in config.platforms} if config else {}
    return {"format": CATALOG_FORMAT, "packages": packages, "marker_env": marker_env}


def _with_page_releases(releases: list[JsonObject], pages: list[WheelPageRow],
                        torch_rows: dict[str, TorchRow]) -> list[JsonObject]:
    """A wheel-pages package's releases: the index's, and those its pages carry that the index does not hold
    (pyg-lib, DGL 2.4: published on the project's own pages only), newest first. A page-only release has no
    index wheel, sdist, Requires-Python or upload date: its pages are all that is known of it."""
    known = {str(r["version"]) for r in releases}
    extra = sorted({v for page in pages for v in page.versions if v not in known}, key=_sort_key, reverse=True)
    for version in extra:
        torch_row = torch_rows.get(version) or torch_rows.get(_series(version))
        releases.append({
            "version": version, "yanked": False, "prerelease": _is_prerelease(version), "requires_python": None,
            "sdist": None, "wheels": {}, "wheel_tags": {},
            "requires": {}, "curated_torch": torch_row.model_dump() if torch_row else None, "policy": None,
            "first_upload": None, "oracle": None, "torch_index": None, "companions": [],
        })
    return sorted(releases, key=lambda r: _sort_key(str(r["version"])), reverse=True)


def _is_prerelease(version: str) -> bool:
    try:
        return Version(version).is_prerelease
    except InvalidVersion:
        return False


def _platform_tags(file: str) -> str:
    """The platform tags of a wheel's file name, dot-joined as written (``manylinux_2_17_x86_64.manylinux2014_x86_64``);
    ``any`` for a pure-Python wheel or a name packaging cannot read."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        tags = parse_wheel_filename(file)[3]
    except InvalidWheelFilename:
        return "any"
    return ".".join(sorted({t.platform for t in tags}))


def _torch_index_problems(name: str, rows: list[TorchIndexRow], labels: set[str]) -> list[Problem]:
    """A torch_index row's release specifier must parse and its label be a build label (build_variants.yaml)."""
    from compat_service.domain.matrix.problems import Problem

    problems = []
    for row in rows:
        where = f"{name}.torch_index.{row.versions}"
        try:
            SpecifierSet(row.versions)
        except InvalidSpecifier:
            problems.append(Problem(ECOSYSTEM_FILE, where, f"{row.versions!r} is not a specifier"))
        if labels and row.label not in labels:
            problems.append(Problem(ECOSYSTEM_FILE, where, f"{row.label!r} is not a build label (build_variants.yaml)"))
    return problems


def _specifier(text: str) -> SpecifierSet | None:
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        return None  # reported by _torch_index_problems


def _series(version: str) -> str:
    """``0.8.1`` -> ``0.8`` (the major.minor a compatibility table names)."""
    try:
        return ".".join(str(part) for part in Version(version).release[:2])
    except InvalidVersion:
        return version


def _sort_key(version: str) -> tuple[int, Version | str]:
    try:
        return (1, Version(version))
    except InvalidVersion:
        return (0, version)
