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
        why = None
        for ns, features in props.items():
            for feature, values in features.items():
                supported = allowed.get((ns, feature))
                if not supported:
                    why = f"the {ns} provider reports no {feature} on this host"
                elif not set(values) & set(supported):
                    shown = ", ".join(supported[:4]) + (", …" if len(supported) > 4 else "")
                    why = f"{ns} :: {feature} :: {', '.join(values)} is not among the supported {shown}"
                if why:
                    break
            if why:
                break
        if why:
            rejects[label] = why
        else:
            fits.append(label)
    # rank: supported properties in namespace order, then the provider's feature and value order
    ordered = [c for ns in namespaces for c in configs if c.namespace == ns]
    keys = [(c.namespace, c.feature) for c in ordered]
    big = 1 << 30

    def rank(label: str) -> tuple[tuple[int, ...], str]:
        ranks = [big] * len(keys)
        for ns, features in variants.get(label, {}).items():
            for feature, values in features.items():
                if (ns, feature) in keys:
                    i = keys.index((ns, feature))
                    order = ordered[i].values
                    ranks[i] = min([order.index(v) for v in values if v in order] or [big])
        return tuple(ranks), label

    if NULL_LABEL not in fits:
        fits.append(NULL_LABEL)
    return sorted(fits, key=rank), rejects


def _version(text: str | None) -> Version | None:
    try:
        return Version(text) if text else None
    except InvalidVersion:
        return None


def _accelenv_verdict(
    matrix: Matrix, host: VariantHost, label: str, props: Mapping[str, Mapping[str, list[str]]]
) -> tuple[str | None, tuple[int, int, float]]:
    """(why accelenv rules the variant out or None, its preference key: lower first)."""
    nvidia = props.get("nvidia", {})
    amd = props.get("amd", {})
    if nvidia:
        runtime = next(iter(nvidia.get("cuda_version_lower_bound") or ()), None)
        gpus = [g for g in host.gpus if g.startswith("sm_")]
        if not gpus:
            return "the host has no NVIDIA GPU", (1, 0, 0.0)
        sm = nvidia.get("sm_arch")
        coverage = "unknown"
        if sm is not None:
            cubins = [f"sm_{v.removesuffix('_real')}" for v in sm if v.endswith("_real")]
            ptx = [f"sm_{v.removesuffix('_virtual')}" for v in sm if v.endswith("_virtual")]
            worst = "kernels"
            for gpu in gpus:
                if any(cubin_runs_on(c, gpu) for c in cubins):
                    continue
                if any(ptx_runs_on(p, gpu) for p in ptx):
                    worst = "ptx"
                    continue
                return f"the build ships no kernels or PTX for {gpu}", (1, 0, 0.0)
            coverage = worst
        if host.driver is not None and runtime is not None:
            rule = driver_rule(matrix, runtime, None, host.os, coverage)
            need, have = _version(rule.version), _version(host.driver)
            if need is not None and have is not None and have < need:
                return (f"driver {host.driver} is below the {rule.version} that CUDA {runtime} needs "
                        f"({rule.rule})"), (1, 0, 0.0)
        runtime_v = _version(runtime)
        return None, (0, 0 if coverage != "ptx" else 1, -float(runtime_v.major * 100 + runtime_v.minor)
                      if runtime_v else 0.0)
    if amd:
        gfx = [g for g in host.gpus if g.startswith("gfx")]
        if not gfx:
            return "the host has no AMD GPU", (1, 0, 0.0)
        targets = amd.get("gfx_arch")
        if targets is not None:
            missing = [g for g in gfx if g not in targets]
            if missing:
                return f"the build ships no code objects for {', '.join(missing)}", (1, 0, 0.0)
        runtime = next(iter(amd.get("rocm_version") or ()), None)
        if host.rocm_version and runtime_fits("rocm", host.rocm_version, runtime) is False:
            return f"ROCm {host.rocm_version} on the host does not fit the build's ROCm {runtime}", (1, 0, 0.0)
        runtime_v = _version(runtime)
        return None, (0, 0, -float(runtime_v.major * 100 + runtime_v.minor) if runtime_v else 0.0)
    if props:
        return f"accelenv does not judge the {', '.join(props)} namespace", (1, 0, 0.0)
    return None, (0, 9, 0.0)  # the null variant (the CPU build): always runs, preferred last


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

    accel_rejects: dict[str, str] = {}
    keyed: list[tuple[tuple[int, int, float], str]] = []
    for label in [*variants, *([NULL_LABEL] if NULL_LABEL not in variants else [])]:
        if label in known_bad:
            accel_rejects[label] = f"known-bad: {known_bad[label]}"
            continue
        why, key = _accelenv_verdict(matrix, host, label, variants.get(label, {}))
        if why:
            accel_rejects[label] = why
        else:
            keyed.append((key, label))
    accel_order = [label for _, label in sorted(keyed)]
    provider_choice = provider_order[0] if provider_order else None
    accel_choice = accel_order[0] if accel_order else None
    differences = _differences(host, facts.cuda_driver_version, provider_choice, accel_choice,
                               provider_rejects, accel_rejects, known_bad, variants)
    return SelectionExplanation(
        provider_choice, tuple(provider_order), provider_rejects, accel_choice, tuple(accel_order), accel_rejects,
        tuple(differences), {f"{c.namespace} :: {c.feature}": list(c.values) for c in configs},
    )


