"""The generated layer (matrix_data/index/, read from the package index) merged into the matrix.

Tests over the committed generated data: every torch wheel on the default index is resolvable for its
platform and Python; torch-npu resolves per architecture; triton follows its markers; and the layers'
conflicts are validation problems unless a curated override gives a reason and a source.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.version import Version

from compat_service.domain.errors import AccelenvError
from compat_service.domain.matrix.index.index_layer import final_releases, load_layer
from compat_service.domain.matrix.interface import InMemoryMatrix
from compat_service.domain.matrix.loading.loader import load_matrix_data, load_matrix_rows, matrix_data_problems
from compat_service.domain.resolver.request import ResolveRequest
from compat_service.domain.resolver.resolution import Resolution
from compat_service.domain.resolver.stages import resolve
from matrix_data import DATA_DIR
from tests.domain.test_matrix_validation import copy_matrix

LAYER, LAYER_PROBLEMS = load_layer(DATA_DIR)
OS_ARCH = {
    "linux-x86_64": ("linux", "x86_64"),
    "linux-aarch64": ("linux", "aarch64"),
    "windows-x86_64": ("windows", "x86_64"),
    "macos-arm64": ("macos", "arm64"),
    "macos-x86_64": ("macos", "x86_64"),
}


@pytest.fixture(scope="module")
def matrix() -> InMemoryMatrix:
    return InMemoryMatrix(load_matrix_rows())


def _resolve(matrix: InMemoryMatrix, **kwargs: Any) -> Resolution:
    return resolve(ResolveRequest.from_strings(with_="none", **kwargs), matrix)


def _torch_wheels() -> list[tuple[str, str, str, str]]:
    """(version, platform, python, default label) of every torch wheel on the default index, 1.13.0 -> 2.15.0."""
    out = set()
    for release in final_releases(LAYER["torch"]):
        if not Version("1.13.0") <= Version(release.version) <= Version("2.15.0"):
            continue
        labels = {r.platform: r.label for r in release.runtimes}
        for wheel in release.wheels:
            out.add((release.version, wheel.platform, wheel.python, labels.get(wheel.platform) or "cpu"))
    return sorted(out)


def test_the_generated_layer_loads_without_problems() -> None:
    assert LAYER_PROBLEMS == []
    assert set(LAYER) == {"torch", "torchvision", "torchaudio", "triton", "torch-npu"}
    assert all(facts.index == "pip-default" for facts in LAYER.values())


def test_latest_is_the_newest_release_on_the_index(matrix: InMemoryMatrix) -> None:
    newest = max(Version(r.version) for r in final_releases(LAYER["torch"]))
    assert str(newest) == "2.15.0"
    res = _resolve(matrix, torch="latest", os="linux", arch="x86_64", python="3.12", backend="cuda")
    assert res.torch_version == "2.15.0" and res.backend == "cu132" and res.default_index_has_variant
    floor = next(h for h in res.requirements if h.name == "nvidia-driver")
    # CUDA 13.x runs on R580+ by minor-version compatibility when the GPU has SASS in the build; the default
    # wheel pins cuda-toolkit==13.2.2, whose own floor (Table 3, 13.2 Update 2) is what PTX JIT needs
    assert floor.version == "580" and "595.71.05" in floor.detail


def test_every_torch_wheel_on_the_default_index_is_resolvable(matrix: InMemoryMatrix) -> None:
    wheels = _torch_wheels()
    assert len(wheels) > 600  # (release, platform, Python) triples
    failures = []
    known_bad = set()
    for version, platform, python, label in wheels:
        os, arch = OS_ARCH[platform]
        try:
            res = _resolve(matrix, torch=version, os=os, arch=arch, python=python, backend=label)
        except AccelenvError as err:
            # a build a "never" rule of known_bad.yaml names is refused on purpose, naming the rule
            if err.code == "known-bad" and any(c.origin.startswith("matrix: known_bad.yaml ") for c in err.causes):
                known_bad.add((version, label))
                continue
            failures.append(f"{version} {platform} {python} {label}: {err.code}: {err.message}")
            continue
        if res.torch_version != version or res.backend != label or not res.default_index_has_variant:
            failures.append(f"{version} {platform} {python} {label}: got {res.torch_version} {res.backend}")
    assert failures == []
    # the rules refuse a few builds, never a whole platform's worth of wheels
    assert len(known_bad) <= 5, sorted(known_bad)


def _npu_expectations() -> list[tuple[str, str, str, str, str]]:
    """(torch, platform, python, newest final torch-npu with a wheel there, its torch pin) per torch-npu release."""
    torch_wheels = {(r.version, w.platform, w.python) for r in final_releases(LAYER["torch"]) for w in r.wheels}
    best: dict[tuple[str, str, str], tuple[Version, str]] = {}
    for release in final_releases(LAYER["torch-npu"]):
        pins = {r.platform: r.specifier for r in release.requirements if r.name == "torch"}
        for wheel in release.wheels:
            pin = pins.get(wheel.platform)
            if pin is None:
                continue
            torch = str(Version(pin.removeprefix("==").removesuffix(".*")).public)
            if (torch, wheel.platform, wheel.python) not in torch_wheels:
                continue  # no torch wheel for that Python: nothing to install the plugin on
            key = (torch, wheel.platform, wheel.python)
            candidate = (Version(release.version), pin)
            if key not in best or candidate > best[key]:
                best[key] = candidate
    return [(t, p, py, str(v), pin) for (t, p, py), (v, pin) in sorted(best.items())]


def test_torch_npu_resolves_per_architecture_for_every_release(matrix: InMemoryMatrix) -> None:
    cases = _npu_expectations()
    assert {p for _t, p, *_ in cases} == {"linux-x86_64", "linux-aarch64"}
    covered = {v for *_x, v, _pin in cases}
    every = {r.version for r in final_releases(LAYER["torch-npu"])
             if any(q.name == "torch" for q in r.requirements)}
    failures, unknown = [], set()
    for torch, platform, python, npu, pin in cases:
        os, arch = OS_ARCH[platform]
        try:
            res = _resolve(matrix, torch=torch, os=os, arch=arch, python=python, backend="npu")
        except AccelenvError as err:
            if "does not know whether" in err.message:
                unknown.add((torch, platform))  # no source lists a CPU torch there: unknown, said so
            else:
                failures.append(f"torch {torch} {platform} {python}: {err.code}: {err.message}")
            continue
        want_torch = pin.removeprefix("==").removesuffix(".*") if "+" in pin else torch
        got = (res.pins.get("torch-npu"), res.pins.get("torch"))
        if got != (npu, want_torch):
            failures.append(f"torch {torch} {platform} {python}: want {(npu, want_torch)}, got {got}")
    assert failures == []
    # every CPU torch a torch-npu release pins is known (2.14.0+cpu on x86_64 from its curated pinned row)
    assert unknown == set()
    assert covered <= every


@pytest.mark.parametrize(
    ("torch", "arch", "python", "backend", "expected"),
    [
        ("2.2.2", "x86_64", "3.11", "cu121", "pulls in triton==2.2.0"),
        ("2.2.2", "x86_64", "3.12", "cu121", "no triton"),  # python_version < "3.12"
        ("2.4.1", "x86_64", "3.12", "cu121", "pulls in triton==3.0.0"),
        ("2.4.1", "aarch64", "3.12", "cpu", "no triton"),  # platform_machine == "x86_64"
        ("2.15.0", "aarch64", "3.15", "cu132", "pulls in triton~=3.9.0"),
    ],
    ids=["2.2-py311", "2.2-py312-none", "2.4-x86", "2.4-aarch64-none", "2.15-aarch64"],
)
def test_triton_follows_the_full_marker(matrix: InMemoryMatrix, torch: str, arch: str, python: str, backend: str,
                                        expected: str) -> None:
    res = _resolve(matrix, torch=torch, os="linux", arch=arch, python=python, backend=backend)
    assert res.default_index_has_variant  # the requirement read is the default wheel's
    triton = [r.detail for r in res.reasons if r.decision == "triton"]
    assert len(triton) == 1 and expected in triton[0], triton


def test_unknown_builds_are_reported_as_unknown(matrix: InMemoryMatrix) -> None:
    with pytest.raises(AccelenvError) as caught:
        _resolve(matrix, torch="2.15", os="linux", arch="x86_64", python="3.12", backend="rocm")
    assert "does not know whether" in caught.value.message
    assert "publishes no" not in caught.value.message


def _edit(path: Path, name: str, old: str, new: str) -> None:
    file = path / name
    text = file.read_text(encoding="utf-8")
    assert old in text
    file.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_a_curated_value_that_contradicts_the_index_is_a_conflict(tmp_path: Path) -> None:
    path = copy_matrix(tmp_path)
    _edit(path, "torch_releases.yaml", "release_date: 2024-03-27", "release_date: 2024-03-28")
    problems = [str(p) for p in matrix_data_problems(path)]
    assert len(problems) == 1
    assert "release_date: conflicts with the package index: 2024-03-28, first upload 2024-03-27" in problems[0]
    assert problems[0].startswith("torch_releases.yaml: minors[")


def test_an_override_with_reason_and_source_keeps_the_curated_value(tmp_path: Path) -> None:
    path = copy_matrix(tmp_path)
    _edit(path, "torch_releases.yaml", "release_date: 2024-03-27",
          "release_date: 2024-03-28\n        index_overrides: [{field: release_date, reason: 'announced that day', "
          "source: [kr_version_compat]}]")
    assert matrix_data_problems(path) == []
    data = load_matrix_data(path)
    patch = next(p for m in data.torch_releases.minors for p in m.patches if p.version == "2.2.2")
    assert str(patch.release_date) == "2024-03-28"
    assert patch.index_overrides[0].reason == "announced that day"


def test_without_the_generated_layer_the_curated_matrix_stands_alone(tmp_path: Path) -> None:
    path = copy_matrix(tmp_path)
    for file in (path / "index").glob("t*.yaml"):
        file.unlink()
    data = load_matrix_data(path)
    minor = next(m for m in data.torch_releases.minors if m.minor == "2.15")
    assert minor.status == "partial"


def test_a_broken_generated_file_is_a_validation_problem(tmp_path: Path) -> None:
    path = copy_matrix(tmp_path)
    raw = yaml.safe_load((path / "index" / "triton.yaml").read_text())
    raw["releases"][0]["wheels"][0]["platform"] = "linux-sparc"
    (path / "index" / "triton.yaml").write_text(yaml.safe_dump(raw))
    problems = [str(p) for p in matrix_data_problems(path)]
    assert problems and all(p.startswith("index/triton.yaml: releases[0].wheels[0].platform") for p in problems)


def _labels(minor: Any, version: str, platform: str) -> set[str]:
    return {v.label for v in minor.variants if platform in v.platforms and (v.patches is None or version in v.patches)}


def test_a_curated_row_limited_to_one_patch_keeps_the_index_builds_of_the_other_patches(
    matrix: InMemoryMatrix,
) -> None:
    # Curated: the Linux x86_64 CPU build and the Windows cu130 build of 2.14 are pinned for 2.14.0 only. The
    # index serves the CPU build as the default wheel of Windows and macOS, and cu130 on Linux x86_64, for
    # 2.14.0 and 2.14.1: merging those must not limit them to 2.14.0 (2.14.1 lost every Windows/macOS build).
    minor = next(m for m in load_matrix_data().torch_releases.minors if m.minor == "2.14")
    for platform in ("windows-x86_64", "macos-arm64"):
        assert "cpu" in _labels(minor, "2.14.0", platform), platform
        assert "cpu" in _labels(minor, "2.14.1", platform), platform
    assert "cu130" in _labels(minor, "2.14.1", "linux-x86_64")
    # the curated limits stand where they were stated
    assert "cpu" in _labels(minor, "2.14.0", "linux-x86_64")
    assert "cpu" not in _labels(minor, "2.14.1", "linux-x86_64")
    assert "cu130" in _labels(minor, "2.14.0", "windows-x86_64")
    assert "cu130" not in _labels(minor, "2.14.1", "windows-x86_64")
    answer = _resolve(matrix, torch="2.14", os="windows", arch="x86_64", backend="cpu")
    assert (answer.torch_version, answer.backend) == ("2.14.1", "cpu")
    answer = _resolve(matrix, torch="2.14", os="linux", arch="x86_64", backend="cpu")
    assert (answer.torch_version, answer.backend) == ("2.14.0", "cpu")


def test_one_label_on_one_platform_twice_is_a_duplicate(tmp_path: Path) -> None:
    path = copy_matrix(tmp_path)
    _edit(path, "torch_releases.yaml",
          "      - {label: cu130, platforms: [windows-x86_64], patches: [\"2.14.0\"]",
          "      - {label: cu130, platforms: [windows-x86_64, linux-x86_64], patches: [\"2.14.0\"]")
    problems = [str(p) for p in matrix_data_problems(path)]
    assert len(problems) == 1
    assert "duplicate variant 'cu130' on linux-x86_64 in minor 2.14" in problems[0]
