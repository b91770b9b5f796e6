"""The evidence cell key a report belongs to (docs/architecture.md), normalised from its environment."""

from __future__ import annotations

import pytest

from compat_service.domain.evidence.cells import CellKey, cell_key_of
from compat_service.domain.evidence.report import Environment


def _env(**overrides: object) -> Environment:
    base: dict[str, object] = {
        "torch_version": "2.3.1+cu121", "torch_build": None, "python_version": "3.11.7", "os": "linux",
        "arch": "x86_64", "backend": "cuda", "runtime_version": "12.1", "driver_version": "550.54.14",
        "device_arch": "sm_90", "host_fingerprint": "f" * 32,
    }
    return Environment.model_validate(base | overrides)


@pytest.mark.parametrize(
    ("overrides", "field", "expected"),
    [
        pytest.param({}, "torch_version", "2.3.1", id="local-tag-dropped"),
        pytest.param({}, "torch_build", "cu121", id="build-from-local-tag"),
        pytest.param({"torch_build": "cu118"}, "torch_build", "cu118", id="explicit-build-wins"),
        pytest.param({"torch_version": "2.3.1"}, "torch_build", None, id="no-tag-no-build-unknown"),
        pytest.param({"python_version": "3.13.1t"}, "python", "3.13t", id="free-threaded"),
        pytest.param({"python_version": "3.12.0rc1"}, "python", "3.12", id="pre-release-python"),
        pytest.param({"os": "macos", "arch": "aarch64"}, "arch", "arm64", id="macos-says-arm64"),
        pytest.param({"arch": "arm64"}, "arch", "aarch64", id="linux-says-aarch64"),
        pytest.param({"os": "windows", "arch": "AMD64"}, "arch", "x86_64", id="windows-amd64"),
        pytest.param({"backend": "CUDA"}, "backend", "cuda", id="backend-lower-case"),
        pytest.param({"driver_version": " "}, "driver_version", None, id="blank-is-unknown"),
    ],
)
def test_cell_key_normalisation(overrides: dict[str, object], field: str, expected: object) -> None:
    assert getattr(cell_key_of(_env(**overrides)), field) == expected


def test_digest_tells_unknown_from_empty_and_is_stable() -> None:
    known = cell_key_of(_env())
    assert known.digest() == cell_key_of(_env(host_fingerprint="0" * 32)).digest()
    unknown_driver = known.model_copy(update={"driver_version": None})
    assert unknown_driver.digest() != known.digest()
    assert CellKey(**unknown_driver.model_dump()).digest() == unknown_driver.digest()
