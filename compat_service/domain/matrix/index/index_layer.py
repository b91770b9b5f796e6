"""Merge the generated layer (``matrix_data/index/<project>.yaml``) into the curated tables before validation.

The package index is the source of what it states, and the merged values cite the source key
``package_index``:

- which torch releases exist (final, not yanked: pre-releases and yanked releases are never added) and
  their first upload (the release date, UTC);
- which wheels exist per platform and Python, free-threaded included (each patch's ``python_override``);
- the build the default index serves per platform, from the default wheel's runtime requirement
  (``default_index`` with the pinned toolkit as ``runtime_full`` where the pin is a toolkit version), and
  that build as a variant of the platform; what a reachable ``/whl/<label>`` index serves;
- the triton requirement of the default Linux wheel with its full marker;
- torch-npu releases, their Pythons and torch pins per architecture (``python_by_platform``,
  ``torch_requirement``).

A curated value that disagrees with the index is a *conflict*, which `matrix validate` reports, unless the
row lists the field in ``index_overrides`` with a reason and a source: then the curated value stays. A
curated companion pin (torchvision, torchaudio) is kept and checked against the companion's own torch
requirement; a null one is filled with the newest companion release whose requirement admits the patch.
Curated keeps everything no index states (index options, other variants, driver floors, CANN, notes).

Works on the raw YAML mappings, so the schema models and the cross-file rules see one merged matrix.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version
from pydantic import ValidationError

from compat_service.domain.backends import PLATFORMS, python_sort_key
from compat_service.domain.json_types import JsonObject
from compat_service.domain.matrix.index.index_facts import (
    PackageFacts,
    RefreshConfig,
    ReleaseFact,
    RequirementFact,
    RuntimeFact,
)
from compat_service.domain.matrix.markers import evaluate, marker_environment
from compat_service.domain.matrix.problems import Problem, format_loc
from compat_service.domain.versions import parse_version

SOURCE = "package_index"
INDEX_DIR = "index"
TORCH_FILE = "torch_releases.yaml"
VENDOR_FILE = "vendor_backends.yaml"
PROJECTS = ("torch", "torchvision", "torchaudio", "triton", "torch-npu")
_Loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
M = TypeVar("M", PackageFacts, RefreshConfig)


def read_index_file(base: Path, name: str, model: type[M]) -> tuple[M | None, list[Problem]]:
    """One file under ``base/index`` (``refresh.yaml`` or ``<project>.yaml``) as ``model``: None when absent,
    else the model or the problems that stop it (the one reader of these files: load and refresh share it)."""
    rel = f"{INDEX_DIR}/{name}"
    file = base / rel
    if not file.is_file():
        return None, []
    generated = name != "refresh.yaml"
    tail = " (a generated file: run `accelenv matrix refresh`)" if generated else ""
    try:
        return model.model_validate(yaml.load(file.read_text(encoding="utf-8"), Loader=_Loader)), []
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return None, [Problem(rel, "", f"cannot be read: {exc}{tail}")]
    except ValidationError as exc:
        return None, [Problem(rel, format_loc(e["loc"]), f"{e['msg']}{tail}") for e in exc.errors()]


def load_layer(base: Path) -> tuple[dict[str, PackageFacts], list[Problem]]:
    """The generated facts under ``base/index`` (none when the folder or a file is absent)."""
    layer: dict[str, PackageFacts] = {}
    problems: list[Problem] = []
    for project in PROJECTS:
        facts, found = read_index_file(base, f"{project}.yaml", PackageFacts)
        problems += found
        if facts is not None:
            layer[project] = facts
    return layer, problems


def load_refresh_config(base: Path) -> tuple[RefreshConfig | None, list[Problem]]:
    return read_index_file(base, "refresh.yaml", RefreshConfig)


def final_releases(facts: PackageFacts | None) -> list[ReleaseFact]:
    """Releases a resolver may pick: not pre/dev, not yanked, with at least one wheel."""
    if facts is None:
        return []
    return [r for r in facts.releases if not r.prerelease and not r.yanked and r.wheels]


def _spec(text: str | None) -> SpecifierSet | None:
    try:
        return SpecifierSet(text or "")
    except InvalidSpecifier:
        return None


def _sorted_pythons(values: Iterable[str]) -> list[str]:
    return sorted(set(values), key=python_sort_key)


def _concrete(python: str) -> bool:
    return python != "any" and not python.endswith("+")


def _overridden(row: JsonObject, field: str) -> bool:
    return any(o.get("field") == field for o in row.get("index_overrides") or [])


def _add_source(row: JsonObject, key: str = "source") -> None:
    sources = list(row.get(key) or [])
    if SOURCE not in sources:
        row[key] = [*sources, SOURCE]


class _Merge:
    def __init__(self, raw: JsonObject, layer: dict[str, PackageFacts], config: RefreshConfig | None) -> None:
        self.raw = raw
        self.layer = layer
        #: refresh.yaml: the marker environment of each platform
        self.config = config
        self.problems: list[Problem] = []

    def conflict(self, file: str, loc: list[str | int], message: str) -> None:
        self.problems.append(
            Problem(
                file,
                format_loc(loc),
                f"conflicts with the package index: {message}. Write the index's value, or keep this one with "
                "index_overrides: [{field, reason, source}]",
            )
        )

    # -- torch --------------------------------------------------------------------------------------------

    def torch(self) -> None:
        doc = self.raw.get(TORCH_FILE)
        facts = self.layer.get("torch")
        if not isinstance(doc, dict) or facts is None or not isinstance(doc.get("minors"), list):
            return
        minors: list[JsonObject] = doc["minors"]
        by_minor: dict[str, list[ReleaseFact]] = defaultdict(list)
        for release in final_releases(facts):
            version = Version(release.version)
            by_minor[f"{version.major}.{version.minor}"].append(release)
        self._not_on_index(minors, {Version(r.version) for r in facts.releases})
        for key, releases in sorted(by_minor.items(), key=lambda kv: Version(kv[0])):
            minor = _minor_row(minors, key)
            mi = minors.index(minor)
            for release in releases:
                self._patch(minor, mi, release)
            self._builds(minor, mi, releases)
            _complete_minor(minor)
        minors.sort(key=lambda m: parse_version(f"{m.get('minor')}") or Version("0"))

    def _not_on_index(self, minors: list[JsonObject], on_index: set[Version]) -> None:
        """A listed patch the index does not have is a conflict (unless its row says it exists anyway)."""
        for mi, listed_minor in enumerate(minors):
            for pi, patch in enumerate(listed_minor.get("patches") or []):
                listed = parse_version(str(patch.get("version")))
                if listed is not None and _missing(listed, on_index) and not _overridden(patch, "exists"):
                    self.conflict(TORCH_FILE, ["minors", mi, "patches", pi, "version"],
                                  f"torch {listed} is not on the index")

    def _patch(self, minor: JsonObject, mi: int, release: ReleaseFact) -> None:
        patches: list[JsonObject] = minor.setdefault("patches", [])
        patch = _patch_row(patches, release.version)
        loc: list[str | int] = ["minors", mi, "patches", patches.index(patch)]
        if release.first_upload is not None:
            self._release_date(patch, loc, release.first_upload.date())
        if not _overridden(patch, "python"):
            self._pythons(minor, patch, loc, release)
        if not _overridden(patch, "triton"):
            self._triton(patch, loc, release)
        for companion in ("torchvision", "torchaudio"):
            self._companion(patch, loc, companion, release.version)
        patch["wheels"] = _wheel_files("torch", release) + [
            files
            for companion in ("torchvision", "torchaudio")
            for files in self._companion_wheels(companion, (patch.get(companion) or {}).get("version"))
        ]
        patch["wheels"] += self._variant_wheels(release)

    def _variant_wheels(self, release: ReleaseFact) -> list[JsonObject]:
        """The wheel files each build label's index (``/whl/<label>``) serves of this release, as read by the
        refresh (``variant_indexes``), one entry per label and platform with the version ``2.13.0+cu130``: the
        wheels stage checks those builds' platform tags from their own file names (host_rules.yaml's
        ``wheel_floors`` only where the index was not read)."""
        facts = self.layer.get("torch")
        out: list[JsonObject] = []
        for variant in facts.variant_indexes if facts is not None else ():
            wheels = variant.releases.get(release.version) if variant.status == "read" else None
            if not wheels:
                continue
            files = release.model_copy(update={"version": f"{release.version}+{variant.label}", "wheels": wheels})
            out += _wheel_files("torch", files)
        return out

    def _release_date(self, patch: JsonObject, loc: list[str | int], uploaded: dt.date) -> None:
        """release date = first upload (UTC)"""
        curated = patch.get("release_date")
        if curated is not None and str(curated) != uploaded.isoformat() and not _overridden(patch, "release_date"):
            self.conflict(TORCH_FILE, [*loc, "release_date"], f"{curated}, first upload {uploaded}")
        if not _overridden(patch, "release_date"):
            patch["release_date"] = uploaded
            _add_source(patch, "release_date_source")

    def _pythons(self, minor: JsonObject, patch: JsonObject, loc: list[str | int], release: ReleaseFact) -> None:
        """Pythons per platform: the release's wheels, grouped by equal lists; a curated list that differs on a
        platform the curated files know is a conflict."""
        by_platform: dict[str, set[str]] = defaultdict(set)
        for wheel in release.wheels:
            if _concrete(wheel.python):
                by_platform[wheel.platform].add(wheel.python)
        curated = _curated_pythons(minor, patch)
        for platform in _curated_platforms(minor, release.version):
            have, index = curated.get(platform, set()), by_platform.get(platform, set())
            if have != index:
                extra = ", ".join(_sorted_pythons(have - index)) or "-"
                missing = ", ".join(_sorted_pythons(index - have)) or "-"
                self.conflict(TORCH_FILE, [*loc, "python"],
                              f"torch {release.version} on {platform}: listed without a wheel {extra}; "
                              f"wheels not listed {missing}")
        groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
        for platform in PLATFORMS:
            if by_platform.get(platform):
                groups[tuple(_sorted_pythons(by_platform[platform]))].append(platform)
        patch["python_override"] = [
            {"versions": list(versions), "platforms": platforms, "source": [SOURCE]}
            for versions, platforms in groups.items()
        ]

    def _triton(self, patch: JsonObject, loc: list[str | int], release: ReleaseFact) -> None:
        """triton: the Requires-Dist of the default Linux wheel, with its marker."""
        curated = (patch.get("triton") or {}).get("version")
        value = self._triton_value(_triton_requirement(release), release)
        if curated is not None and curated != value["version"]:
            self.conflict(TORCH_FILE, [*loc, "triton", "version"],
                          f"{curated}, the wheel requires {value['requirement'] or 'no triton'}")
        elif curated is not None and (patch.get("triton") or {}).get("note"):
            value["note"] = f"{patch['triton']['note']} ({value['note']})"  # the curated reading, kept
        patch["triton"] = value

    def _triton_value(self, triton: RequirementFact | None, release: ReleaseFact) -> JsonObject:
        if triton is None:
            return {"version": None, "requirement": None, "marker": None, "source": [SOURCE],
                    "note": "the default-index Linux wheels declare no triton requirement"}
        spec = _spec(triton.specifier)
        pins = [s.version for s in spec or [] if s.operator == "=="]
        version = pins[0] if len(pins) == 1 and spec is not None and len(spec) == 1 else None
        return {
            "version": version,
            "requirement": f"{triton.name}{triton.specifier}",
            "marker": triton.marker,
            "applies": self._applies(triton.marker, release),
            "source": [SOURCE],
            "note": f"Requires-Dist of {triton.file}",
        }

    def _companion_wheels(self, name: str, version: object) -> list[JsonObject]:
        facts = self.layer.get(name)
        release = facts.release(str(version)) if facts is not None and version is not None else None
        return _wheel_files(name, release) if release is not None else []

    def _applies(self, marker: str | None, release: ReleaseFact) -> dict[str, list[str]]:
        """platform -> the Pythons of this release's wheels for which the requirement's marker holds."""
        environments = {rule.platform: rule.markers for rule in self.config.platforms} if self.config else {}
        out: dict[str, list[str]] = {}
        for platform in PLATFORMS:
            pythons = {w.python for w in release.wheels if w.platform == platform and _concrete(w.python)}
            if platform not in environments or not pythons:
                continue
            hits = [p for p in pythons if evaluate(marker, marker_environment(environments[platform], p)) is True]
            out[platform] = _sorted_pythons(hits)
        return out

    def _companion(self, patch: JsonObject, loc: list[str | int], name: str, torch_version: str) -> None:
        facts = self.layer.get(name)
        if facts is None:
            return
        want = Version(torch_version)
        pins, admits = _torch_pins(facts, want)
        value = patch.get(name)
        if not isinstance(value, dict):
            return  # a missing or malformed key is the schema's to report, not the layer's to fill
        if value.get("version") is not None:
            curated = parse_version(str(value["version"]))
            if curated is None:
                return  # not a version: the schema reports it
            pinned = pins.get(curated)
            spec = _spec(pinned) if pinned else None
            if spec is not None and not spec.contains(want, prereleases=True) and not _overridden(patch, name):
                self.conflict(TORCH_FILE, [*loc, name, "version"],
                              f"{name} {curated} requires torch{pinned}, not {torch_version}")
            return
        if admits:
            _exact, version, text = max(admits)
            patch[name] = {"version": str(version), "source": [SOURCE],
                           "note": f"{name} {version} declares torch{text} (the newest release that admits "
                                   f"torch {torch_version})"}

    def _builds(self, minor: JsonObject, mi: int, releases: list[ReleaseFact]) -> None:
        """default_index and variants from the default wheels' runtimes (and read variant indexes)."""
        runtime_by_platform: dict[str, dict[str, RuntimeFact]] = defaultdict(dict)
        for release in releases:
            for runtime in release.runtimes:
                runtime_by_platform[runtime.platform][release.version] = runtime
        entries: list[JsonObject] = minor.setdefault("default_index", [])
        availability: dict[tuple[str, str], set[str]] = defaultdict(set)
        for platform in PLATFORMS:
            runtimes = runtime_by_platform.get(platform)
            if not runtimes or not self._default_entry(entries, mi, platform, runtimes):
                continue
            for version, runtime in runtimes.items():
                if runtime.label is not None:
                    availability[(runtime.label, platform)].add(version)
        _read_variant_indexes(self.layer["torch"], [r.version for r in releases], availability)
        variants: list[JsonObject] = minor.setdefault("variants", [])
        every = {str(p.get("version")) for p in minor.get("patches") or []}
        for (label, platform), patches in sorted(availability.items()):
            _merge_variant(variants, label, platform, patches, every)

    def _default_entry(
        self, entries: list[JsonObject], mi: int, platform: str, runtimes: dict[str, RuntimeFact]
    ) -> bool:
        """The platform's default-index entry from its default wheels' runtimes (the newest patch's); False when
        the curated entry overrides the index's label."""
        toolkits = {r.toolkit for r in runtimes.values()}
        newest = runtimes[max(runtimes, key=Version)]
        entry = next((e for e in entries if e.get("platform") == platform), None)
        if entry is not None and _overridden(entry, "label"):
            return False
        label = newest.label
        if entry is not None and entry.get("label") is not None and entry["label"] != label:
            self._default_conflict(["minors", mi, "default_index", entries.index(entry), "label"], entry, newest)
        if entry is None:
            entry = {"platform": platform, "label": None, "source": []}
            entries.append(entry)
        entry["label"] = label
        entry["runtime_full"] = next(iter(toolkits)) if len(toolkits) == 1 else None
        _add_source(entry)
        _default_note(entry, runtimes)
        return True

    def _default_conflict(self, loc: list[str | int], entry: JsonObject, newest: RuntimeFact) -> None:
        self.conflict(TORCH_FILE, loc,
                      f"{entry['label']}, the default wheel {newest.file} is {newest.label or 'an unknown build'}"
                      + (f" ({newest.requirement})" if newest.requirement else ""))

    # -- torch-npu ----------------------------------------------------------------------------------------

    def npu(self) -> None:
        doc = self.raw.get(VENDOR_FILE)
        facts = self.layer.get("torch-npu")
        if not isinstance(doc, dict) or facts is None or not isinstance(doc.get("ascend_npu"), list):
            return
        rows: list[JsonObject] = doc["ascend_npu"]
        self._drop_not_on_index(rows, {Version(r.version) for r in facts.releases})
        for release in final_releases(facts):
            self._npu_release(rows, release)

    def _drop_not_on_index(self, rows: list[JsonObject], every: set[Version]) -> None:
        """A curated torch-npu row the index does not have is a conflict, and is dropped."""
        kept = []
        for i, listed_row in enumerate(rows):
            listed = parse_version(str(listed_row.get("torch_npu")))
            if listed is not None and _missing(listed, every) and not _overridden(listed_row, "exists"):
                self.conflict(VENDOR_FILE, ["ascend_npu", i, "torch_npu"],
                              f"torch-npu {listed_row.get('torch_npu')} is not on the index")
                continue
            kept.append(listed_row)
        rows[:] = kept

    def _npu_release(self, rows: list[JsonObject], release: ReleaseFact) -> None:
        """One torch-npu release's row: its wheels' Pythons and the torch they require (a row is added for a
        release with one torch pin and no curated row)."""
        version = Version(release.version)
        row = next((r for r in rows if parse_version(str(r.get("torch_npu"))) == version), None)
        pins = {r.platform: r.specifier for r in release.requirements if r.name == "torch"}
        torch_versions = {str(_pinned(s)) for s in pins.values() if _pinned(s) is not None}
        if row is None:
            if len(torch_versions) != 1:
                return  # no torch pin on the index and no curated row: the torch release is not known
            row = _new_npu_row(release.version, torch_versions.pop())
            rows.append(row)
        i = rows.index(row)
        if not _overridden(row, "python"):
            self._npu_pythons(row, i, release)
        if pins and not _overridden(row, "torch"):
            if torch_versions and str(row.get("torch")) not in torch_versions:
                self.conflict(VENDOR_FILE, ["ascend_npu", i, "torch"],
                              f"{row.get('torch')}, the wheels require torch {', '.join(sorted(pins.values()))}")
            row["torch_requirement"] = dict(sorted(pins.items()))
        _add_source(row)

    def _npu_pythons(self, row: JsonObject, i: int, release: ReleaseFact) -> None:
        by_platform = _wheel_pythons(release)
        union = _sorted_pythons(p for v in by_platform.values() for p in v)
        if row.get("python") is not None and _sorted_pythons(row["python"]) != union:
            self.conflict(VENDOR_FILE, ["ascend_npu", i, "python"],
                          f"{', '.join(row['python'])}, the wheels are {', '.join(union)}")
        row["python"] = union
        row["python_by_platform"] = by_platform


