"""Which variant a PEP 817 installer picks (checked against variantlib's own resolver) and which accelenv
picks, and the reasons they differ: a mixed-GPU host, a driver minor-version compatibility covers, a ROCm
patch release, a known-bad build."""

from __future__ import annotations

import pytest
from variantlib.models.variant import VariantDescription, VariantProperty
from variantlib.resolver.lib import sort_and_filter_supported_variants

from compat_service.domain.matrix.loading.snapshot import load_matrix_cached
from compat_service.domain.variants.export import release_variants
from compat_service.domain.variants.providers import supported_configs
from compat_service.domain.variants.selection import VariantHost, explain_selection

MATRIX = load_matrix_cached()
DOC = release_variants(MATRIX, "2.13.0", "linux-x86_64")["document"]

HOSTS = {
    "mixed-blackwell-pascal": VariantHost(driver="580.65.06", gpus=("sm_120", "sm_61")),
    "hopper-r570": VariantHost(driver="570.86.10", gpus=("sm_90",)),
    "ampere-r535": VariantHost(driver="535.54.03", gpus=("sm_80",)),
    "mi300-rocm-7.2.1": VariantHost(gpus=("gfx942",), rocm_version="7.2.1"),
    "mi300-rocm-7.2": VariantHost(gpus=("gfx942",), rocm_version="7.2"),
    "cpu-only": VariantHost(),
}


def _variantlib_order(host: VariantHost) -> list[str]:
    facts = host.provider_facts(MATRIX)
    namespaces = DOC["default-priorities"]["namespace"]
    supported = [VariantProperty(c.namespace, c.feature, v) for ns in namespaces
                 for c in supported_configs(ns, facts) for v in c.values]
    descs = [VariantDescription([VariantProperty(ns, f, v) for ns, fs in props.items() for f, vs in fs.items()
                                 for v in vs], label=label) for label, props in DOC["variants"].items()]
    ranked = sort_and_filter_supported_variants(descs, supported, namespace_priorities=list(namespaces))
    return [d.label for d in ranked]


@pytest.mark.parametrize("name", list(HOSTS))
def test_the_installer_side_ranks_as_variantlibs_resolver(name: str) -> None:
    explained = explain_selection(MATRIX, HOSTS[name], DOC)
    assert list(explained.provider_order) == _variantlib_order(HOSTS[name])


def test_on_a_mixed_gpu_host_the_provider_judges_the_highest_gpu_and_accelenv_every_gpu() -> None:
    explained = explain_selection(MATRIX, HOSTS["mixed-blackwell-pascal"], DOC)
    assert explained.provider_choice == "cu130"
    assert explained.accelenv_choice != "cu130"
    assert "sm_61" in explained.accelenv_rejects["cu130"]
    (difference,) = explained.differences
    assert difference.code == "highest-gpu-only"
    assert "highest GPU (sm_120)" in difference.message and "sm_61" in difference.message


def test_a_driver_minor_version_compatibility_covers_runs_the_cuda_12_build() -> None:
    explained = explain_selection(MATRIX, HOSTS["ampere-r535"], DOC)
    assert explained.supported["nvidia :: cuda_version_lower_bound"][0] == "12.2"
    assert explained.provider_choice == "null"
    assert "12.6" in explained.provider_rejects["cu126"]
    assert explained.accelenv_choice == "cu126"
    (difference,) = explained.differences
    assert difference.code == "minor-version-compat"
    assert "minor-version compatibility" in difference.message and "535.54.03" in difference.message


def test_both_agree_where_the_rules_do() -> None:
    explained = explain_selection(MATRIX, HOSTS["hopper-r570"], DOC)
    assert explained.agree and explained.provider_choice == "cu126" and explained.differences == ()


def test_a_rocm_patch_release_is_not_the_amd_providers_exact_version() -> None:
    patch = explain_selection(MATRIX, HOSTS["mi300-rocm-7.2.1"], DOC)
    assert (patch.provider_choice, patch.accelenv_choice) == ("null", "rocm7.2")
    assert patch.differences[0].code == "rocm-version-exact"
    exact = explain_selection(MATRIX, HOSTS["mi300-rocm-7.2"], DOC)
    assert exact.agree and exact.provider_choice == "rocm7.2"


def test_a_known_bad_build_is_the_installers_pick_and_accelenvs_refusal() -> None:
    explained = explain_selection(MATRIX, HOSTS["hopper-r570"], DOC, known_bad={"cu126": "probe reports: broken"})
    assert explained.provider_choice == "cu126" and explained.accelenv_choice == "null"
    assert explained.differences[0].code == "known-bad"
    assert "probe reports: broken" in explained.differences[0].message


def test_a_variants_json_without_a_null_variant_still_ranks_the_null_fallback() -> None:
    document = {**DOC, "variants": {k: v for k, v in DOC["variants"].items() if k != "null"}}
    explained = explain_selection(MATRIX, VariantHost(driver="535.104.05", cuda_driver_version="12.4",
                                                      gpus=("sm_90", "sm_80"), rocm_version="7.2.1"), document)
    assert explained.provider_order[-1] == "null"
