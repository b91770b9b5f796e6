"""The CI matrix (compat_service/domain/ci/job_matrix.py): every cell is a combination the resolver accepts, every
combination of the request's axes is either a cell or an exclusion the resolver also refuses, and mode=pr
keeps the documented extremes."""

from __future__ import annotations

from typing import Any

import pytest
from packaging.version import Version

from compat_service.domain.backends import python_sort_key
from compat_service.domain.ci.github_limits import (
    GITHUB_MAX_JOBS,
    GITHUB_MAX_OUTPUT_BYTES,
    include_json,
    output_size,
)
from compat_service.domain.ci.install_plan import checked_install_argv
from compat_service.domain.ci.job_matrix import CiMatrixRequest, check_command, ci_matrix
from compat_service.domain.errors import (
    AccelenvError,
    InstallPlanRefusedError,
    InvalidRequestError,
    MatrixTooLargeError,
    TorchNotFoundError,
)
from compat_service.domain.matrix.interface import InMemoryMatrix
from compat_service.domain.matrix.loading.loader import load_matrix_rows
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


def whole_matrix(query: dict[str, str], matrix: InMemoryMatrix) -> list[dict[str, Any]]:
    """Every cell of a matrix too large for one GitHub matrix: its shards, in order."""
    count = ci_matrix(CiMatrixRequest.from_strings(**query, shard="1/256"), matrix)["limits"]["shards_needed"]
    cells = []
    for index in range(1, count + 1):
        cells += ci_matrix(CiMatrixRequest.from_strings(**query, shard=f"{index}/{count}"), matrix)["include"]
    return cells


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
    full = whole_matrix(query, matrix)
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
        ({"shard": "3/2"}, "shard"),
        ({"shard": "one"}, "shard"),
        ({"max_cells": "0"}, "max_cells"),
        ({"max_cells": "257"}, "max_cells"),
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


# ------------------------------------------------------------------------------ GitHub's limits, shards


def test_a_600_cell_request_splits_into_shards_that_each_fit_githubs_limits(matrix: InMemoryMatrix) -> None:
    """Every family, torch >= 2.0, Linux x86_64 and aarch64: over 600 cells, over 256 jobs and 1 MB; its
    shards each fit both limits (measured as GitHub measures an output: the include JSON's UTF-16 bytes), and
    together they are the whole matrix, each cell once."""
    query = {"torch": ">=2.0", "family": "cpu,cuda,rocm,xpu", "arch": "x86_64,aarch64"}
    with pytest.raises(MatrixTooLargeError) as caught:
        ci_matrix(CiMatrixRequest.from_strings(**query), matrix)
    err = caught.value
    assert "256 jobs per matrix" in err.message and "job-output limit" in err.message
    assert "shard=1/" in (err.hint or "") and "mode=pr" in (err.hint or "")
    probe = ci_matrix(CiMatrixRequest.from_strings(**query, shard="1/256"), matrix)
    total, needed = probe["cells_total"], probe["limits"]["shards_needed"]
    assert total >= 600 and needed >= 3
    seen: list[str] = []
    for index in range(1, needed + 1):
        body = ci_matrix(CiMatrixRequest.from_strings(**query, shard=f"{index}/{needed}"), matrix)
        output = include_json(body["include"])
        assert len(body["include"]) <= GITHUB_MAX_JOBS
        assert output_size(output) == body["limits"]["output_bytes"] <= GITHUB_MAX_OUTPUT_BYTES
        assert body["cells_total"] == total and body["limits"]["shard"] == f"{index}/{needed}"
        seen += [c["name"] for c in body["include"]]
    assert len(seen) == len(set(seen)) == total
    # one shard fewer than needed does not fit, and says so
    with pytest.raises(MatrixTooLargeError):
        for index in range(1, needed):
            ci_matrix(CiMatrixRequest.from_strings(**query, shard=f"{index}/{needed - 1}"), matrix)


