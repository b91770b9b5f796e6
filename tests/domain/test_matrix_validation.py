"""Corrupt copies of matrix_data: each break is reported with file and key, and all of them at once.

`break_matrix` is shared with tests/cli/test_matrix_cmd.py, which checks the same breaks through the CLI.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from compat_service.domain.errors import MatrixDataError
from compat_service.domain.matrix.loading.loader import load_matrix_data, matrix_data_problems
from matrix_data import DATA_DIR

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _read(file: Path) -> Any:
    return yaml.load(file.read_text(encoding="utf-8"), Loader=_Loader)


def copy_matrix(tmp_path: Path) -> Path:
    target = tmp_path / "matrix_data"
    shutil.copytree(DATA_DIR, target, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    return target


def _edit(path: Path, name: str, change: Callable[[dict[str, Any]], None]) -> None:
    file = path / name
    raw = _read(file)
    change(raw)
    file.write_text(yaml.dump(raw, Dumper=_Dumper, sort_keys=False, allow_unicode=True), encoding="utf-8")


def _minor_index(path: Path, minor: str) -> int:
    raw = _read(path / "torch_releases.yaml")
    return [m["minor"] for m in raw["minors"]].index(minor)


def _variant_index(path: Path, label: str) -> int:
    raw = _read(path / "build_variants.yaml")
    return [v["label"] for v in raw["variants"]].index(label)


# Each break edits one copy and returns the exact problem lines it must cause.


def unknown_key(path: Path) -> list[str]:
    _edit(path, "cuda.yaml", lambda raw: raw["toolkits"][0].update(min_driver_macos="1.0"))
    return [
        "cuda.yaml: toolkits[0].min_driver_macos: unknown key (not in the schema: check its "
        "spelling or extend matrix/schema.py)"
    ]


def bad_version(path: Path) -> list[str]:
    i = _minor_index(path, "2.3")
    _edit(
        path,
        "torch_releases.yaml",
        lambda raw: raw["minors"][i]["patches"][1]["torchvision"].update(version="0.x"),
    )
    return [
        f"torch_releases.yaml: minors[{i}].patches[1].torchvision.version: '0.x' is not a "
        "valid version string"
    ]


def inverted_python_list(path: Path) -> list[str]:
    i = _minor_index(path, "2.4")
    _edit(path, "torch_releases.yaml", lambda raw: raw["minors"][i]["python"][0]["versions"].reverse())
    wanted = "['3.8', '3.9', '3.10', '3.11', '3.12']"
    given = "['3.12', '3.11', '3.10', '3.9', '3.8']"
    return [
        f"torch_releases.yaml: minors[{i}].python[0].versions: {given} is not in ascending "
        f"order; write {wanted}"
    ]


def duplicate_patch(path: Path) -> list[str]:
    i = _minor_index(path, "2.1")

    def change(raw: dict[str, Any]) -> None:
        patches = raw["minors"][i]["patches"]
        patches.append(dict(patches[2]))

    _edit(path, "torch_releases.yaml", change)
    return [
        f"torch_releases.yaml: minors[{i}].patches[3].version: duplicate patch '2.1.2' (first "
        f"at minors[{i}].patches[2])"
    ]


def dangling_source(path: Path) -> list[str]:
    i = _minor_index(path, "2.6")
    _edit(path, "torch_releases.yaml", lambda raw: raw["minors"][i]["variants"][0].update(source=["nowhere"]))
    return [
        f"torch_releases.yaml: minors[{i}].variants[0].source[0]: source key 'nowhere' is not "
        "defined in sources.yaml"
    ]


def cuda_variant_without_driver_row(path: Path) -> list[str]:
    def change(raw: dict[str, Any]) -> None:
        raw["toolkits"] = [t for t in raw["toolkits"] if not t["version"].startswith("12.9.")]

    _edit(path, "cuda.yaml", change)
    k = _variant_index(path, "cu129")
    return [
        f"build_variants.yaml: variants[{k}]: CUDA variant 'cu129' has no driver row: "
        "cuda.yaml lists no toolkit 12.9.1"
    ]


def dangling_variant_label(path: Path) -> list[str]:
    i = _minor_index(path, "2.7")
    _edit(path, "torch_releases.yaml", lambda raw: raw["minors"][i]["variants"][1].update(label="cu999"))
    return [
        f"torch_releases.yaml: minors[{i}].variants[1].label: variant label 'cu999' is not "
        "defined in build_variants.yaml"
    ]


def missing_companions(path: Path) -> list[str]:
    i = _minor_index(path, "2.0")

    def change(raw: dict[str, Any]) -> None:
        del raw["minors"][i]["patches"][1]["torchvision"]
        del raw["minors"][i]["patches"][1]["torchaudio"]

    _edit(path, "torch_releases.yaml", change)
    tail = (
        "torch release without companions: required key is missing "
        "(write {version: null, source: [], note: why} if it is genuinely unknown)"
    )
    return [
        f"torch_releases.yaml: minors[{i}].patches[1].torchvision: {tail}",
        f"torch_releases.yaml: minors[{i}].patches[1].torchaudio: {tail}",
    ]


def yaml_syntax_error(path: Path) -> list[str]:
    file = path / "rocm.yaml"
    lines = file.read_text(encoding="utf-8").splitlines()
    file.write_text("\n".join(lines) + '\n  - {version: "9.9", gfx_targets: [gfx90a\n', encoding="utf-8")
    broken = len(lines) + 1
    return [
        f"rocm.yaml: line {broken + 1}, column 1: YAML syntax error: while parsing a flow "
        "sequence did not find "
        f"expected ',' or ']' (the enclosing block starts on line {broken})"
    ]


def duplicate_yaml_key(path: Path) -> list[str]:
    file = path / "xpu.yaml"
    lines = file.read_text(encoding="utf-8").splitlines()
    at = next(n for n, line in enumerate(lines) if line.startswith("  - torch:"))
    lines.insert(at + 1, '    torch: ">=9.9"')
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [
        f"xpu.yaml: line {at + 2}, column 5: YAML error: key 'torch' appears twice in one "
        f"mapping (first on line {at + 1})"
    ]


def missing_file(path: Path) -> list[str]:
    (path / "mps.yaml").unlink()
    return ["mps.yaml: file is missing; every file in MATRIX_FILES must exist"]


def known_bad_rule_without_its_source(path: Path) -> list[str]:
    _edit(path, "known_bad.yaml", lambda raw: raw["rules"][0].update(source=["a_thread_nobody_cited"]))
    return ["known_bad.yaml: rules[0].source[0]: source key 'a_thread_nobody_cited' is not defined in sources.yaml"]


BREAKS: dict[str, Callable[[Path], list[str]]] = {
    "unknown-key": unknown_key,
    "bad-version": bad_version,
    "inverted-python-list": inverted_python_list,
    "duplicate-patch": duplicate_patch,
    "dangling-source": dangling_source,
    "cuda-variant-without-driver-row": cuda_variant_without_driver_row,
    "dangling-variant-label": dangling_variant_label,
    "missing-companions": missing_companions,
    "yaml-syntax-error": yaml_syntax_error,
    "duplicate-yaml-key": duplicate_yaml_key,
    "missing-file": missing_file,
    "known-bad-rule-without-its-source": known_bad_rule_without_its_source,
}


def break_matrix(tmp_path: Path) -> tuple[Path, list[str]]:
    """A copy of matrix_data with every break applied, and the problem lines they must cause."""
    path = copy_matrix(tmp_path)
    expected: list[str] = []
    for apply in BREAKS.values():
        expected += apply(path)
    return path, expected


def test_an_untouched_copy_is_valid(tmp_path: Path) -> None:
    assert matrix_data_problems(copy_matrix(tmp_path)) == []


@pytest.mark.parametrize("name", list(BREAKS))
def test_each_break_gives_exactly_its_problem(tmp_path: Path, name: str) -> None:
    path = copy_matrix(tmp_path)
    expected = BREAKS[name](path)
    assert sorted(str(p) for p in matrix_data_problems(path)) == sorted(expected)


def test_every_break_is_reported_at_once(tmp_path: Path) -> None:
    path, expected = break_matrix(tmp_path)
    assert sorted(str(p) for p in matrix_data_problems(path)) == sorted(expected)


def test_load_raises_one_error_listing_every_problem(tmp_path: Path) -> None:
    path, expected = break_matrix(tmp_path)
    with pytest.raises(MatrixDataError) as info:
        load_matrix_data(path)
    err = info.value
    assert err.exit_code == 4 and err.code == "matrix-invalid"
    assert sorted(c.constraint for c in err.causes) == sorted(expected)
    assert f"{len(expected)} problem(s)" in err.message


@pytest.mark.parametrize(
    ("file", "change", "expected"),
    [
        pytest.param(
            "build_variants.yaml",
            lambda raw: raw["variants"].append(dict(raw["variants"][1])),
            "build_variants.yaml: variants[{n}].label: duplicate variant label 'cu116' (first "
            "at variants[1])",
            id="duplicate-variant-label",
        ),
        pytest.param(
            "sources.yaml",
            lambda raw: raw["sources"].append(dict(raw["sources"][0])),
            "sources.yaml: sources[{n}].key: duplicate source key 'previous_versions' (first at sources[0])",
            id="duplicate-source-key",
        ),
        pytest.param(
            "cuda.yaml",
            lambda raw: raw["toolkits"].append(dict(raw["toolkits"][0])),
            "cuda.yaml: toolkits[{n}].version: duplicate toolkit '10.0.130' (first at toolkits[0])",
            id="duplicate-toolkit",
        ),
        pytest.param(
            "gpu_archs.yaml",
            lambda raw: raw["arch_lists"].append(dict(raw["arch_lists"][0], variant="cpu")),
            "gpu_archs.yaml: arch_lists[{n}].variant: 'cpu' is a cpu build: no GPU arch list applies",
            id="arch-list-for-cpu",
        ),
        pytest.param(
            "gpu_archs.yaml",
            lambda raw: raw["arch_lists"].append(dict(raw["arch_lists"][0], variant="cu999")),
            "gpu_archs.yaml: arch_lists[{n}].variant: variant label 'cu999' is not defined in "
            "build_variants.yaml",
            id="arch-list-unknown-variant",
        ),
    ],
)
def test_duplicates_and_dangling_references(tmp_path: Path, file: str, change: Any, expected: str) -> None:
    path = copy_matrix(tmp_path)
    _edit(path, file, change)
    raw = _read(path / file)
    n = len(next(v for v in raw.values() if isinstance(v, list))) - 1
    assert [str(p) for p in matrix_data_problems(path)] == [expected.format(n=n)]


def test_overlapping_arch_lists_are_reported(tmp_path: Path) -> None:
    path = copy_matrix(tmp_path)
    _edit(
        path,
        "gpu_archs.yaml",
        lambda raw: raw["arch_lists"].append(dict(raw["arch_lists"][0], torch=">=1.13.1")),
    )
    problems = [str(p) for p in matrix_data_problems(path)]
    assert problems and all(
        "overlaps arch_lists[0] for torch 1.13.1 cu116 on linux-x86_64" in p for p in problems
    )


def test_a_path_that_is_not_a_directory(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    assert [str(p) for p in matrix_data_problems(missing)] == [
        f"{missing}: is not a directory holding the matrix_data YAML files"
    ]


# Single-field checks live in the schema's annotated types (VersionStr, DriverVersion, TorchSpecifier):
# each still names its file and key.
@pytest.mark.parametrize(
    ("file", "change", "expected"),
    [
        pytest.param("cuda.yaml", lambda raw: raw["toolkits"][0].update(min_driver_linux="r535"),
                     "cuda.yaml: toolkits[0].min_driver_linux: 'r535' is not a valid driver version",
                     id="driver-version"),
        pytest.param("xpu.yaml", lambda raw: raw["support"][0].update(torch="2.x"),
                     "xpu.yaml: support[0].torch: '2.x' is not a version specifier like '>=2.5'",
                     id="torch-specifier"),
        pytest.param("vendor_backends.yaml", lambda raw: raw["ascend_npu"][0].update(torch_npu="two"),
                     "vendor_backends.yaml: ascend_npu[0].torch_npu: 'two' is not a valid version string",
                     id="plugin-version"),
        pytest.param("rocm.yaml", lambda raw: raw["releases"][0].update(version="6.x"),
                     "rocm.yaml: releases[0].version: '6.x' is not a valid version string",
                     id="rocm-version"),
    ],
)
def test_single_field_checks_name_file_and_key(tmp_path: Path, file: str, change: Any, expected: str) -> None:
    path = copy_matrix(tmp_path)
    _edit(path, file, change)
    assert expected in [str(p) for p in matrix_data_problems(path)]


@pytest.mark.parametrize(
    ("file", "change", "expected"),
    [
        pytest.param(
            "cuda.yaml",
            lambda raw: raw["toolkit_archs"].append(dict(raw["toolkit_archs"][-1], cuda=">=12.9")),
            "cuda.yaml: toolkit_archs[{n}]: CUDA 12.9.0 (toolkits[46]) falls in toolkit_archs[6] and [{n}]",
            id="overlapping-toolkit-ranges",
        ),
        pytest.param(
            "cuda.yaml",
            lambda raw: raw["gpu_names"].append(dict(raw["gpu_names"][0], name="rtx  5090")),
            "cuda.yaml: gpu_names[{n}].name: GPU name 'rtx  5090' is listed twice (first at cuda.yaml gpu_names[0])",
            id="duplicate-gpu-name",
        ),
        pytest.param(
            "rocm.yaml",
            lambda raw: raw["gpu_names"].append(dict(raw["gpu_names"][0], name="Radeon Test", arch="sm_90")),
            "rocm.yaml: gpu_names[{n}].arch: 'sm_90' is not a gfx* architecture, as rocm.yaml needs",
            id="nvidia-arch-in-rocm-names",
        ),
        pytest.param(
            "xpu.yaml",
            lambda raw: raw["gpu_names"].append(dict(raw["gpu_names"][0], name="Arc Test", arch="gfx1100")),
            "xpu.yaml: gpu_names[{n}].arch: 'gfx1100' is not an Intel device family, as xpu.yaml needs",
            id="amd-arch-in-intel-names",
        ),
        pytest.param(
            "xpu.yaml",
            lambda raw: raw["gpu_names"].append(dict(raw["gpu_names"][0], name="A100", arch="pvc")),
            "xpu.yaml: gpu_names[{n}].name: GPU name 'A100' is listed twice (first at cuda.yaml gpu_names[",
            id="intel-name-taken-by-nvidia",
        ),
        pytest.param(
            "rocm.yaml",
            lambda raw: raw["kernel_user_space"].append(dict(raw["kernel_user_space"][0])),
            "rocm.yaml: kernel_user_space[{n}].kmd: KMD 5.3 is listed twice (first at [0])",
            id="kernel-driver-listed-twice",
        ),
    ],
)
def test_toolkit_ranges_and_gpu_names(tmp_path: Path, file: str, change: Any, expected: str) -> None:
    path = copy_matrix(tmp_path)
    _edit(path, file, change)
    raw = _read(path / file)
    key = next(k for k in ("toolkit_archs", "kernel_user_space", "gpu_names") if k in expected)
    n = len(raw[key]) - 1
    problems = [str(p) for p in matrix_data_problems(path)]
    assert any(p.startswith(expected.format(n=n)) for p in problems), problems


def _rule(**fields: Any) -> Callable[[dict[str, Any]], None]:
    def change(raw: dict[str, Any]) -> None:
        base = {
            "id": "a-rule",
            "torch": "==2.5.0",
            "severity": "caveat",
            "effect": "it breaks",
            "source": ["release_md"],
        }
        raw["rules"].append(base | fields)

    return change


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param(
            _rule(torch="2.5.x"),
            "rules[{n}].torch: '2.5.x' is not a version specifier like '>=2.5'",
            id="torch-range-does-not-parse",
        ),
        pytest.param(
            _rule(torch=">=2.5,<2.4"),
            "rules[{n}].torch: '>=2.5,<2.4' holds no torch version (an empty range)",
            id="empty-torch-range",
        ),
        pytest.param(_rule(severity="sometimes"), "rules[{n}].severity: ", id="unknown-severity"),
        pytest.param(
            _rule(macos="fourteen"),
            "rules[{n}].macos: 'fourteen' is not a version specifier",
            id="macos-range-does-not-parse",
        ),
        pytest.param(_rule(gpu_archs=["hopper"]), "rules[{n}].gpu_archs[0]: ", id="gpu-arch-name"),
        pytest.param(
            _rule(variants=["cu999"]),
            "rules[{n}].variants[0]: build label 'cu999' is not in build_variants.yaml",
            id="unknown-build-label",
        ),
        pytest.param(
            _rule(families=["rocm"], variants=["cu124"]),
            "rules[{n}].variants[0]: cu124 is a cuda build, not one of the rule's families ['rocm']",
            id="label-outside-its-families",
        ),
        pytest.param(
            _rule(id="conv3d-bf16-memory-2.9"),
            "rules[{n}].id: duplicate rule id 'conv3d-bf16-memory-2.9'",
            id="duplicate-id",
        ),
        pytest.param(_rule(source=[]), "rules[{n}].source: ", id="no-source"),
        pytest.param(_rule(reason="because"), "rules[{n}].reason: unknown key", id="unknown-key"),
    ],
)
def test_known_bad_rules_are_checked(tmp_path: Path, change: Any, expected: str) -> None:
    """`accelenv matrix validate` reads known_bad.yaml: every rule parses, has a source in sources.yaml and a
    range that holds a release; a bad rule is one problem naming the file and the rule's key."""
    path = copy_matrix(tmp_path)
    _edit(path, "known_bad.yaml", change)
    n = len(_read(path / "known_bad.yaml")["rules"]) - 1
    problems = [str(p) for p in matrix_data_problems(path)]
    assert len(problems) == 1 and problems[0].startswith("known_bad.yaml: " + expected.format(n=n)), problems


