"""The GPU floors of parts of a CUDA build (host_rules.yaml capability_floors) on the bundled matrix: a floor
narrowed to some build labels applies to those builds only (2.11's cu126 bundles cuDNN 9.10.2.21, its cu128 and
cu130 bundle 9.17.1.4, whose support matrix starts at compute capability 7.5)."""

from __future__ import annotations

import pytest

from compat_service.domain.matrix.interface import InMemoryMatrix
from compat_service.domain.matrix.loading.loader import load_matrix_rows


@pytest.fixture(scope="module")
def matrix() -> InMemoryMatrix:
    return InMemoryMatrix(load_matrix_rows())


@pytest.mark.parametrize(
    ("version", "platform", "label", "floors"),
    [
        pytest.param("2.11.0", "linux-x86_64", "cu126", {"cuDNN 9": "sm_50", "torch.compile (Triton)": "sm_70"},
                     id="2.11-cu126-keeps-cudnn-9.10"),
        pytest.param("2.11.0", "linux-x86_64", "cu128",
                     {"cuDNN 9": "sm_50", "cuDNN 9.17": "sm_75", "torch.compile (Triton)": "sm_70"},
                     id="2.11-cu128-bundles-cudnn-9.17"),
        pytest.param("2.11.0", "windows-x86_64", "cu130", {"cuDNN 9": "sm_50", "cuDNN 9.17": "sm_75"},
                     id="2.11-cu130-windows-no-triton"),
        pytest.param("2.12.0", "linux-x86_64", "cu130", {"cuDNN 9": "sm_50", "torch.compile (Triton)": "sm_70"},
                     id="2.12-cu130-cudnn-9.20-floor-unread"),
        pytest.param("2.3.1", "linux-x86_64", "cu121", {"torch.compile (Triton)": "sm_70"}, id="2.3-cudnn-8"),
    ],
)
def test_floors_per_build(matrix: InMemoryMatrix, version: str, platform: str, label: str,
                          floors: dict[str, str]) -> None:
    got = {row.component: row.min_arch for row in matrix.capability_floors(version, platform, label)}
    assert got == floors
