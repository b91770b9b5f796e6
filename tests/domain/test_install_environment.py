"""The pure parsers behind `accelenv doctor`'s environment facts: wheel tags, torch/version.py."""

from __future__ import annotations

import pytest

from compat_service.domain.install_environment import manylinux_floor, torch_build_constants, wheel_tags


@pytest.mark.parametrize(
    ("tags", "floor"),
    [
        pytest.param(("cp311-cp311-manylinux_2_28_x86_64",), "2.28", id="pep600"),
        pytest.param(("cp310-cp310-manylinux1_x86_64",), "2.5", id="manylinux1"),
        pytest.param(("cp38-cp38-manylinux2014_aarch64",), "2.17", id="manylinux2014"),
        pytest.param(("cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64",), "2.17", id="compressed"),
        pytest.param(("cp311-cp311-manylinux_2_28_x86_64", "cp311-cp311-manylinux_2_17_x86_64"), "2.17",
                     id="lowest-of-several"),
        pytest.param(("cp311-none-macosx_11_0_arm64",), None, id="macos"),
        pytest.param(("cp311-cp311-win_amd64",), None, id="windows"),
        pytest.param((), None, id="no-tags"),
    ],
)
def test_manylinux_floor(tags: tuple[str, ...], floor: str | None) -> None:
    assert manylinux_floor(tags) == floor


def test_wheel_tags_reads_every_tag_line() -> None:
    text = "Wheel-Version: 1.0\nGenerator: setuptools (81.0.0)\nRoot-Is-Purelib: false\nTag: a-b-c\nTag: d-e-f\n"
    assert wheel_tags(text) == ("a-b-c", "d-e-f")
    assert wheel_tags(None) == ()


def test_torch_build_constants_without_importing_torch() -> None:
    text = ("from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda']\n"
            "__version__ = '2.13.0+cu126'\ndebug = False\ncuda: Optional[str] = '12.6'\n"
            "git_version = 'cf30153'\nhip: Optional[str] = None\nrocm: Optional[str] = None\n")
    assert torch_build_constants(text) == {"debug": False, "cuda": "12.6", "hip": None, "rocm": None}
    assert torch_build_constants("cuda = (") == {} and torch_build_constants(None) == {}