def _wheel_for(jetpack: str) -> Callable[[dict[str, Any]], None]:
    def change(raw: dict[str, Any]) -> None:
        raw["wheels"][0]["jetpack"] = [jetpack]

    return change


def _release_again(raw: dict[str, Any]) -> None:
    raw["releases"].append(dict(raw["releases"][0]))


def _arch_named(raw: dict[str, Any]) -> None:
    raw["releases"][0]["archs"] = ["orin"]


def _sbsa_orin(raw: dict[str, Any]) -> None:
    raw["sbsa_modules"][0]["arch"] = "sm_87"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param(_wheel_for("9.9"), "wheels[0].jetpack[0]: JetPack 9.9 is not in releases", id="unknown-jetpack"),
        pytest.param(_release_again, "releases[{n}].jetpack: duplicate JetPack", id="duplicate-jetpack"),
        pytest.param(_arch_named, "releases[0].archs[0]: 'orin' is not a CUDA architecture", id="arch-not-sm"),
        pytest.param(_sbsa_orin, "sbsa_modules[0].arch: sm_87 is also a JetPack release's arch", id="sbsa-and-jetpack"),
    ],
)
def test_jetson_tables_are_checked(tmp_path: Path, change: Any, expected: str) -> None:
    """jetson.yaml: each JetPack once, archs as sm_XY, and every wheel names a JetPack the releases list."""
    path = copy_matrix(tmp_path)
    _edit(path, "jetson.yaml", change)
    n = len(_read(path / "jetson.yaml")["releases"]) - 1
    problems = [str(p) for p in matrix_data_problems(path)]
    assert len(problems) == 1 and problems[0].startswith("jetson.yaml: " + expected.format(n=n)), problems


def _floor_label(label: str) -> Any:
    def change(raw: dict[str, Any]) -> None:
        raw["capability_floors"][0]["variants"] = [label]

    return change


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param(_floor_label("cu999"), "capability_floors[0].variants[0]: build label 'cu999' is not in",
                     id="unknown-label"),
        pytest.param(_floor_label("rocm6.2"), "capability_floors[0].variants[0]: rocm6.2 is a rocm build",
                     id="not-a-cuda-build"),
    ],
)
def test_capability_floor_labels_are_checked(tmp_path: Path, change: Any, expected: str) -> None:
    """host_rules.yaml: a capability floor narrowed to build labels names CUDA builds that exist."""
    path = copy_matrix(tmp_path)
    _edit(path, "host_rules.yaml", change)
    problems = [str(p) for p in matrix_data_problems(path)]
    assert len(problems) == 1 and problems[0].startswith("host_rules.yaml: " + expected), problems

