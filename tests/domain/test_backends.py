"""One normalisation of platforms and one build-label grammar, agreeing with matrix_data/build_variants.yaml."""

from __future__ import annotations

import pytest

from compat_service.domain.backends import PLUGINS, label_family, normalise_arch, python_sort_key
from compat_service.domain.evidence.cells import cell_key_of
from compat_service.domain.evidence.report import Environment
from compat_service.domain.matrix.loading.loader import load_matrix_data
from compat_service.domain.resolver.request import ResolveRequest

SPELLINGS = ["x86_64", "amd64", "x64", "aarch64", "arm64", "ARM64"]


@pytest.mark.parametrize("os_name", ["linux", "windows", "macos"])
@pytest.mark.parametrize("arch", SPELLINGS)
def test_request_and_evidence_normalise_an_arch_alike(os_name: str, arch: str) -> None:
    request = ResolveRequest.from_strings(os=os_name, arch=arch)
    env = Environment(torch_version="2.13.0+cpu", python_version="3.11.7", os=os_name, arch=arch, backend="cpu",
                      host_fingerprint="0" * 64)
    assert request.arch == cell_key_of(env).arch == normalise_arch(os_name, arch)


@pytest.mark.parametrize(
    ("os_name", "expected"), [("linux", "aarch64"), ("windows", "arm64"), ("macos", "arm64")]
)
def test_arm_is_said_per_os(os_name: str, expected: str) -> None:
    assert {normalise_arch(os_name, a) for a in ("arm64", "aarch64")} == {expected}


def test_every_build_variant_family_is_what_its_label_says() -> None:
    variants = load_matrix_data().build_variants.variants
    assert variants
    assert {v.label: label_family(v.label) for v in variants} == {v.label: v.family for v in variants}


@pytest.mark.parametrize(
    ("label", "family"),
    [("cpu", "cpu"), ("cu121", "cuda"), ("rocm6.2.4", "rocm"), ("xpu", "xpu"), ("cu12", None), ("mps", None)],
)
def test_label_family(label: str, family: str | None) -> None:
    assert label_family(label) == family


def test_python_order_puts_free_threaded_after_its_gil_build() -> None:
    assert sorted(["3.13t", "3.9", "3.14", "3.13", "3.10"], key=python_sort_key) == [
        "3.9", "3.10", "3.13", "3.13t", "3.14"
    ]


def test_every_plugin_has_its_vendor_table() -> None:
    vendor = load_matrix_data().vendor_backends
    for plugin in PLUGINS.values():
        rows = getattr(vendor, plugin.table)
        assert rows and all(getattr(row, plugin.version_field) for row in rows)