def test_max_cells_caps_each_shard(matrix: InMemoryMatrix) -> None:
    query = {"torch": ">=2.3", "family": "cpu", "max_cells": "10"}
    with pytest.raises(MatrixTooLargeError, match="max_cells 10"):
        ci_matrix(CiMatrixRequest.from_strings(**query), matrix)
    first = ci_matrix(CiMatrixRequest.from_strings(**query, shard="1/256"), matrix)
    needed = first["limits"]["shards_needed"]
    assert needed == -(-first["cells_total"] // 10)
    body = ci_matrix(CiMatrixRequest.from_strings(**query, shard=f"{needed}/{needed}"), matrix)
    assert 0 < len(body["include"]) <= 10


# ------------------------------------------------------------------------------ unknown is not "no"


def test_the_newest_releases_stay_in_a_cpu_matrix_or_are_listed_as_unknown(matrix: InMemoryMatrix) -> None:
    """`ci matrix --family cpu --torch '>=2.14'`: the builds no source lists for the newest patches are
    `unknown` with that reason, never `excluded` as unpublished; the newest patch known to publish the build
    stands in for them."""
    body = ci_matrix(CiMatrixRequest.from_strings(torch=">=2.14", family="cpu", with_="none"), matrix)
    assert body["include"], "the newest minors must not drop out of the matrix"
    assert {c["build"] for c in body["include"]} == {"cpu"}
    assert not [e for e in body["excluded"] if e["code"] in ("backend-unavailable", "variant-not-published")]
    unknown = {e["torch"]: e for e in body["unknown"]}
    newest_minor = max((m for m in matrix.torch_minors()), key=lambda m: Version(m.minor))
    newest = matrix.torch_patches(newest_minor)[0].version
    assert newest in unknown
    for entry in body["unknown"]:
        assert entry["status"] == "unknown" and entry["code"] == "variant-unknown"
        assert "does not know whether" in entry["reason"] and "no source lists" in entry["reason"]
    included = {c["torch"] for c in body["include"]}
    for version, entry in unknown.items():
        if "instead" in entry["reason"]:  # an older patch of the same minor stands in, and is in the matrix
            stand_in = entry["reason"].split("; torch ")[1].split(",")[0]
            assert stand_in in included and stand_in.rsplit(".", 1)[0] == version.rsplit(".", 1)[0]


def test_a_known_gap_stays_excluded(matrix: InMemoryMatrix) -> None:
    body = ci_matrix(CiMatrixRequest.from_strings(torch="2.3", family="xpu", os="macos", arch="arm64"), matrix)
    assert not body["unknown"]
    assert body["excluded"] and all(e["code"] != "variant-unknown" for e in body["excluded"])


# ------------------------------------------------------------------------------ install plans are data


def test_every_cell_carries_its_install_as_argument_lists(cuda_matrix: dict[str, Any]) -> None:
    for cell in cuda_matrix["include"][:20]:
        steps = checked_install_argv(cell)
        assert steps and all(step[:2] == ["pip", "install"] for step in steps)
        assert f"torch=={cell['torch']}" in steps[0]
        text = [line for line in cell["install"].splitlines() if line and not line.startswith("#")]
        assert [" ".join(s) for s in steps] == text


@pytest.mark.parametrize(
    "plan",
    [
        [["pip", "install", "torch==2.3.1; touch /tmp/owned"]],
        [["pip", "install", "torch==2.3.1$(touch /tmp/owned)"]],
        [["pip", "install", "`touch /tmp/owned`"]],
        [["sh", "-c", "touch /tmp/owned"]],
        [["pip", "install", "-r", "/etc/passwd"]],
        [["pip", "install", "--index-url", "$(touch /tmp/owned)", "torch"]],
        [["pip", "install", "torch", "--config-settings", "x=y"]],
        "pip install torch==2.3.1 && touch /tmp/owned",
        [],
    ],
    ids=["marker-injection", "command-substitution", "backquote", "other-program", "requirements-file",
         "index-not-a-url", "unknown-option", "a-command-line", "empty"],
)
def test_a_hostile_install_plan_is_refused_before_anything_runs(plan: Any) -> None:
    with pytest.raises(InstallPlanRefusedError) as caught:
        checked_install_argv({"install_argv": plan})
    assert caught.value.code == "install-plan-refused" and caught.value.hint


def test_cells_name_their_runner_from_the_data(matrix: InMemoryMatrix) -> None:
    body = ci_matrix(CiMatrixRequest.from_strings(torch="2.4", family="cpu,cuda", python="3.10",
                                                  arch="x86_64,aarch64", with_="none"), matrix)
    runs_on = {(c["platform"], c["family"]): c["runs_on"] for c in body["include"]}
    assert runs_on[("linux-x86_64", "cpu")] == "ubuntu-latest"
    assert runs_on[("linux-aarch64", "cpu")] == "ubuntu-24.04-arm"
    assert runs_on[("linux-x86_64", "cuda")] is None  # no hosted GPU runner: the project's own labels
    assert all(c["container"] is None for c in body["include"])
