"""Rules that span rows or files of matrix_data, all collected before anything fails.

Input is every row that passed its own schema, keyed by file and list field, with its index in the file
(so a message names the same key path a human sees). A row that failed its schema is reported by the
loader and left out here, so one typo does not hide every other problem.

Rules: duplicates (sources, variant labels, toolkits, ROCm releases, minors, patches, arch-list overlaps);
dangling references (source keys, variant labels, patches named by a variant); every CUDA variant has a
driver row and a minor-version-compatibility row; labels agree with their family and runtime; patches
belong to their minor; released minors have Python and variants; a known companion or date has a source;
version strings and specifiers parse; GPU arch lists fit their variant; toolkit compile ranges do not overlap and
GPU names are listed once with their vendor's kind of architecture.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from packaging.version import Version
from pydantic import BaseModel

from compat_service.domain.backends import LABEL_PREFIXES, PLUGINS
from compat_service.domain.json_types import JsonObject
from compat_service.domain.matrix.model.schema import (
    ArchList,
    ArchSearch,
    BuildVariant,
    TorchMinor,
    TorchPatch,
    VariantAvailability,
)
from compat_service.domain.matrix.problems import Problem
from compat_service.domain.versions import parse_specifier, parse_version

#: file name -> list field -> [(index in the file, row)]
FileRows = dict[str, dict[str, list[tuple[int, Any]]]]


class _Problems(list[Problem]):
    def add(self, file: str, key: str, message: str) -> None:
        self.append(Problem(file, key, message))


_SOURCE_FIELDS = ("source", "release_date_source", "index_option_source")
_FAMILY_PREFIX = {family: prefix for prefix, family in LABEL_PREFIXES}


def _rows(rows: FileRows, file: str, field: str) -> list[tuple[int, Any]]:
    return rows.get(file, {}).get(field, [])


def source_references(obj: object, path: str) -> Iterator[tuple[str, str]]:
    """Every (key path, source key) inside a row, however deeply nested."""
    if isinstance(obj, BaseModel):
        for name in type(obj).model_fields:
            value = getattr(obj, name)
            if name in _SOURCE_FIELDS and isinstance(value, list):
                for i, key in enumerate(value):
                    yield f"{path}.{name}[{i}]", key
            else:
                yield from source_references(value, f"{path}.{name}")
    elif isinstance(obj, list):
        for i, item in enumerate(obj):
            yield from source_references(item, f"{path}[{i}]")


def _sources(rows: FileRows) -> list[Problem]:
    out = _Problems()
    known: dict[str, int] = {}
    for i, src in _rows(rows, "sources.yaml", "sources"):
        if src.key in known:
            out.add(
                "sources.yaml",
                f"sources[{i}].key",
                f"duplicate source key {src.key!r} (first at sources[{known[src.key]}])",
            )
        known.setdefault(src.key, i)
    if "sources.yaml" not in rows:
        return out  # the loader already reported the file; every reference would dangle
    for file, fields in rows.items():
        for field, items in fields.items():
            for i, row in items:
                for path, key in source_references(row, f"{field}[{i}]"):
                    if key not in known:
                        out.add(file, path, f"source key {key!r} is not defined in sources.yaml")
    return out


def _build_variants(rows: FileRows) -> tuple[JsonObject, list[Problem]]:
    file = "build_variants.yaml"
    out = _Problems()
    labels: JsonObject = {}
    first: dict[str, int] = {}
    for i, v in _rows(rows, "build_variants.yaml", "variants"):
        path = f"variants[{i}]"
        if v.label in labels:
            out.add(
                file,
                f"{path}.label",
                f"duplicate variant label {v.label!r} (first at variants[{first[v.label]}])",
            )
            continue
        labels[v.label], first[v.label] = v, i
        if not v.label.startswith(_FAMILY_PREFIX[v.family]):
            out.add(
                file,
                f"{path}.family",
                f"label {v.label!r} does not belong to family {v.family!r}",
            )
        if v.family in ("cuda", "rocm"):
            _runtime_problems(out, path, v)
        elif v.runtime is not None:
            out.add(
                file,
                f"{path}.runtime",
                f"a {v.family} build has no runtime version; write null",
            )
        if not v.index_url.startswith(("https://", "http://")):
            out.add(file, f"{path}.index_url", f"{v.index_url!r} is not an http(s) URL")
    return labels, out


def _runtime_problems(out: _Problems, path: str, v: BuildVariant) -> None:
    """A CUDA or ROCm build's runtime: the one its label names, its full release of that runtime."""
    file = "build_variants.yaml"
    expected = _FAMILY_PREFIX[v.family] + (
        (v.runtime or "").replace(".", "") if v.family == "cuda" else (v.runtime or "")
    )
    if v.label != expected:
        out.add(
            file,
            f"{path}.runtime",
            f"runtime {v.runtime!r} does not match label {v.label!r}",
        )
    if v.runtime_full and v.runtime and not v.runtime_full.startswith(v.runtime + "."):
        out.add(
            file,
            f"{path}.runtime_full",
            f"{v.runtime_full!r} is not a release of runtime {v.runtime!r}",
        )