def _new_npu_row(version: str, torch: str) -> JsonObject:
    return {"torch_npu": version, "torch": torch, "cann": None, "python": None, "branch": None, "status": None,
            "source": [SOURCE], "note": "on the package index; no CANN mapping sourced"}


def _wheel_pythons(release: ReleaseFact) -> dict[str, list[str]]:
    """platform -> the Pythons of the release's wheels there (platforms without one left out)."""
    by_platform = {
        p: _sorted_pythons(w.python for w in release.wheels if w.platform == p and _concrete(w.python))
        for p in PLATFORMS
    }
    return {p: v for p, v in by_platform.items() if v}


def _minor_row(minors: list[JsonObject], key: str) -> JsonObject:
    """The curated row of minor ``key``, added when the curated file has none."""
    minor = next((m for m in minors if str(m.get("minor")) == key), None)
    if minor is None:
        minor = _new_minor(key)
        minors.append(minor)
    return minor


def _complete_minor(minor: JsonObject) -> None:
    """A minor the curated files know nothing about takes its newest patch's Pythons; a partial one is released
    once the index fills it."""
    if not minor.get("python"):
        newest = max(minor["patches"], key=lambda p: parse_version(str(p.get("version"))) or Version("0"))
        minor["python"] = [dict(entry) for entry in newest.get("python_override") or []]
    if minor.get("status") == "partial":
        minor["status"] = "released"
        minor["note"] = ((minor.get("note") or "") + " Wheels, Pythons and the default build are read from "
                         "the package index (matrix_data/index/torch.yaml).").strip()


