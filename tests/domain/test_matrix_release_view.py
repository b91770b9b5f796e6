"""`release_view`: one release flattened per patch and platform."""

from __future__ import annotations

from typing import Any

import pytest

from compat_service.domain.errors import InvalidRequestError, NotFoundError
from compat_service.domain.matrix.loading.loader import load_matrix_rows
from compat_service.domain.matrix.model.rows import MatrixTables
from compat_service.domain.matrix.release_view import release_view


@pytest.fixture(scope="module")
def data() -> MatrixTables:
    return load_matrix_rows()


def _platform(view: dict[str, Any], patch: str, platform: str) -> dict[str, Any]:
    rows = next(p for p in view["patches"] if p["version"] == patch)["platforms"]
    return next(r for r in rows if r["platform"] == platform)


def test_patch_python_override_applies_to_that_patch_only(data: MatrixTables) -> None:
    view = release_view(data, "2.12")
    assert "3.13t" in _platform(view, "2.12.0", "linux-x86_64")["python"]
    assert "3.13t" not in _platform(view, "2.12.1", "linux-x86_64")["python"]
    # the package index has cp313t macOS arm64 wheels for 2.12.0 (generated layer)
    assert "3.13t" in _platform(view, "2.12.0", "macos-arm64")["python"]


def test_unsourced_platform_is_marked_incomplete(data: MatrixTables) -> None:
    # the index gives 2.3.1's default aarch64 wheel (CPU); no source lists the /whl/<label> builds there
    row = _platform(release_view(data, "2.3.1"), "2.3.1", "linux-aarch64")
    assert row["variants"] == ["cpu"] and row["variants_complete"] is False and row["default_index"] == "cpu"


def test_platform_without_wheels_is_left_out(data: MatrixTables) -> None:
    platforms = {r["platform"] for r in release_view(data, "2.3.1")["patches"][0]["platforms"]}
    assert "macos-x86_64" not in platforms
    assert "macos-x86_64" in {r["platform"] for r in release_view(data, "2.2.2")["patches"][0]["platforms"]}


def test_variants_per_platform(data: MatrixTables) -> None:
    row = _platform(release_view(data, "2.9.1"), "2.9.1", "linux-aarch64")
    assert row["variants"] == ["cpu", "cu128", "cu129"] and row["default_index"] == "cpu"


def test_not_found_offers_the_nearest_releases(data: MatrixTables) -> None:
    with pytest.raises(NotFoundError) as info:
        release_view(data, "2.16")
    assert [a.request["torch"] for a in info.value.alternatives] == ["2.13", "2.14", "2.15"]


def test_malformed_release_is_an_invalid_request(data: MatrixTables) -> None:
    with pytest.raises(InvalidRequestError):
        release_view(data, "2")
