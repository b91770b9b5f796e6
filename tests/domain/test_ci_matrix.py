"""The CI matrix (compat_service/domain/ci/matrix.py): every cell is a combination the resolver accepts, every
combination of the request's axes is either a cell or an exclusion the resolver also refuses, and mode=pr
keeps the documented extremes."""

from __future__ import annotations

from typing import Any

import pytest
from packaging.version import Version

from compat_service.domain.backends import python_sort_key
from compat_service.domain.ci.matrix import CiMatrixRequest, check_command, ci_matrix
from compat_service.domain.errors import AccelenvError, InvalidRequestError, TorchNotFoundError
from compat_service.domain.matrix.interface import InMemoryMatrix
from compat_service.domain.matrix.loader import load_matrix_rows
from compat_service.domain.resolver.install_formats import render
from compat_service.domain.resolver.request import ResolveRequest
from compat_service.domain.resolver.stages import resolve

ISSUE_QUERY = {"torch": ">=2.3", "family": "cuda", "os": "linux"}


@pytest.fixture(scope="module")
def matrix() -> InMemoryMatrix:
    return InMemoryMatrix(load_matrix_rows())


@pytest.fixture(scope="module")
def cuda_matrix(matrix: InMemoryMatrix) -> dict[str, Any]:
    return ci_matrix(CiMatrixRequest.from_strings(**ISSUE_QUERY), matrix)


def _resolve(matrix: InMemoryMatrix, torch: str, python: str | None, os: str, arch: str, backend: str) -> Any:
    request = ResolveRequest.from_strings(torch=torch, python=python, os=os, arch=arch, backend=backend)
    return resolve(request, matrix)


def test_every_cell_is_what_the_resolver_answers(matrix: InMemoryMatrix, cuda_matrix: dict[str, Any]) -> None:
    cells = cuda_matrix["include"]
    assert cells and cuda_matrix["total"] == len(cells)
    for cell in cells:
        assert cell["family"] == "cuda" and Version(cell["torch"]) >= Version("2.3") and cell["os"] == "linux"
        res = _resolve(matrix, cell["torch"], cell["python"], cell["os"], cell["arch"], cell["build"])
        assert (res.torch_version, res.backend, res.python) == (cell["torch"], cell["build"], cell["python"])
        assert res.pins == cell["pins"] and res.index_url == cell["index_url"]
        assert cell["install"] == render(res, "pip")
        assert cell["check"] == check_command(cell["torch"], cell["build"], cell["python"], cell["pins"])
        assert cell["check"].startswith(f"accelenv verify-env --expect torch=={cell['torch']}+{cell['build']}")
        build_row = matrix.build_variant(cell["build"])
        assert build_row is not None and cell["runtime"] == build_row.runtime
        floor = next((r.version for r in res.requirements if r.name == "nvidia-driver"), None)
        assert cell["driver_floor"] == floor
        arch_row = matrix.arch_list(cell["torch"], cell["build"], cell["platform"])
        assert cell["arch_list"] == (list(arch_row.archs) if arch_row else None)


def test_every_exclusion_is_refused_by_the_resolver_for_its_reason(
    matrix: InMemoryMatrix, cuda_matrix: dict[str, Any]
) -> None:
    excluded = cuda_matrix["excluded"]
    assert excluded
    for ex in excluded:
        assert ex["reason"] and ex["code"]
        backend = ex.get("build") or ex.get("family") or "cuda"
        pythons = [ex["python"]] if "python" in ex else cuda_matrix["request"]["python"]
        for python in pythons:
            with pytest.raises(AccelenvError) as caught:
                _resolve(matrix, ex["torch"], python, ex["os"], ex["arch"], backend)
            if "python" in ex:
                assert caught.value.code == ex["code"] == "python-unsupported"
                # torch itself has no wheel for the Python, or a companion pinned with it has none (issue 29)
                assert (
                    f"no cp{ex['python'].replace('.', '')} wheel for torch {ex['torch']}" in ex["reason"]
                    or f"no wheel for Python {ex['python']}" in ex["reason"]
                ), ex["reason"]


def test_no_combination_is_silently_dropped(matrix: InMemoryMatrix, cuda_matrix: dict[str, Any]) -> None:
    """Every (torch, python, cuda build) of the answer's axes is a cell or covered by an exclusion."""
    cells = {(c["torch"], c["python"], c["build"], c["arch"]) for c in cuda_matrix["include"]}
    torches = {c["torch"] for c in cuda_matrix["include"]} | {e["torch"] for e in cuda_matrix["excluded"]}
    for minor in matrix.torch_minors():
        for patch in matrix.torch_patches(minor)[:1]:
            if patch.version not in torches:
                continue
            labels = [v.label for v in minor.variants
                      if getattr(matrix.build_variant(v.label), "family", None) == "cuda"
                      and "linux-x86_64" in v.platforms and (v.patches is None or patch.version in v.patches)]
            for python in cuda_matrix["request"]["python"]:
                for label in labels:
                    if (patch.version, python, label, "x86_64") in cells:
                        continue
                    assert any(
                        e["torch"] == patch.version and e.get("python", python) == python
                        and e.get("build", label) == label
                        for e in cuda_matrix["excluded"]
                    ), (patch.version, python, label)


