"""The verdict "this build ships kernels for this GPU": compiled arch list vs device capability."""

from __future__ import annotations

import pytest

from probes.host import arch_compat

CU121 = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
CU128 = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]


@pytest.mark.parametrize(
    ("archs", "capability", "verdict", "how"),
    [
        pytest.param(CU121, (9, 0), True, "sass-exact", id="h100-on-cu121"),
        pytest.param(CU121, (8, 9), True, "sass-compatible", id="ada-runs-sm86-cubin"),
        pytest.param(CU121, (12, 0), False, "none", id="blackwell-on-cu121-no-ptx"),
        pytest.param(CU128, (12, 0), True, "sass-exact", id="blackwell-on-cu128"),
        pytest.param(CU128, (6, 1), False, "none", id="pascal-dropped-from-cu128"),
        pytest.param(["sm_80", "compute_80"], (9, 0), True, "ptx-jit", id="ptx-forward-compat"),
        pytest.param(["sm_90a"], (9, 0), True, "sass-exact", id="arch-specific-cubin-runs-on-its-own-arch"),
        pytest.param(["sm_90a"], (10, 0), False, "none", id="arch-specific-never-forward"),
        pytest.param(["sm_100f"], (10, 3), True, "sass-compatible", id="family-cubin-runs-within-its-family"),
        pytest.param(["compute_100f"], (12, 0), False, "none", id="family-ptx-not-beyond-its-major"),
        pytest.param(["compute_90a"], (10, 0), False, "none", id="arch-specific-ptx-never-forward"),
        pytest.param([], (9, 0), None, "unknown", id="cpu-build-cannot-tell"),
        pytest.param(CU121, None, None, "unknown", id="no-capability"),
    ],
)
def test_cuda_verdict(archs: list[str], capability: tuple[int, int] | None, verdict: bool | None, how: str) -> None:
    assert arch_compat.cuda_kernels_for(archs, capability) == (verdict, how)


@pytest.mark.parametrize(
    ("archs", "gcn", "verdict"),
    [
        pytest.param(["gfx90a", "gfx942"], "gfx90a:sramecc+:xnack-", True, id="mi250-feature-suffix"),
        pytest.param(["gfx900", "gfx906", "gfx908"], "gfx1100", False, id="rdna3-not-in-list"),
        pytest.param([], "gfx942", None, id="unknown-list"),
    ],
)
def test_rocm_verdict(archs: list[str], gcn: str, verdict: bool | None) -> None:
    assert arch_compat.rocm_kernels_for(archs, gcn)[0] is verdict


def test_arch_name() -> None:
    assert arch_compat.cuda_arch_name((12, 0)) == "sm_120"
    assert arch_compat.cuda_arch_name(None) is None