def _differences(
    host: VariantHost, umd: str | None, provider: str | None, accel: str | None,
    provider_rejects: dict[str, str], accel_rejects: dict[str, str], known_bad: Mapping[str, str], variants: Variants,
) -> list[Difference]:
    if provider == accel:
        return []
    out: list[Difference] = []
    if provider is not None and provider in accel_rejects:
        why = accel_rejects[provider]
        top = highest_gpu(host.gpus)
        others = [g for g in host.gpus if g.startswith("sm_") and g != top]
        if provider in known_bad:
            out.append(Difference("known-bad", f"the installer takes {provider}, which accelenv knows to be bad: "
                                  f"{known_bad[provider]}"))
        elif others and "no kernels" in why and top is not None and top not in why:
            out.append(Difference(
                "highest-gpu-only",
                f"the nvidia provider judges only the highest GPU ({top}) and takes {provider}; accelenv checks "
                f"every GPU: {why}",
            ))
        else:
            out.append(Difference("accelenv-rules-out", f"the installer takes {provider}; accelenv rules it out: "
                                  f"{why}"))
    if accel is not None and accel in provider_rejects:
        why = provider_rejects[accel]
        nvidia = variants.get(accel, {}).get("nvidia", {})
        amd = variants.get(accel, {}).get("amd", {})
        if "cuda_version_lower_bound" in why and nvidia:
            out.append(Difference(
                "minor-version-compat",
                f"the nvidia provider needs a driver reporting CUDA >= {nvidia['cuda_version_lower_bound'][0]} "
                f"(this one reports {umd}) and skips {accel}; NVIDIA's minor-version compatibility runs a "
                f"CUDA {nvidia['cuda_version_lower_bound'][0].split('.')[0]}.x build on any driver of the major's "
                f"floor when the build's SASS covers the GPU, and driver {host.driver} meets it, so accelenv takes "
                f"{accel}",
            ))
        elif "rocm_version" in why and amd:
            out.append(Difference(
                "rocm-version-exact",
                f"the amd provider matches rocm_version exactly ({host.rocm_version} is not "
                f"{amd['rocm_version'][0]}) and skips {accel}; accelenv takes a build of the same ROCm major.minor",
            ))
        else:
            out.append(Difference("provider-rules-out", f"accelenv takes {accel}; the installer's providers rule "
                                  f"it out: {why}"))
    if not out:
        out.append(Difference("preference", f"both accept {provider} and {accel}; the installer ranks by the "
                              "providers' property order, accelenv prefers SASS over PTX, then the newest runtime"))
    return out


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
