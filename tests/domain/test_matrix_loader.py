"""The loader: fast parser, key paths, the error it raises, and the resolver's view of what it loads."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from compat_service.domain.errors import MatrixDataError
from compat_service.domain.matrix.interface import InMemoryMatrix
from compat_service.domain.matrix.loading import loader as matrix_loader
from compat_service.domain.matrix.loading.loader import load_matrix_data, load_matrix_rows
from compat_service.domain.matrix.problems import Problem, format_loc


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML was built without libyaml")
def test_parses_with_libyaml_when_available() -> None:
    assert issubclass(matrix_loader._StrictLoader, yaml.CSafeLoader)


@pytest.mark.parametrize(
    ("loc", "text"),
    [
        (("minors", 3, "patches", 1, "torchvision", "version"), "minors[3].patches[1].torchvision.version"),
        (("schema",), "schema"),
        ((), ""),
    ],
    ids=["nested", "top-level", "empty"],
)
def test_format_loc(loc: tuple[str | int, ...], text: str) -> None:
    assert format_loc(loc) == text


def test_problem_becomes_a_cause_naming_file_and_key() -> None:
    problem = Problem(
        "torch_releases.yaml", "minors[3].patches[1].version", "'2.x' is not a valid version string"
    )
    cause = problem.to_cause()
    assert (
        cause.constraint
        == "torch_releases.yaml: minors[3].patches[1].version: '2.x' is not a valid version string"
    )
    assert cause.origin == "matrix_data/torch_releases.yaml"


def test_bundled_matrix_loads_into_the_resolver_interface() -> None:
    matrix = InMemoryMatrix(load_matrix_rows())
    minors = [m.minor for m in matrix.torch_minors()]
    assert minors[0] == "2.15" and minors[-1] == "1.13"
    variant, arch_list = matrix.build_variant("cu121"), matrix.arch_list("2.13.0", "cu130", "linux-x86_64")
    assert variant is not None and variant.index_url == "https://download.pytorch.org/whl/cu121"
    assert arch_list is not None and arch_list.ptx == "sm_120"


def test_load_matrix_data_fails_with_exit_code_4_on_a_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(MatrixDataError) as info:
        load_matrix_data(tmp_path / "absent")
    assert info.value.exit_code == 4
    assert info.value.hint and "accelenv matrix validate" in info.value.hint