def _cuda(rows: FileRows) -> list[Problem]:
    file = "cuda.yaml"
    out = _Problems()
    toolkits: dict[Version, int] = {}
    for i, t in _rows(rows, "cuda.yaml", "toolkits"):
        ver = parse_version(t.version)
        if ver in toolkits:
            out.add(
                file,
                f"toolkits[{i}].version",
                f"duplicate toolkit {t.version!r} (first at toolkits[{toolkits[ver]}])",
            )
        elif ver is not None:
            toolkits[ver] = i
    majors: dict[int, int] = {}
    for i, m in _rows(rows, "cuda.yaml", "minor_version_compatibility"):
        if m.cuda_major in majors:
            out.add(
                file,
                f"minor_version_compatibility[{i}].cuda_major",
                f"duplicate CUDA major {m.cuda_major}",
            )
        majors.setdefault(m.cuda_major, i)
    if "cuda.yaml" not in rows:
        return out
    for i, v in _rows(rows, "build_variants.yaml", "variants"):
        if v.family == "cuda" and v.runtime is not None:
            _cuda_variant_rows(out, i, v, toolkits, majors)
    return out


def _cuda_variant_rows(
    out: _Problems, i: int, v: BuildVariant, toolkits: dict[Version, int], majors: dict[int, int]
) -> None:
    """A CUDA variant has a driver row (its toolkit in cuda.yaml) and a minor-version-compatibility row."""
    wanted = parse_version(v.runtime_full) if v.runtime_full else None
    runtime = parse_version(v.runtime)
    if wanted is not None:
        ok = wanted in toolkits
        what = f"toolkit {v.runtime_full}"
    else:
        ok = runtime is not None and any(t.release[:2] == runtime.release[:2] for t in toolkits)
        what = f"any CUDA {v.runtime} toolkit"
    if not ok:
        out.add(
            "build_variants.yaml",
            f"variants[{i}]",
            f"CUDA variant {v.label!r} has no driver row: cuda.yaml lists no {what}",
        )
    if runtime is not None and runtime.major not in majors:
        out.add(
            "build_variants.yaml",
            f"variants[{i}]",
            f"CUDA variant {v.label!r}: cuda.yaml has no minor_version_compatibility "
            f"row for CUDA {runtime.major}",
        )


def _toolkit_archs_and_gpu_names(rows: FileRows) -> list[Problem]:
    """Each toolkit release falls in at most one compile range, each range is ordered, and a GPU name is
    listed once, with an NVIDIA arch in cuda.yaml, an AMD one in rocm.yaml and an Intel device family in xpu.yaml;
    AMD's kernel-driver rows name each driver once."""
    out = _Problems()
    _toolkit_ranges(rows, out)
    _gpu_names(rows, out)
    kmds: dict[str, int] = {}
    for i, k in _rows(rows, "rocm.yaml", "kernel_user_space"):
        if k.kmd in kmds:
            first = kmds[k.kmd]
            out.add("rocm.yaml", f"kernel_user_space[{i}].kmd", f"KMD {k.kmd} is listed twice (first at [{first}])")
        kmds.setdefault(k.kmd, i)
    return out


