"""The PEP 817 providers accelenv speaks for, and what each reports supported on a host.

The table (package, plugin API, features, source) is matrix_data/variant_providers.yaml. What a provider
reports is the code of its published plugin, followed here feature by feature (sources.yaml keys in
brackets); accelenv never runs a plugin, it computes what the plugin would answer from the host's facts:

- nvidia [wheelnext_nvidia_provider]: from the CUDA version the driver reports (the "UMD" version: 12.4 for
  an R550 driver), ``cuda_version_lower_bound`` takes every ``M.m`` and ``M`` at or below it, highest first;
  ``cuda_version_upper_bound`` every value above it; ``sm_arch`` only the **highest** GPU's compute
  capability: ``{major}{minor}_real`` down to ``{major}0_real``, then ``{major}0_virtual`` (none below 5.0).
- amd [wheelnext_amd_provider]: ``gfx_arch`` every detected gfx target; ``rocm_version`` the detected version,
  one value (matched exactly).
- intel [wheelnext_intel_provider]: ``device_ip`` every compatible device IP of the detected GPUs.
- ascend [wheelnext_ascend_provider]: ``npu_type``, ``driver_version``, ``cann_version`` as detected, one each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import yaml
from packaging.version import InvalidVersion, Version

from compat_service.domain.errors import Cause, MatrixDataError

PROVIDERS_FILE = "variant_providers.yaml"
#: the range of CUDA versions the NVIDIA plugin's catalogue spans (its UMD_MAJOR_RANGE, UMD_MINOR_RANGE)
_UMD_MAJORS = range(11, 16)
_UMD_MINORS = range(21)


@dataclass(frozen=True)
class Provider:
    namespace: str
    #: the accelenv backend family whose builds carry this namespace's properties
    family: str
    requires: tuple[str, ...]
    plugin_api: str
    features: tuple[str, ...]
    source: tuple[str, ...]


@dataclass(frozen=True)
class Providers:
    namespace_priorities: tuple[str, ...]
    by_namespace: dict[str, Provider]

    def for_family(self, family: str) -> Provider | None:
        return next((p for p in self.by_namespace.values() if p.family == family), None)


@cache
def load_providers(data_dir: Path | None = None) -> Providers:
    """The provider table (default: the bundled matrix_data); a malformed file is a MatrixDataError."""
    if data_dir is None:
        from matrix_data import DATA_DIR

        data_dir = DATA_DIR
    path = Path(data_dir) / PROVIDERS_FILE
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        providers = {
            row["namespace"]: Provider(
                namespace=row["namespace"], family=row["family"], requires=tuple(row["requires"]),
                plugin_api=row["plugin_api"], features=tuple(row["features"]), source=tuple(row["source"]),
            )
            for row in raw["providers"]
        }
        order = tuple(raw["namespace_priorities"])
    except (OSError, yaml.YAMLError, KeyError, TypeError) as exc:
        raise MatrixDataError(
            f"{PROVIDERS_FILE} cannot be read", causes=[Cause(constraint=str(exc), origin=str(path))],
            hint="fix matrix_data/variant_providers.yaml (schema: its header)",
        ) from exc
    if set(order) != set(providers):
        raise MatrixDataError(
            f"{PROVIDERS_FILE}: namespace_priorities must list exactly the providers' namespaces",
            hint="add or remove namespaces in namespace_priorities",
        )
    return Providers(order, providers)


@dataclass(frozen=True)
class HostVariantFacts:
    """What the providers would detect on a host; empty or None = not detected (the provider reports nothing)."""

    #: the CUDA version the NVIDIA driver reports ("12.4"); None = no NVIDIA driver
    cuda_driver_version: str | None = None
    #: every NVIDIA GPU's compute capability as sm_XY
    nvidia_gpus: tuple[str, ...] = ()
    rocm_version: str | None = None
    gfx_archs: tuple[str, ...] = ()
    intel_device_ips: tuple[str, ...] = ()
    npu_type: str | None = None
    ascend_driver_version: str | None = None
    cann_version: str | None = None


@dataclass(frozen=True)
class FeatureConfig:
    """One feature a provider reports supported: its values, most preferred first."""

    namespace: str
    feature: str
    values: tuple[str, ...] = field(default_factory=tuple)


def _capability(arch: str) -> tuple[int, int] | None:
    digits = "".join(ch for ch in arch.removeprefix("sm_") if ch.isdigit())
    if not arch.startswith("sm_") or len(digits) < 2:
        return None
    return int(digits[:-1]), int(digits[-1])


def highest_gpu(gpus: Sequence[str]) -> str | None:
    """The GPU the NVIDIA plugin judges: the highest compute capability (its descending sort, index zero)."""
    known = [(cap, g) for g in gpus if (cap := _capability(g)) is not None]
    return max(known)[1] if known else None


def _nvidia(host: HostVariantFacts) -> list[FeatureConfig]:
    umd = _umd_version(host.cuda_driver_version)
    if umd is None:
        return []
    major, minor = umd.major, umd.minor
    lower = [
        _umd_text(m, n)
        for m in range(major, min(_UMD_MAJORS) - 1, -1)
        for n in ([*range(max(_UMD_MINORS), -1, -1), None] if m < major else [*range(minor, -1, -1), None])
    ]
    upper = [
        _umd_text(m, n)
        for m in range(max(_UMD_MAJORS), major - 1, -1)
        for n in ([*range(max(_UMD_MINORS), -1, -1), None] if m > major else range(max(_UMD_MINORS), minor, -1))
    ]
    out = [FeatureConfig("nvidia", "cuda_version_lower_bound", tuple(lower))]
    if upper:
        out.append(FeatureConfig("nvidia", "cuda_version_upper_bound", tuple(upper)))
    out.extend(_sm_arch(host.nvidia_gpus))
    return out


def _umd_version(text: str | None) -> Version | None:
    try:
        return Version(text) if text else None
    except InvalidVersion:
        return None


def _umd_text(major: int, minor: int | None) -> str:
    return f"{major}.{minor}" if minor is not None else f"{major}"


def _sm_arch(gpus: Sequence[str]) -> list[FeatureConfig]:
    """The nvidia plugin's sm_arch values for the highest GPU (its cubins, newest first, then its PTX)."""
    top = highest_gpu(gpus)
    cap = _capability(top) if top else None
    if cap is None or cap < (5, 0):
        return []
    sm = [f"{cap[0]}{n}_real" for n in range(cap[1], -1, -1)] + [f"{cap[0]}0_virtual"]
    return [FeatureConfig("nvidia", "sm_arch", tuple(sm))]


def _amd(host: HostVariantFacts) -> list[FeatureConfig]:
    out = []
    if host.gfx_archs:
        out.append(FeatureConfig("amd", "gfx_arch", tuple(sorted(set(host.gfx_archs)))))
    if host.rocm_version:
        out.append(FeatureConfig("amd", "rocm_version", (host.rocm_version,)))
    return out


def _intel(host: HostVariantFacts) -> list[FeatureConfig]:
    return [FeatureConfig("intel", "device_ip", tuple(host.intel_device_ips))] if host.intel_device_ips else []


def _ascend(host: HostVariantFacts) -> list[FeatureConfig]:
    found = (("npu_type", host.npu_type), ("driver_version", host.ascend_driver_version),
             ("cann_version", host.cann_version))
    return [FeatureConfig("ascend", name, (value,)) for name, value in found if value]


_SUPPORTED = {"nvidia": _nvidia, "amd": _amd, "intel": _intel, "ascend": _ascend}


def supported_configs(namespace: str, host: HostVariantFacts) -> list[FeatureConfig]:
    """What the ``namespace`` provider's ``get_supported_configs`` would answer on ``host`` (its order)."""
    found = _SUPPORTED.get(namespace)
    return found(host) if found is not None else []
