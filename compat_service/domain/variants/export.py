"""A torch build's PEP 825 variant properties, from the matrix's facts, and the JSON files that carry them.

A build is one (torch patch, build label, platform) the matrix lists. Its properties, each from a sourced row:

- CUDA (`build_variants.yaml` runtime, `gpu_archs.yaml` arch list): ``nvidia :: cuda_version_lower_bound ::
  {runtime}`` and ``nvidia :: sm_arch`` with ``{XY}_real`` per cubin ``sm_XY`` and ``{XY}_virtual`` for the
  PTX target, the NVIDIA plugin's value spelling (arch-specific cubins such as ``sm_90a`` have no value in its
  catalogue and are left out, said in ``unknown``);
- ROCm: ``amd :: rocm_version :: {runtime}`` and ``amd :: gfx_arch`` per gfx code object;
- CPU: the null variant (no properties, label ``null``);
- XPU: no property is sourced (the matrix has no per-build Intel device IPs), so the build is not exported
  and ``unknown`` says so. Nothing is filled in by pattern.

Where the matrix has no arch list for a build and the package index's own variants JSON states one (`matrix
refresh` reads ``{name}-{version}-variants.json`` into the generated layer), that list is used, cited as
``package_index``.

The index-level file is ``{name}-{version}-variants.json`` (PEP 825; keys ``default-priorities``,
``providers``, ``variants``, the schema of PEP 817's appendix), one per platform here, because a label's arch
list can differ by platform and a label maps to one property set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from compat_service.domain.errors import NotFoundError
from compat_service.domain.json_types import JsonObject
from compat_service.domain.matrix.interface import Matrix
from compat_service.domain.matrix.model.rows import ArchList, TorchMinor, TorchPatch
from compat_service.domain.variants.providers import Providers, load_providers

#: the PEP 817 schema URL variantlib writes and checks (the schema's ``$id``)
SCHEMA_URL = "https://variants-schema.wheelnext.dev/v0.2.0.json"
NULL_LABEL = "null"

Properties = dict[str, dict[str, list[str]]]


@dataclass(frozen=True)
class BuildVariantProperties:
    torch: str
    label: str
    family: str
    platform: str
    #: namespace -> feature -> values (empty for the null variant)
    properties: Properties
    #: what the matrix does not know about this build's properties (one sentence each)
    unknown: tuple[str, ...] = ()
    #: the sources.yaml keys the properties rest on
    source: tuple[str, ...] = field(default_factory=tuple)

    @property
    def exportable(self) -> bool:
        return self.family == "cpu" or bool(self.properties)

    @property
    def variant_label(self) -> str:
        return NULL_LABEL if self.family == "cpu" else self.label


def _sm_value(arch: str, kind: str) -> str | None:
    digits = arch.removeprefix("sm_").removeprefix("compute_")
    return f"{digits}_{kind}" if digits.isdigit() else None


@cache
def index_stated_properties(data_dir: Path | None = None) -> dict[tuple[str, str], Properties]:
    """(torch version, label) -> the properties a PEP 825 variants JSON on the package index states for that
    variant (read by `matrix refresh` into ``matrix_data/index/torch.yaml``: ``variants_json``)."""
    from compat_service.domain.matrix.index.index_facts import PackageFacts
    from compat_service.domain.matrix.index.index_layer import read_index_file

    if data_dir is None:
        from matrix_data import DATA_DIR

        data_dir = Path(DATA_DIR)
    facts, _problems = read_index_file(Path(data_dir), "torch.yaml", PackageFacts)
    if facts is None:
        return {}
    return {(found.version, label): props for found in facts.variants_json for label, props in found.variants.items()}


def build_properties(matrix: Matrix, torch: str, label: str, platform: str,
                     stated: Properties | None = None) -> BuildVariantProperties:
    """The properties of one build, as far as the matrix's sourced rows give them; ``stated``: what the
    index's variants JSON states for it, which fills an arch list the matrix lacks (source ``package_index``)."""
    build = matrix.build_variant(label)
    family = build.family if build is not None else "unknown"
    props: Properties = {}
    unknown: list[str] = []
    sources: list[str] = list(build.source) if build is not None else []
    if build is None:
        unknown.append(f"build label {label} is not in build_variants.yaml")
    elif family in ("cuda", "rocm"):
        props.update(_runtime_properties(build.runtime, family, label, unknown))
        _arch_properties(matrix.arch_list(torch, label, platform), family, (label, platform), stated,
                         (props, unknown, sources))
    elif family == "xpu":
        unknown.append(f"{label}: the Intel device IPs the build targets are not sourced (intel :: device_ip)")
    return BuildVariantProperties(torch, label, family, platform, props, tuple(unknown), tuple(dict.fromkeys(sources)))


def _runtime_properties(runtime: str | None, family: str, label: str, unknown: list[str]) -> Properties:
    """The build's runtime as its provider's feature (nvidia :: cuda_version_lower_bound, amd :: rocm_version)."""
    if runtime is None:
        unknown.append(f"{label}: the runtime version is not sourced")
        return {}
    if family == "cuda":
        return {"nvidia": {"cuda_version_lower_bound": [runtime]}}
    return {"amd": {"rocm_version": [runtime]}}


