"""Every build the matrix knows, exported as PEP 825 variant metadata, validates with variantlib (the reference
implementation of the PEP's format), and carries exactly the facts the matrix sources."""

from __future__ import annotations

import json

import pytest
from variantlib.variant_dist_info import VariantDistInfo
from variantlib.variants_json import VariantsJson

from compat_service.domain.matrix.loading.snapshot import load_matrix_cached
from compat_service.domain.variants.export import (
    build_properties,
    release_builds,
    release_variants,
    variant_dist_info,
    variants_document,
)

MATRIX = load_matrix_cached()
PLATFORMS = ("linux-x86_64", "linux-aarch64", "windows-x86_64", "macos-arm64", "macos-x86_64")


def _releases() -> list[tuple[str, str]]:
    return [(p.version, platform) for m in MATRIX.torch_minors() for p in MATRIX.torch_patches(m)
            for platform in PLATFORMS]


def test_every_release_and_platform_exports_a_variants_json_variantlib_accepts() -> None:
    checked = wheels = 0
    for version, platform in _releases():
        builds = release_builds(MATRIX, version, platform)
        if not builds:
            continue
        document = variants_document(builds)
        parsed = VariantsJson(json.loads(json.dumps(document)))
        assert set(parsed.variants) == {b.variant_label for b in builds if b.exportable}
        for build in builds:
            if build.exportable:
                one = VariantDistInfo(json.dumps(variant_dist_info(build)), expected_label=build.variant_label)
                assert one.variant_label == build.variant_label
                wheels += 1
        checked += 1
    assert checked > 50 and wheels > 200


def test_a_cuda_build_carries_its_runtime_and_arch_list_in_the_nvidia_plugins_spelling() -> None:
    build = build_properties(MATRIX, "2.13.0", "cu130", "linux-x86_64")
    row = MATRIX.arch_list("2.13.0", "cu130", "linux-x86_64")
    assert row is not None and row.ptx is not None
    assert build.properties["nvidia"]["cuda_version_lower_bound"] == ["13.0"]
    assert build.properties["nvidia"]["sm_arch"] == [
        *(a.removeprefix("sm_") + "_real" for a in row.archs), row.ptx.removeprefix("sm_") + "_virtual"
    ]
    assert build.unknown == ()


def test_an_unknown_arch_list_is_left_out_and_said_never_guessed() -> None:
    exported = release_variants(MATRIX, "2.13.0", "linux-x86_64")
    rocm71 = next(b for b in exported["builds"] if b["label"] == "rocm7.1")
    assert "gfx_arch" not in exported["document"]["variants"]["rocm7.1"]["amd"]
    assert any("arch list is not sourced" in u for u in rocm71["unknown"])
    xpu = next(b for b in exported["builds"] if b["label"] == "xpu")
    assert xpu["variant_label"] is None and "xpu" not in exported["document"]["variants"]


def test_the_cpu_build_is_the_null_variant() -> None:
    document = release_variants(MATRIX, "2.13.0", "linux-x86_64")["document"]
    assert document["variants"]["null"] == {}


def test_an_unknown_release_is_a_not_found_error() -> None:
    from compat_service.domain.errors import NotFoundError

    with pytest.raises(NotFoundError, match="9.9.9"):
        release_variants(MATRIX, "9.9.9", "linux-x86_64")