def _toolkit_ranges(rows: FileRows, out: _Problems) -> None:
    """Each compile range is ordered; each toolkit release falls in at most one."""
    ranges = [(i, r, parse_specifier(r.cuda)) for i, r in _rows(rows, "cuda.yaml", "toolkit_archs")]
    for i, r, _ in ranges:
        if _arch_digits(r.min_arch) > _arch_digits(r.max_arch):
            out.add("cuda.yaml", f"toolkit_archs[{i}]", f"min_arch {r.min_arch} is above max_arch {r.max_arch}")
    for t_index, t in _rows(rows, "cuda.yaml", "toolkits"):
        hits = [i for i, _, spec in ranges if spec is not None and spec.contains(t.version, prereleases=True)]
        if len(hits) > 1:
            out.add(
                "cuda.yaml",
                f"toolkit_archs[{hits[1]}]",
                f"CUDA {t.version} (toolkits[{t_index}]) falls in toolkit_archs[{hits[0]}] and [{hits[1]}]",
            )


def _arch_digits(arch: str) -> int:
    return int("".join(ch for ch in arch if ch.isdigit()))


def _gpu_names(rows: FileRows, out: _Problems) -> None:
    """A GPU name is listed once, with its vendor's kind of architecture (sm_, gfx, an Intel device family)."""
    seen: dict[str, str] = {}
    for file, prefix in (("cuda.yaml", "sm_"), ("rocm.yaml", "gfx"), ("xpu.yaml", None)):
        for i, g in _rows(rows, file, "gpu_names"):
            key = " ".join(g.name.lower().split())
            where = f"{file} gpu_names[{i}]"
            if key in seen:
                out.add(file, f"gpu_names[{i}].name", f"GPU name {g.name!r} is listed twice (first at {seen[key]})")
            seen.setdefault(key, where)
            if prefix is None and g.arch.startswith(("sm_", "gfx")):
                out.add(file, f"gpu_names[{i}].arch", f"{g.arch!r} is not an Intel device family, as {file} needs")
            elif prefix is not None and not g.arch.startswith(prefix):
                out.add(file, f"gpu_names[{i}].arch", f"{g.arch!r} is not a {prefix}* architecture, as {file} needs")


def _rocm(rows: FileRows) -> list[Problem]:
    file = "rocm.yaml"
    out = _Problems()
    seen: dict[tuple[int, ...], int] = {}
    for i, r in _rows(rows, "rocm.yaml", "releases"):
        ver = parse_version(r.version)
        if ver is None:  # the schema refused it already (VersionStr)
            continue
        if ver.release in seen:
            out.add(file, f"releases[{i}].version", f"duplicate ROCm release {r.version!r}")
        seen.setdefault(ver.release, i)
        for j, gfx in enumerate(r.gfx_targets or []):
            if not gfx.startswith("gfx"):
                out.add(file, f"releases[{i}].gfx_targets[{j}]", f"{gfx!r} is not a gfx target")
    if "rocm.yaml" in rows:
        _rocm_variant_rows(rows, set(seen), out)
    return out


def _rocm_variant_rows(rows: FileRows, releases: set[tuple[int, ...]], out: _Problems) -> None:
    """A ROCm variant's runtime has a row in rocm.yaml."""
    for i, v in _rows(rows, "build_variants.yaml", "variants"):
        ver = parse_version(v.runtime) if v.family == "rocm" else None
        if ver is not None and ver.release not in releases:
            out.add(
                "build_variants.yaml",
                f"variants[{i}]",
                f"ROCm variant {v.label!r} has no row in rocm.yaml",
            )


_TORCH_FILE = "torch_releases.yaml"