def test_torch_range_picks_the_newest_patch_of_each_minor(matrix: InMemoryMatrix, cuda_matrix: dict) -> None:
    versions = sorted({c["torch"] for c in cuda_matrix["include"]}, key=Version)
    minors = [".".join(v.split(".")[:2]) for v in versions]
    assert len(minors) == len(set(minors)), "one patch per minor"
    for version in versions:
        minor = next(m for m in matrix.torch_minors() if version.startswith(m.minor + "."))
        assert matrix.torch_patches(minor)[0].version == version
    roles = {c["torch"]: c["role"] for c in cuda_matrix["include"]}
    assert roles[versions[0]] == "oldest" and roles[versions[-1]] == "newest"
    assert all(roles[v] == "interior" for v in versions[1:-1])


def test_pr_mode_keeps_the_extremes_and_one_cell_per_family(matrix: InMemoryMatrix) -> None:
    query = {"torch": ">=2.3", "family": "cpu,cuda,rocm", "os": "linux"}
    full = ci_matrix(CiMatrixRequest.from_strings(**query), matrix)["include"]
    pr = ci_matrix(CiMatrixRequest.from_strings(**query, mode="pr"), matrix)["include"]
    assert pr and all(c in full for c in pr) and len(pr) < len(full)
    oldest = min((c["torch"] for c in full), key=Version)
    newest = max((c["torch"] for c in full), key=Version)
    for version in (oldest, newest):
        pythons = [c["python"] for c in full if c["torch"] == version and not c["python"].endswith("t")]
        for python in (min(pythons, key=python_sort_key), max(pythons, key=python_sort_key)):
            assert any(c["torch"] == version and c["python"] == python for c in pr), (version, python)
    for family in ("cpu", "cuda", "rocm"):
        top = max((c["torch"] for c in full if c["family"] == family), key=Version)
        assert any(c["family"] == family and c["torch"] == top for c in pr), family


def test_listed_builds_and_pythons(matrix: InMemoryMatrix) -> None:
    body = ci_matrix(CiMatrixRequest.from_strings(torch=">=2.3,<2.7", build="cu118,cu121", python="3.10,3.13"),
                     matrix)
    assert {c["build"] for c in body["include"]} <= {"cu118", "cu121"}
    assert {c["python"] for c in body["include"]} <= {"3.10", "3.13"}
    missing = [e for e in body["excluded"] if e["code"] == "variant-not-published"]
    for ex in missing:
        with pytest.raises(AccelenvError):
            _resolve(matrix, ex["torch"], "3.10", ex["os"], ex["arch"], ex["build"])


def test_other_formats_and_platforms(matrix: InMemoryMatrix) -> None:
    body = ci_matrix(CiMatrixRequest.from_strings(torch="2.3", family="cpu", os="linux,macos",
                                                  arch="x86_64,arm64", format="uv", python="3.11"), matrix)
    platforms = {c["platform"] for c in body["include"]}
    assert {"linux-x86_64", "linux-aarch64", "macos-arm64"} <= platforms
    assert any(e["code"] == "platform-unsupported" and e["os"] == "macos" and e["arch"] == "x86_64"
               for e in body["excluded"])
    assert all("[[tool.uv.index]]" in c["install"] or c["index_url"] is None for c in body["include"])


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ({"torch": "two"}, "--torch"),
        ({"family": "mps"}, "family"),
        ({"build": "cu12x"}, "build"),
        ({"family": "cpu", "build": "cu121"}, "build"),
        ({"os": "beos"}, "os"),
        ({"python": "3.1x"}, "--python"),
        ({"mode": "nightly"}, "mode"),
        ({"format": "msi"}, "format"),
        ({"format": "docker", "os": "windows"}, "format"),
    ],
    ids=lambda v: str(v),
)
def test_bad_requests_name_the_parameter(query: dict[str, str], named: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        CiMatrixRequest.from_strings(**query)
    assert named in caught.value.message and caught.value.hint


def test_a_range_with_no_release_is_torch_not_found(matrix: InMemoryMatrix) -> None:
    with pytest.raises(TorchNotFoundError):
        ci_matrix(CiMatrixRequest.from_strings(torch=">=9"), matrix)