def _arch_properties(
    row: ArchList | None,
    family: str,
    where: tuple[str, str],
    stated: Properties | None,
    out: tuple[Properties, list[str], list[str]],
) -> None:
    """The build's GPU architectures (nvidia :: sm_arch, amd :: gfx_arch) from the matrix's arch list, else from
    what the index states; ``where`` is (label, platform), ``out`` the (properties, unknowns, sources) to fill."""
    props, unknown, sources = out
    label, platform = where
    namespace = "nvidia" if family == "cuda" else "amd"
    arch_feature = "sm_arch" if family == "cuda" else "gfx_arch"
    from_index = (stated or {}).get(namespace, {}).get(arch_feature)
    if row is None and from_index:
        props.setdefault(namespace, {})[arch_feature] = list(from_index)
        sources.append("package_index")
    elif row is None:
        unknown.append(f"{label} on {platform}: the arch list is not sourced (gpu_archs.yaml)")
    elif family == "cuda":
        props[namespace]["sm_arch"] = _sm_values(row, unknown)
        sources.extend(row.source)
    else:
        props.setdefault(namespace, {})["gfx_arch"] = list(row.archs)
        sources.extend(row.source)


def _sm_values(row: ArchList, unknown: list[str]) -> list[str]:
    """The nvidia plugin's sm_arch values of an arch list (cubins ``_real``, PTX ``_virtual``)."""
    values = [v for a in row.archs if (v := _sm_value(a, "real"))]
    if row.ptx and (ptx := _sm_value(row.ptx, "virtual")):
        values.append(ptx)
    skipped = [a for a in row.archs if _sm_value(a, "real") is None]
    if skipped:
        unknown.append(f"{', '.join(skipped)}: arch-specific cubins have no value in the nvidia plugin's "
                       "sm_arch catalogue")
    return values


def find_patch(matrix: Matrix, version: str) -> tuple[TorchMinor, TorchPatch]:
    """The patch ``version`` names: a patch (2.3.1), a minor (its newest patch) or ``latest``."""
    text = version.strip()
    for minor in matrix.torch_minors():
        patches = matrix.torch_patches(minor)
        if not patches:
            continue
        if text in ("latest", minor.minor):
            return minor, patches[0]
        for patch in patches:
            if patch.version == text:
                return minor, patch
    raise NotFoundError(f"the matrix lists no torch release {version!r}",
                        hint="accelenv matrix show lists every release it knows")


def release_builds(matrix: Matrix, version: str, platform: str) -> list[BuildVariantProperties]:
    """Every build the matrix lists for ``version`` on ``platform``, with its properties."""
    minor, patch = find_patch(matrix, version)
    labels = dict.fromkeys(v.label for v in matrix.variants_on_platform(minor, patch.version, platform))
    stated = index_stated_properties()
    return [build_properties(matrix, patch.version, label, platform, stated.get((patch.version, label)))
            for label in labels]


def _providers_json(providers: Providers, namespaces: set[str]) -> JsonObject:
    return {
        ns: {"requires": list(p.requires), "plugin-api": p.plugin_api}
        for ns, p in providers.by_namespace.items() if ns in namespaces
    }


def _namespaces(exported: list[BuildVariantProperties], providers: Providers) -> tuple[set[str], list[str]]:
    """The namespaces the exported builds use (the first of the providers' when none), and their priority order."""
    used = {ns for b in exported for ns in b.properties}
    order = [ns for ns in providers.namespace_priorities if ns in used] or list(providers.namespace_priorities[:1])
    return used or set(order), order


def variants_document(builds: list[BuildVariantProperties], providers: Providers | None = None) -> JsonObject:
    """The index-level ``{name}-{version}-variants.json`` for ``builds`` (the exportable ones)."""
    providers = providers or load_providers()
    exported = [b for b in builds if b.exportable]
    used, order = _namespaces(exported, providers)
    return {
        "$schema": SCHEMA_URL,
        "default-priorities": {"namespace": order},
        "providers": _providers_json(providers, used),
        "variants": {b.variant_label: b.properties for b in exported},
    }


def variant_dist_info(build: BuildVariantProperties, providers: Providers | None = None) -> JsonObject:
    """One wheel's ``*.dist-info/variant.json`` (PEP 825): the same keys, exactly one variant."""
    return variants_document([build], providers)


def release_variants(matrix: Matrix, version: str, platform: str) -> JsonObject:
    """What `matrix show --variants` and GET /v1/torch/{version}/variants.json give: the PEP 825 document and,
    beside it, the builds not exported or exported with gaps (``accelenv`` key, never inside the document)."""
    builds = release_builds(matrix, version, platform)
    document = variants_document(builds)
    return {
        "document": document,
        "builds": [
            {"label": b.label, "family": b.family, "variant_label": b.variant_label if b.exportable else None,
             "unknown": list(b.unknown), "source": list(b.source)}
            for b in builds
        ],
    }