def _torch(rows: FileRows, labels: JsonObject) -> tuple[list[Version], list[Problem]]:
    out = _Problems()
    minors: dict[str, int] = {}
    patch_seen: dict[str, str] = {}
    all_patches: list[Version] = []
    for i, m in _rows(rows, _TORCH_FILE, "minors"):
        base = f"minors[{i}]"
        _minor_problems(out, base, m, i, minors.setdefault(m.minor, i))
        released = m.status == "released"
        for j, p in enumerate(m.patches):
            path = f"{base}.patches[{j}]"
            _patch_problems(out, path, m.minor, p, patch_seen, all_patches)
            _companion_problems(out, path, p, released)
        by_platform = _variant_problems(out, base, m, labels)
        _default_index_problems(out, base, m, labels, by_platform)
    return all_patches, out


def _minor_problems(out: _Problems, base: str, m: TorchMinor, i: int, first: int) -> None:
    """A minor's own fields: not twice, index_option sourced, a released minor's Pythons and variants."""
    file = _TORCH_FILE
    if first != i:
        out.add(file, f"{base}.minor", f"duplicate minor {m.minor!r} (first at minors[{first}])")
    if m.index_option is not None and not m.index_option_source:
        out.add(file, f"{base}.index_option_source", "index_option is given without a source")
    released = m.status == "released"
    if released and not m.python:
        out.add(file, f"{base}.python", "a released minor needs at least one Python entry")
    if released and not m.variants:
        out.add(file, f"{base}.variants", "a released minor needs at least one build variant")


def _patch_problems(
    out: _Problems, path: str, minor: str, p: TorchPatch, patch_seen: dict[str, str], all_patches: list[Version]
) -> None:
    """A patch: of its minor, not twice, its release date sourced; its version joins ``all_patches``."""
    file = _TORCH_FILE
    ver = parse_version(p.version)
    if ver is not None:
        if f"{ver.major}.{ver.minor}" != minor:
            out.add(file, f"{path}.version", f"patch {p.version!r} does not belong to minor {minor!r}")
        all_patches.append(ver)
    if p.version in patch_seen:
        out.add(file, f"{path}.version", f"duplicate patch {p.version!r} (first at {patch_seen[p.version]})")
    patch_seen.setdefault(p.version, path)
    if p.release_date is not None and not p.release_date_source:
        out.add(file, f"{path}.release_date_source", "release_date is given without a source")


def _companion_problems(out: _Problems, path: str, p: TorchPatch, released: bool) -> None:
    """A patch's companions: each version sourced; a released one's null says why it is unknown."""
    for comp in ("torchvision", "torchaudio", "triton"):
        value = getattr(p, comp)
        if value.version is not None and not value.source:
            out.add(_TORCH_FILE, f"{path}.{comp}.source", f"{comp} {value.version} is given without a source")
        if released and comp != "triton" and value.version is None and not value.note:
            out.add(_TORCH_FILE, f"{path}.{comp}", f"{comp} is null without a note saying why it is unknown")


def _variant_problems(out: _Problems, base: str, m: TorchMinor, labels: JsonObject) -> dict[str, set[str]]:
    """A minor's variants: a label once per platform, defined in build_variants.yaml, its patches the minor's;
    returns platform -> the labels published there."""
    file = _TORCH_FILE
    by_platform: dict[str, set[str]] = {}
    # one label may have several rows (patches that differ by platform), never twice on one platform
    variant_labels: dict[tuple[str, str], int] = {}
    patches = {p.version for p in m.patches}
    for j, v in enumerate(m.variants):
        path = f"{base}.variants[{j}]"
        _twice_on_a_platform(out, path, m.minor, (j, v), variant_labels)
        if labels and v.label not in labels:
            out.add(file, f"{path}.label", f"variant label {v.label!r} is not defined in build_variants.yaml")
        for k, name in enumerate(v.patches or []):
            if name not in patches:
                out.add(file, f"{path}.patches[{k}]", f"{name!r} is not a patch of minor {m.minor}")
        for plat in v.platforms:
            by_platform.setdefault(plat, set()).add(v.label)
    return by_platform