def _torch_pins(facts: PackageFacts, want: Version) -> tuple[dict[Version, str], list[tuple[bool, Version, str]]]:
    """A companion's releases: version -> its one torch requirement, and (exact pin, version, requirement) of
    those that admit ``want``."""
    admits: list[tuple[bool, Version, str]] = []
    pins: dict[Version, str] = {}
    for release in final_releases(facts):
        specs = {r.specifier for r in release.requirements if r.name == "torch"}
        if len(specs) != 1:
            continue
        text = next(iter(specs))
        pins[Version(release.version)] = text
        spec = _spec(text)
        if spec is not None and spec.contains(want, prereleases=True):
            admits.append((any(s.operator == "==" for s in spec), Version(release.version), text))
    return pins, admits


def _default_note(entry: JsonObject, runtimes: dict[str, RuntimeFact]) -> None:
    """Say when the patches' default wheels differ; else what they pin (unless the curated entry says more)."""
    labels = {r.label for r in runtimes.values()}
    newest = runtimes[max(runtimes, key=Version)]
    if len(labels) > 1:
        entry["note"] = (f"the default wheels differ between patches ({', '.join(sorted(map(str, labels)))}); "
                         f"the newest ({max(runtimes, key=Version)}) is shown")
    elif not entry.get("note"):
        entry["note"] = "the default-index wheels pin " + (newest.requirement or "no accelerator runtime")


