"""NVIDIA's two driver floors (compat_service/domain/hardware_rules.py): which rule decides, on the bundled matrix."""

from __future__ import annotations

import pytest

from compat_service.domain.hardware_rules import arch_coverage, arch_in_range, driver_rule
from compat_service.domain.matrix.interface import InMemoryMatrix
from compat_service.domain.matrix.loading.loader import load_matrix_rows


@pytest.fixture(scope="module")
def matrix() -> InMemoryMatrix:
    return InMemoryMatrix(load_matrix_rows())


@pytest.mark.parametrize(
    ("runtime", "full", "os", "coverage", "version", "rule"),
    [
        pytest.param("12.6", "12.6.3", "linux", "kernels", "525.60.13", "minor-version-compat", id="sass-12x-linux"),
        pytest.param("12.6", "12.6.3", "windows", "kernels", "527.41", "minor-version-compat", id="sass-12x-windows"),
        pytest.param("11.8", "11.8.0", "linux", None, "450.80.02", "minor-version-compat", id="no-gpu-11x"),
        pytest.param("12.8", "12.8.1", "linux", "ptx", "570.124.06", "toolkit-floor", id="ptx-needs-toolkit-floor"),
        pytest.param("13.0", "13.0.2", "windows", "kernels", "580", "minor-version-compat", id="13x-windows-r580"),
        pytest.param("13.0", "13.0.2", "windows", "ptx", "580", "toolkit-floor", id="13x-windows-ptx-no-own-floor"),
        pytest.param("10.2", "10.2.89", "linux", "kernels", "440.33", "toolkit-floor", id="10x-no-mvc"),
        pytest.param("11.0", "11.0.2", "linux", "kernels", "450.51.05", "minor-version-compat", id="own-floor-lower"),
    ],
)
def test_driver_rule(matrix, runtime, full, os, coverage, version, rule) -> None:
    decided = driver_rule(matrix, runtime, full, os, coverage)
    assert (decided.version, decided.rule) == (version, rule)


@pytest.mark.parametrize(
    ("gpu", "low", "high", "inside"),
    [
        ("sm_120", "sm_35", "sm_90", False),
        ("sm_89", "sm_35", "sm_86", True),
        ("sm_121", "sm_50", "sm_120", True),
        ("sm_70", "sm_75", "sm_121", False),
        ("sm_80", "sm_75", "sm_121", True),
    ],
)
def test_arch_in_range(gpu, low, high, inside) -> None:
    assert arch_in_range(gpu, low, high) is inside


def test_toolkit_range_is_a_known_no_where_the_list_is_unknown(matrix) -> None:
    verdict = arch_coverage(matrix, "2.6.0", "cu118", "11.8", "windows-x86_64", "sm_120")
    assert verdict.coverage == "no" and verdict.basis == "toolkit"
    assert "sm_90" in (verdict.shipped or "")
    inside = arch_coverage(matrix, "2.6.0", "cu118", "11.8", "windows-x86_64", "sm_86")
    assert inside.coverage == "unknown"


def test_the_dockerfile_explains_forward_compatibility_for_cuda(matrix) -> None:
    from compat_service.domain.resolver.install_formats import render
    from compat_service.domain.resolver.request import ResolveRequest
    from compat_service.domain.resolver.stages import resolve

    request = ResolveRequest.from_strings(torch="2.8", gpu_arch="sm_80", driver="535.104.05", python="3.12")
    res = resolve(request, matrix)
    text = render(res, "docker")
    assert "cuda-compat-<major>-<minor>" in text and "New Feature Branch" in text
    assert "# host needs nvidia-driver >= 525.60.13" in text