def _twice_on_a_platform(
    out: _Problems,
    path: str,
    minor: str,
    variant: tuple[int, VariantAvailability],
    first_at: dict[tuple[str, str], int],
) -> None:
    """A variant label listed again on a platform (``first_at``: (label, platform) -> the first row's index)."""
    j, v = variant
    for plat in v.platforms:
        if (v.label, plat) in first_at:
            out.add(
                _TORCH_FILE,
                f"{path}.label",
                f"duplicate variant {v.label!r} on {plat} in minor {minor} (first at "
                f"variants[{first_at[(v.label, plat)]}])",
            )
        first_at.setdefault((v.label, plat), j)


def _default_index_problems(
    out: _Problems, base: str, m: TorchMinor, labels: JsonObject, by_platform: dict[str, set[str]]
) -> None:
    """A minor's default-index entries: one per platform, each a variant the minor publishes there; every
    platform with variants has one (or is unsourced)."""
    file = _TORCH_FILE
    platforms_seen: set[str] = set()
    for j, d in enumerate(m.default_index):
        path = f"{base}.default_index[{j}]"
        if d.platform in platforms_seen:
            out.add(file, f"{path}.platform", f"duplicate default-index entry for {d.platform}")
        platforms_seen.add(d.platform)
        if d.label is None:
            continue
        if labels and d.label not in labels:
            out.add(file, f"{path}.label", f"variant label {d.label!r} is not defined in build_variants.yaml")
        elif d.platform not in m.platforms_unsourced and d.label not in by_platform.get(d.platform, set()):
            out.add(file, f"{path}.label", f"{d.label!r} is not among the minor's variants for {d.platform}")
    for plat in sorted(set(by_platform) - platforms_seen - set(m.platforms_unsourced)):
        out.add(
            file,
            f"{base}.default_index",
            f"no entry for {plat}, which has published variants (list it in platforms_unsourced if unknown)",
        )


_GPU_ARCHS_FILE = "gpu_archs.yaml"


def _gpu_archs(rows: FileRows, labels: JsonObject, patches: list[Version]) -> list[Problem]:
    out = _Problems()
    file = _GPU_ARCHS_FILE
    claimed: dict[tuple[str, str, Version], int] = {}
    patches = sorted(set(patches))  # a duplicated patch is reported by the torch_releases rules, once
    for i, a in _rows(rows, file, "arch_lists"):
        base = f"arch_lists[{i}]"
        spec = parse_specifier(a.torch)
        if spec is None:
            out.add(file, f"{base}.torch", f"{a.torch!r} is not a version specifier like '>=2.11,<2.12'")
        _arch_list_variant(out, base, a, labels.get(a.variant), bool(labels))
        if len(set(a.archs)) != len(a.archs):
            out.add(file, f"{base}.archs", "lists an architecture twice")
        if a.ptx is not None and a.ptx not in a.archs:
            out.add(file, f"{base}.ptx", f"PTX arch {a.ptx!r} is not in archs")
        if spec is not None:
            # Two rows of one variant and platform must not claim one release: readers take the first.
            _claim(out, (i, a), [ver for ver in patches if spec.contains(ver, prereleases=True)], claimed)
    for i, search in _rows(rows, file, "searched"):
        _searched(out, (i, search), labels, patches, claimed)
    return out


def _arch_list_variant(out: _Problems, base: str, a: ArchList, variant: BuildVariant | None, any_labels: bool) -> None:
    """An arch list's variant is defined, is a CUDA or ROCm build, and its archs are that family's."""
    file = _GPU_ARCHS_FILE
    if variant is None:
        if any_labels:
            out.add(file, f"{base}.variant", f"variant label {a.variant!r} is not defined in build_variants.yaml")
        return
    prefix = {"cuda": ("sm_", "compute_"), "rocm": ("gfx",)}.get(variant.family)
    if prefix is None:
        out.add(file, f"{base}.variant", f"{a.variant!r} is a {variant.family} build: no GPU arch list applies")
        return
    for j, arch in enumerate(a.archs):
        if not arch.startswith(prefix):
            out.add(file, f"{base}.archs[{j}]", f"{arch!r} is not an arch of a {variant.family} build")


