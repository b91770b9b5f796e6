"""Which variant of a variants JSON a PEP 817 installer would install on a host, which accelenv would, and why
they differ.

The installer's side follows PEP 817's algorithm as variantlib implements it (``resolver/lib.py``
``sort_and_filter_supported_variants``; the tests hold the two equal): a variant is compatible when, for every
feature it names, one of its values is among those its provider reports supported (``providers``); the
compatible ones rank by the supported properties in namespace order, then the provider's feature order, then
its value order; the null variant always fits and ranks last.

accelenv's side judges the same variants with the rules its resolver applies (``hardware_rules``, the
functions the resolver's stages call): every GPU of the host must run the build's kernels or PTX (not only
the highest); the driver needs the floor of ``driver_rule``, which counts NVIDIA's minor-version
compatibility for a build whose SASS covers the GPU; a ROCm host runtime fits a build of the same
major.minor; a build the caller marks known-bad (probe evidence, a yank) is out. Among the builds that pass it
prefers an accelerator build over the null variant, SASS over PTX, then the newest runtime.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from packaging.version import InvalidVersion, Version

from compat_service.domain.hardware_rules import driver_rule, newest_cuda_for_driver, runtime_fits
from compat_service.domain.json_types import JsonMapping, JsonObject
from compat_service.domain.matrix.interface import Matrix
from compat_service.domain.variants.export import NULL_LABEL
from compat_service.domain.variants.providers import (
    FeatureConfig,
    HostVariantFacts,
    highest_gpu,
    supported_configs,
)
from probes.host.arch_compat import cubin_runs_on, ptx_runs_on


@dataclass(frozen=True)
class VariantHost:
    """A host as the explanation reads it: detected, or described (`--gpu-arch` may list several GPUs)."""

    os: str = "linux"
    #: the NVIDIA driver version (550.54.14); None = none or unknown
    driver: str | None = None
    #: the CUDA version that driver reports; None = derived from ``driver`` with cuda.yaml's toolkit floors
    cuda_driver_version: str | None = None
    #: every GPU: sm_XY for NVIDIA, gfxNNN for AMD
    gpus: tuple[str, ...] = ()
    rocm_version: str | None = None
    intel_device_ips: tuple[str, ...] = ()
    npu_type: str | None = None
    ascend_driver_version: str | None = None
    cann_version: str | None = None

    def provider_facts(self, matrix: Matrix) -> HostVariantFacts:
        umd = self.cuda_driver_version
        if umd is None and self.driver is not None:
            found = newest_cuda_for_driver(matrix, self.driver, self.os)
            # the driver reports its CUDA version as major.minor (cuDriverGetVersion), as the plugin reads it
            umd = ".".join(found.split(".")[:2]) if found else None
        return HostVariantFacts(
            cuda_driver_version=umd,
            nvidia_gpus=tuple(g for g in self.gpus if g.startswith("sm_")),
            rocm_version=self.rocm_version,
            gfx_archs=tuple(g for g in self.gpus if g.startswith("gfx")),
            intel_device_ips=self.intel_device_ips,
            npu_type=self.npu_type,
            ascend_driver_version=self.ascend_driver_version,
            cann_version=self.cann_version,
        )


@dataclass(frozen=True)
class Difference:
    #: highest-gpu-only, minor-version-compat, known-bad, rocm-version-exact, preference
    code: str
    message: str


@dataclass(frozen=True)
class SelectionExplanation:
    #: the label a PEP 817 installer installs ("null" = the null variant; None = no variant fits)
    provider_choice: str | None
    #: the compatible labels in the installer's order
    provider_order: tuple[str, ...]
    #: label -> why the installer's providers rule it out
    provider_rejects: dict[str, str]
    accelenv_choice: str | None
    accelenv_order: tuple[str, ...]
    accelenv_rejects: dict[str, str]
    differences: tuple[Difference, ...] = ()
    #: what the providers report supported on this host: "ns :: feature" -> values
    supported: dict[str, list[str]] = field(default_factory=dict)

    @property
    def agree(self) -> bool:
        return self.provider_choice == self.accelenv_choice

    def to_json(self) -> JsonObject:
        return {
            "provider_choice": self.provider_choice,
            "provider_order": list(self.provider_order),
            "provider_rejects": self.provider_rejects,
            "accelenv_choice": self.accelenv_choice,
            "accelenv_order": list(self.accelenv_order),
            "accelenv_rejects": self.accelenv_rejects,
            "agree": self.agree,
            "differences": [{"code": d.code, "message": d.message} for d in self.differences],
            "supported": self.supported,
        }


Variants = Mapping[str, Mapping[str, Mapping[str, list[str]]]]


def _provider_side(variants: Variants, configs: list[FeatureConfig], namespaces: list[str]):
    allowed = {(c.namespace, c.feature): c.values for c in configs}
    rejects: dict[str, str] = {}
    fits: list[str] = []
    for label, props in variants.items():
        why = _provider_refusal(props, allowed)
        if why:
            rejects[label] = why
        else:
            fits.append(label)
    # rank: supported properties in namespace order, then the provider's feature and value order
    ordered = [c for ns in namespaces for c in configs if c.namespace == ns]
    if NULL_LABEL not in fits:
        fits.append(NULL_LABEL)
    return sorted(fits, key=lambda label: (_provider_rank(variants.get(label, {}), ordered), label)), rejects


def _provider_refusal(
    props: Mapping[str, Mapping[str, list[str]]], allowed: Mapping[tuple[str, str], tuple[str, ...]]
) -> str | None:
    """Why the provider rules a variant out: the first property the host does not support; None when it fits."""
    for ns, features in props.items():
        for feature, values in features.items():
            supported = allowed.get((ns, feature))
            if not supported:
                return f"the {ns} provider reports no {feature} on this host"
            if not set(values) & set(supported):
                shown = ", ".join(supported[:4]) + (", …" if len(supported) > 4 else "")
                return f"{ns} :: {feature} :: {', '.join(values)} is not among the supported {shown}"
    return None


_UNRANKED = 1 << 30


def _provider_rank(props: Mapping[str, Mapping[str, list[str]]], ordered: list[FeatureConfig]) -> tuple[int, ...]:
    """Per supported feature (in ``ordered``'s order), the best position of a value the variant names."""
    keys = [(c.namespace, c.feature) for c in ordered]
    ranks = [_UNRANKED] * len(keys)
    for ns, features in props.items():
        for feature, values in features.items():
            if (ns, feature) in keys:
                i = keys.index((ns, feature))
                order = ordered[i].values
                ranks[i] = min([order.index(v) for v in values if v in order] or [_UNRANKED])
    return tuple(ranks)


def _version(text: str | None) -> Version | None:
    try:
        return Version(text) if text else None
    except InvalidVersion:
        return None


_OUT = (1, 0, 0.0)  # the preference key of a variant accelenv rules out


def _accelenv_verdict(
    matrix: Matrix, host: VariantHost, label: str, props: Mapping[str, Mapping[str, list[str]]]
) -> tuple[str | None, tuple[int, int, float]]:
    """(why accelenv rules the variant out or None, its preference key: lower first)."""
    nvidia = props.get("nvidia", {})
    amd = props.get("amd", {})
    if nvidia:
        return _nvidia_verdict(matrix, host, nvidia)
    if amd:
        return _amd_verdict(host, amd)
    if props:
        return f"accelenv does not judge the {', '.join(props)} namespace", _OUT
    return None, (0, 9, 0.0)  # the null variant (the CPU build): always runs, preferred last


def _runtime_rank(runtime: str | None) -> float:
    """Newer runtimes first: minus major * 100 + minor (0 when unknown)."""
    runtime_v = _version(runtime)
    return -float(runtime_v.major * 100 + runtime_v.minor) if runtime_v else 0.0


def _nvidia_verdict(
    matrix: Matrix, host: VariantHost, nvidia: Mapping[str, list[str]]
) -> tuple[str | None, tuple[int, int, float]]:
    runtime = next(iter(nvidia.get("cuda_version_lower_bound") or ()), None)
    gpus = [g for g in host.gpus if g.startswith("sm_")]
    if not gpus:
        return "the host has no NVIDIA GPU", _OUT
    sm = nvidia.get("sm_arch")
    coverage = "unknown"
    if sm is not None:
        coverage, refused = _sm_coverage(sm, gpus)
        if refused is not None:
            return f"the build ships no kernels or PTX for {refused}", _OUT
    refused = _driver_refusal(matrix, host, runtime, coverage)
    if refused is not None:
        return refused, _OUT
    return None, (0, 0 if coverage != "ptx" else 1, _runtime_rank(runtime))


def _driver_refusal(matrix: Matrix, host: VariantHost, runtime: str | None, coverage: str) -> str | None:
    """Why the host's driver is too old for the build's CUDA (the resolver's driver rule), or None."""
    if host.driver is None or runtime is None:
        return None
    rule = driver_rule(matrix, runtime, None, host.os, coverage)
    need, have = _version(rule.version), _version(host.driver)
    if need is not None and have is not None and have < need:
        return f"driver {host.driver} is below the {rule.version} that CUDA {runtime} needs ({rule.rule})"
    return None


def _sm_coverage(sm: list[str], gpus: list[str]) -> tuple[str, str | None]:
    """How every GPU runs the build's sm_arch property ("kernels", else "ptx"), or the first GPU it does not
    run on."""
    cubins = [f"sm_{v.removesuffix('_real')}" for v in sm if v.endswith("_real")]
    ptx = [f"sm_{v.removesuffix('_virtual')}" for v in sm if v.endswith("_virtual")]
    worst = "kernels"
    for gpu in gpus:
        if any(cubin_runs_on(c, gpu) for c in cubins):
            continue
        if any(ptx_runs_on(p, gpu) for p in ptx):
            worst = "ptx"
            continue
        return worst, gpu
    return worst, None


def _missing_targets(gfx: list[str], targets: list[str] | None) -> list[str]:
    """The host's gfx targets the build's gfx_arch property does not list (none when it has no such list)."""
    return [g for g in gfx if g not in targets] if targets is not None else []


def _amd_verdict(host: VariantHost, amd: Mapping[str, list[str]]) -> tuple[str | None, tuple[int, int, float]]:
    gfx = [g for g in host.gpus if g.startswith("gfx")]
    if not gfx:
        return "the host has no AMD GPU", _OUT
    missing = _missing_targets(gfx, amd.get("gfx_arch"))
    if missing:
        return f"the build ships no code objects for {', '.join(missing)}", _OUT
    runtime = next(iter(amd.get("rocm_version") or ()), None)
    if host.rocm_version and runtime_fits("rocm", host.rocm_version, runtime) is False:
        return f"ROCm {host.rocm_version} on the host does not fit the build's ROCm {runtime}", _OUT
    return None, (0, 0, _runtime_rank(runtime))


def explain_selection(
    matrix: Matrix,
    host: VariantHost,
    document: JsonMapping,
    known_bad: Mapping[str, str] | None = None,
) -> SelectionExplanation:
    """The installer's pick and accelenv's pick among ``document``'s variants (a PEP 825 variants JSON) for
    ``host``; ``known_bad`` maps a label to why it must not be installed (probe evidence, a yank)."""
    known_bad = known_bad or {}
    variants: Variants = document.get("variants", {})
    namespaces = list(document.get("default-priorities", {}).get("namespace", []))
    facts = host.provider_facts(matrix)
    configs = [c for ns in namespaces for c in supported_configs(ns, facts)]
    provider_order, provider_rejects = _provider_side(variants, configs, namespaces)

    accel_order, accel_rejects = _accelenv_side(matrix, host, variants, known_bad)
    provider_choice = provider_order[0] if provider_order else None
    accel_choice = accel_order[0] if accel_order else None
    differences = _differences(host, facts.cuda_driver_version, provider_choice, accel_choice,
                               provider_rejects, accel_rejects, known_bad, variants)
    return SelectionExplanation(
        provider_choice, tuple(provider_order), provider_rejects, accel_choice, tuple(accel_order), accel_rejects,
        tuple(differences), {f"{c.namespace} :: {c.feature}": list(c.values) for c in configs},
    )


def _accelenv_side(
    matrix: Matrix, host: VariantHost, variants: Variants, known_bad: Mapping[str, str]
) -> tuple[list[str], dict[str, str]]:
    """accelenv's order of the variants it accepts (the null variant among them), and why it rules out the rest."""
    rejects: dict[str, str] = {}
    keyed: list[tuple[tuple[int, int, float], str]] = []
    for label in [*variants, *([NULL_LABEL] if NULL_LABEL not in variants else [])]:
        if label in known_bad:
            rejects[label] = f"known-bad: {known_bad[label]}"
            continue
        why, key = _accelenv_verdict(matrix, host, label, variants.get(label, {}))
        if why:
            rejects[label] = why
        else:
            keyed.append((key, label))
    return [label for _, label in sorted(keyed)], rejects


def _differences(
    host: VariantHost, umd: str | None, provider: str | None, accel: str | None,
    provider_rejects: dict[str, str], accel_rejects: dict[str, str], known_bad: Mapping[str, str], variants: Variants,
) -> list[Difference]:
    if provider == accel:
        return []
    out: list[Difference] = []
    if provider is not None and provider in accel_rejects:
        out.append(_accelenv_refuses(host, provider, accel_rejects[provider], known_bad))
    if accel is not None and accel in provider_rejects:
        out.append(_provider_refuses(host, umd, accel, provider_rejects[accel], variants))
    if not out:
        out.append(Difference("preference", f"both accept {provider} and {accel}; the installer ranks by the "
                              "providers' property order, accelenv prefers SASS over PTX, then the newest runtime"))
    return out


def _accelenv_refuses(host: VariantHost, provider: str, why: str, known_bad: Mapping[str, str]) -> Difference:
    """Why accelenv does not take the installer's pick."""
    top = highest_gpu(host.gpus)
    others = [g for g in host.gpus if g.startswith("sm_") and g != top]
    if provider in known_bad:
        return Difference("known-bad", f"the installer takes {provider}, which accelenv knows to be bad: "
                          f"{known_bad[provider]}")
    if others and "no kernels" in why and top is not None and top not in why:
        return Difference(
            "highest-gpu-only",
            f"the nvidia provider judges only the highest GPU ({top}) and takes {provider}; accelenv checks "
            f"every GPU: {why}",
        )
    return Difference("accelenv-rules-out", f"the installer takes {provider}; accelenv rules it out: {why}")


def _provider_refuses(host: VariantHost, umd: str | None, accel: str, why: str, variants: Variants) -> Difference:
    """Why the installer's providers do not take accelenv's pick."""
    nvidia = variants.get(accel, {}).get("nvidia", {})
    amd = variants.get(accel, {}).get("amd", {})
    if "cuda_version_lower_bound" in why and nvidia:
        return Difference(
            "minor-version-compat",
            f"the nvidia provider needs a driver reporting CUDA >= {nvidia['cuda_version_lower_bound'][0]} "
            f"(this one reports {umd}) and skips {accel}; NVIDIA's minor-version compatibility runs a "
            f"CUDA {nvidia['cuda_version_lower_bound'][0].split('.')[0]}.x build on any driver of the major's "
            f"floor when the build's SASS covers the GPU, and driver {host.driver} meets it, so accelenv takes "
            f"{accel}",
        )
    if "rocm_version" in why and amd:
        return Difference(
            "rocm-version-exact",
            f"the amd provider matches rocm_version exactly ({host.rocm_version} is not "
            f"{amd['rocm_version'][0]}) and skips {accel}; accelenv takes a build of the same ROCm major.minor",
        )
    return Difference("provider-rules-out", f"accelenv takes {accel}; the installer's providers rule it out: {why}")


def variant_host(
    matrix: Matrix,
    *,
    os: str = "linux",
    driver: str | None = None,
    cuda_driver_version: str | None = None,
    gpu_archs: str | None = None,
    gpu_names: str | None = None,
    rocm_version: str | None = None,
    cann_version: str | None = None,
) -> VariantHost:
    """A described host: ``gpu_archs`` and ``gpu_names`` comma-separated (every GPU, not only the lowest),
    names mapped to architectures with the matrix's GPU names (``hardware_rules.gpu_for_name``)."""
    from compat_service.domain.hardware_rules import gpu_for_name

    gpus = [a.strip() for a in (gpu_archs or "").split(",") if a.strip()]
    for name in (gpu_names or "").split(","):
        row = gpu_for_name(matrix, name) if name.strip() else None
        if row is not None:
            gpus.append(row.arch)
    return VariantHost(os=os, driver=driver, cuda_driver_version=cuda_driver_version, gpus=tuple(gpus),
                       rocm_version=rocm_version, cann_version=cann_version)


def explanation_lines(explained: SelectionExplanation) -> list[str]:
    """The explanation as plain lines (the CLI's text, the selector page)."""
    lines = [
        f"a PEP 817 installer (the published providers) takes: {explained.provider_choice or 'nothing'}",
        f"accelenv takes: {explained.accelenv_choice or 'nothing'}",
    ]
    for d in explained.differences:
        lines.append(f"  differs ({d.code}): {d.message}")
    if explained.agree:
        lines.append("  they agree")
    return lines