def _read_variant_indexes(
    facts: PackageFacts, versions: list[str], availability: dict[tuple[str, str], set[str]]
) -> None:
    """Add the releases each variant index that was read publishes, per (label, platform)."""
    for variant in facts.variant_indexes:
        if variant.status != "read":
            continue
        for version, wheels in variant.releases.items():
            if version in versions:
                for wheel in wheels:
                    availability[(variant.label, wheel.platform)].add(version)


def _patch_row(patches: list[JsonObject], version: str) -> JsonObject:
    """The patch row of ``version``, added (in version order) when the curated file has none."""
    patch = next((p for p in patches if parse_version(str(p.get("version"))) == Version(version)), None)
    if patch is None:
        patch = _new_patch(version)
        patches.append(patch)
        patches.sort(key=lambda p: parse_version(str(p.get("version"))) or Version("0"))
    return patch


def _triton_requirement(release: ReleaseFact) -> RequirementFact | None:
    """The triton requirement of the default Linux wheel (x86_64, else aarch64)."""
    return next(
        (r for p in ("linux-x86_64", "linux-aarch64") for r in release.requirements
         if r.platform == p and r.name in ("triton", "pytorch-triton")),
        None,
    )


def _wheel_files(package: str, release: ReleaseFact) -> list[JsonObject]:
    """The release's wheels per platform: their Pythons, their platform tags (from the file names, with
    packaging's wheel-name parser) and the release's Requires-Python (schema.WheelFiles)."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    pythons: dict[str, list[str]] = defaultdict(list)
    tags: dict[str, list[str]] = defaultdict(list)
    for wheel in release.wheels:
        try:
            platform_tags = {t.platform for t in parse_wheel_filename(wheel.file)[3]}
        except InvalidWheelFilename:
            continue
        if wheel.python not in pythons[wheel.platform]:
            pythons[wheel.platform].append(wheel.python)
        tags[wheel.platform].extend(t for t in sorted(platform_tags) if t not in tags[wheel.platform])
    return [
        {"package": package, "version": release.version, "platform": platform,
         "pythons": _sorted_pythons(pythons[platform]) if all(map(_concrete, pythons[platform]))
         else pythons[platform],
         "platform_tags": tags[platform], "requires_python": release.requires_python, "source": [SOURCE]}
        for platform in PLATFORMS
        if tags.get(platform)
    ]


def _row_patches(row: JsonObject, every: set[str]) -> set[str]:
    """The patches a variant row states (null = every patch of the minor)."""
    listed = row.get("patches")
    return set(every) if listed is None else {str(p) for p in listed}


def _merge_variant(variants: list[JsonObject], label: str, platform: str, patches: set[str],
                   every: set[str]) -> None:
    """Add what the index states, (label, platform) for ``patches``, to the minor's variant rows.

    A row's ``patches`` limit holds for every platform of the row, so the index's platform joins a row only
    when the row's patches are the platform's: a curated row limited to 2.14.0 never limits the index's
    builds of 2.14.1 on another platform (they get a row of their own: one label may have several rows on
    disjoint platforms). On a platform a curated row already lists, the index adds the patches it serves
    there and the curated patches stay.
    """
    rows = [v for v in variants if v.get("label") == label]
    row = next((v for v in rows if platform in (v.get("platforms") or [])), None)
    if row is not None:
        _extend_row(variants, row, platform, patches, every)
        return
    restrict = None if patches >= every else sorted(patches, key=Version)
    same = next((v for v in rows if _same_patches(v, restrict, every)), None)
    if same is not None:
        same["platforms"] = [p for p in PLATFORMS if p in {*same.get("platforms", []), platform}]
        _add_source(same)
        return
    variants.append({"label": label, "platforms": [platform], "source": [SOURCE], "patches": restrict,
                     "note": "on the package index (the default wheel) or its /whl/<label> index"})


def _same_patches(row: JsonObject, restrict: list[str] | None, every: set[str]) -> bool:
    """Whether a variant row is limited to exactly ``restrict`` (None: not limited)."""
    if row.get("patches") is None:
        return restrict is None
    return restrict is not None and _row_patches(row, every) == set(restrict)


def _extend_row(variants: list[JsonObject], row: JsonObject, platform: str, patches: set[str], every: set[str]) -> None:
    """Add ``patches`` on ``platform`` to the curated row that lists the platform (moving the platform to a row of
    its own when the row has others)."""
    wanted = _row_patches(row, every) | patches
    if wanted == _row_patches(row, every):
        return  # the curated row states it already
    if len(row.get("platforms") or []) > 1:
        # the row's other platforms keep their patch limit; this platform moves to a row of its own
        row["platforms"] = [p for p in row["platforms"] if p != platform]
        moved = {k: v for k, v in row.items() if k not in ("platforms", "patches")}
        row = {**moved, "platforms": [platform]}
        variants.append(row)
    row["patches"] = None if wanted >= every else sorted(wanted, key=Version)
    _add_source(row)


def _missing(version: Version, on_index: set[Version]) -> bool:
    """Absent from the index within the span the generated file covers (older or newer rows are outside it)."""
    return bool(on_index) and min(on_index) <= version <= max(on_index) and version not in on_index


def _pinned(specifier: str) -> Version | None:
    """``==2.11.0+cpu`` -> 2.11.0, ``==2.13.0.*`` -> 2.13.0; None for a range."""
    spec = _spec(specifier)
    if spec is None or len(spec) != 1:
        return None
    only = next(iter(spec))
    if only.operator != "==":
        return None
    version = parse_version(only.version.removesuffix(".*"))
    return Version(version.public) if version is not None else None


def _curated_platforms(minor: JsonObject, version: str) -> list[str]:
    """Platforms whose builds the curated minor lists for this patch (not in platforms_unsourced)."""
    unsourced = set(minor.get("platforms_unsourced") or [])
    found: set[str] = set()
    for variant in minor.get("variants") or []:
        patches = variant.get("patches")
        if patches is None or version in patches:
            found.update(variant.get("platforms") or [])
    return [p for p in PLATFORMS if p in found and p not in unsourced]


def _curated_pythons(minor: JsonObject, patch: JsonObject) -> dict[str, set[str]]:
    entries = patch.get("python_override")
    if entries is None:
        entries = minor.get("python") or []
    out: dict[str, set[str]] = defaultdict(set)
    for entry in entries:
        for platform in entry.get("platforms") or PLATFORMS:
            out[platform].update(entry.get("versions") or [])
    return out


def _new_minor(key: str) -> JsonObject:
    return {
        "minor": key,
        "status": "released",
        "index_option": None,
        "index_option_source": [],
        "platforms_unsourced": list(PLATFORMS),
        "note": "known from the package index only (matrix_data/index/torch.yaml): the /whl/<label> variant "
                "lists are not sourced",
        "python": [],
        "variants": [],
        "default_index": [],
        "patches": [],
    }


def _new_patch(version: str) -> JsonObject:
    note = "no companion release on the index admits this torch"
    unknown: JsonObject = {"version": None, "source": [], "note": note}
    return {
        "version": version,
        "release_date": None,
        "release_date_source": [],
        "torchvision": dict(unknown),
        "torchaudio": dict(unknown),
        "triton": {"version": None, "source": [], "note": "not read"},
        "note": "known from the package index only",
    }


def merge_layer(raw: JsonObject, layer: dict[str, PackageFacts], config: RefreshConfig | None) -> list[Problem]:
    """Merge ``layer`` into the raw mappings in place; the conflicts between the layers."""
    merge = _Merge(raw, layer, config)
    merge.torch()
    merge.npu()
    return merge.problems


def apply_index_layer(raw: JsonObject, base: Path) -> list[Problem]:
    """Merge ``base/index/*.yaml`` into the raw mappings of ``raw`` (file name -> parsed YAML), in place.

    Returns the problems: unreadable generated files and every conflict between the layers.
    """
    layer, problems = load_layer(base)
    if not layer:
        return problems
    config, config_problems = load_refresh_config(base)
    return problems + config_problems + merge_layer(raw, layer, config)