def _defined(out: _Problems, where: tuple[str, str], label: str, labels: JsonObject) -> None:
    """A variant label is defined in build_variants.yaml (while that file has any)."""
    if labels and label not in labels:
        out.add(*where, f"variant label {label!r} is not defined in build_variants.yaml")


def _claim(
    out: _Problems, row: tuple[int, ArchList], versions: list[Version], claimed: dict[tuple[str, str, Version], int]
) -> None:
    """Record which arch list each (variant, platform, release) reads; a second claim overlaps the first."""
    i, a = row
    for ver in versions:
        for plat in a.platforms:
            key = (a.variant, plat, ver)
            if key in claimed:
                out.add(
                    _GPU_ARCHS_FILE,
                    f"arch_lists[{i}]",
                    f"overlaps arch_lists[{claimed[key]}] for torch {ver} {a.variant} on {plat}",
                )
            else:
                claimed[key] = i


def _searched(
    out: _Problems,
    row: tuple[int, ArchSearch],
    labels: JsonObject,
    patches: list[Version],
    claimed: dict[tuple[str, str, Version], int],
) -> None:
    """A searched record names defined labels and only builds that have no arch list."""
    file = _GPU_ARCHS_FILE
    i, search = row
    base = f"searched[{i}]"
    spec = parse_specifier(search.torch)
    if spec is None:
        out.add(file, f"{base}.torch", f"{search.torch!r} is not a version specifier like '>=2.11,<2.12'")
    for j, label in enumerate(search.variants):
        _defined(out, (file, f"{base}.variants[{j}]"), label, labels)
    if spec is None:
        return
    versions = [ver for ver in patches if spec.contains(ver, prereleases=True)]
    for label, plat, ver, at in _claimed_builds(search, versions, claimed):
        out.add(
            file,
            base,
            f"torch {ver} {label} on {plat} has an arch list (arch_lists[{at}]): "
            "a searched record is only for builds without one",
        )


def _claimed_builds(
    search: ArchSearch, versions: list[Version], claimed: dict[tuple[str, str, Version], int]
) -> Iterator[tuple[str, str, Version, int]]:
    """The builds a searched record names that an arch list already covers, with that list's index."""
    for ver in versions:
        for label in search.variants:
            for plat in search.platforms:
                if (label, plat, ver) in claimed:
                    yield label, plat, ver, claimed[(label, plat, ver)]


def _vendor(rows: FileRows) -> list[Problem]:
    out = _Problems()
    file = "vendor_backends.yaml"
    for field, plugin in ((p.table, p.version_field) for p in PLUGINS.values()):
        seen: dict[tuple[str, str], int] = {}
        for i, row in _rows(rows, file, field):
            key = (getattr(row, plugin), row.torch)
            if key in seen:
                out.add(
                    file,
                    f"{field}[{i}]",
                    f"duplicate {plugin} {key[0]} for torch {key[1]} (first at {field}[{seen[key]}])",
                )
            seen.setdefault(key, i)
    return out


#: torch versions a rule's range is tried against besides the matrix's patches (a range none of them satisfies
#: is empty: ">=2.5,<2.4")
_TORCH_GRID = [Version(f"{major}.{minor}.{patch}") for major in (1, 2, 3) for minor in range(40) for patch in range(6)]


def _known_bad(rows: FileRows, labels: JsonObject, patches: list[Version]) -> list[Problem]:
    """known_bad.yaml: ids once each, build labels that exist and belong to the rule's families, and a torch
    range that is not empty."""
    out = _Problems()
    file = "known_bad.yaml"
    seen: dict[str, int] = {}
    for i, rule in _rows(rows, file, "rules"):
        if rule.id in seen:
            out.add(file, f"rules[{i}].id", f"duplicate rule id {rule.id!r} (first at rules[{seen[rule.id]}])")
        seen.setdefault(rule.id, i)
        spec = parse_specifier(rule.torch)
        if spec is not None and not any(spec.contains(v, prereleases=True) for v in [*patches, *_TORCH_GRID]):
            out.add(file, f"rules[{i}].torch", f"{rule.torch!r} holds no torch version (an empty range)")
        for j, label in enumerate(rule.variants or []):
            problem = _rule_label_problem(label, labels, rule.families)
            if problem:
                out.add(file, f"rules[{i}].variants[{j}]", problem)
    return out


def _rule_label_problem(label: str, labels: JsonObject, families: Sequence[str] | None) -> str | None:
    """What is wrong with a known-bad rule's build label: not defined, or of a family the rule does not name."""
    if label not in labels:
        return f"build label {label!r} is not in build_variants.yaml"
    if families is not None and labels[label].family not in families:
        return f"{label} is a {labels[label].family} build, not one of the rule's families {families}"
    return None


def _host_rules(rows: FileRows, labels: JsonObject) -> list[Problem]:
    """host_rules.yaml: a capability floor's build labels exist and are CUDA builds."""
    out = _Problems()
    file = "host_rules.yaml"
    for i, row in _rows(rows, file, "capability_floors"):
        for j, label in enumerate(row.variants or []):
            problem = _rule_label_problem(label, labels, ["cuda"])
            if problem:
                out.add(file, f"capability_floors[{i}].variants[{j}]", problem)
    return out


def _jetson(rows: FileRows) -> list[Problem]:
    """jetson.yaml: each JetPack release once, every arch an sm_XY, every wheel's JetPack a listed release, and
    no SBSA module's arch also answered by JetPack wheels."""
    out = _Problems()
    file = "jetson.yaml"
    seen = _jetpack_releases(rows, out)
    for i, wheel in _rows(rows, file, "wheels"):
        for j, jetpack in enumerate(wheel.jetpack):
            if jetpack not in seen:
                out.add(file, f"wheels[{i}].jetpack[{j}]", f"JetPack {jetpack} is not in releases")
    jetpack_archs = {arch for _, row in _rows(rows, file, "releases") for arch in row.archs}
    for i, module in _rows(rows, file, "sbsa_modules"):
        if module.arch in jetpack_archs:
            out.add(file, f"sbsa_modules[{i}].arch", f"{module.arch} is also a JetPack release's arch (JetPack wheels)")
    return out


def _jetpack_releases(rows: FileRows, out: _Problems) -> dict[str, int]:
    """jetson.yaml's releases, each JetPack once and every arch an sm_XY (problems into ``out``): each JetPack
    release with the index of its first row."""
    file = "jetson.yaml"
    seen: dict[str, int] = {}
    for i, row in _rows(rows, file, "releases"):
        if row.jetpack in seen:
            out.add(
                file,
                f"releases[{i}].jetpack",
                f"duplicate JetPack {row.jetpack} (first at releases[{seen[row.jetpack]}])",
            )
        seen.setdefault(row.jetpack, i)
        for j, arch in enumerate(row.archs):
            if not re.fullmatch(r"sm_\d{2,3}", arch):
                out.add(file, f"releases[{i}].archs[{j}]", f"{arch!r} is not a CUDA architecture (sm_XY)")
    return seen


def cross_file_problems(rows: FileRows) -> list[Problem]:
    """Every cross-row and cross-file problem among ``rows`` (see the module docstring)."""
    labels, problems = _build_variants(rows)
    patches, torch_problems = _torch(rows, labels)
    problems += _sources(rows)
    problems += _cuda(rows)
    problems += _toolkit_archs_and_gpu_names(rows)
    problems += _rocm(rows)
    problems += torch_problems
    problems += _gpu_archs(rows, labels, patches)
    problems += _vendor(rows)
    problems += _known_bad(rows, labels, patches)
    problems += _host_rules(rows, labels)
    problems += _jetson(rows)
    return problems
