"""The pure parts of refresh: wheel tags -> platform and Python, runtime -> build label, marker handling."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.tags import Tag

from compat_service.index.facts import BuildLabel, label_for, platforms_of, python_of, runtime_fact
from compat_service.index.generated import load_config
from compat_service.index.location import PIP_DEFAULT, pip_builtin_default, resolve_index
from matrix_data import DATA_DIR

CONFIG = load_config(DATA_DIR)
LABELS = [BuildLabel("cpu", "cpu", None), BuildLabel("cu130", "cuda", "13.0"), BuildLabel("cu132", "cuda", "13.2"),
          BuildLabel("cu117", "cuda", "11.7")]


@pytest.mark.parametrize(
    ("interpreter", "abi", "expected"),
    [
        ("cp312", "cp312", "3.12"),
        ("cp313", "cp313t", "3.13t"),
        ("cp37", "cp37m", "3.7"),
        ("cp310", "none", "3.10"),
        ("cp312", "abi3", "3.12+"),
        ("py3", "none", "any"),
        ("pp310", "pypy310_pp73", None),
        ("py2", "none", None),
    ],
    ids=lambda v: str(v),
)
def test_python_of_a_wheel_tag(interpreter: str, abi: str, expected: str | None) -> None:
    assert python_of(Tag(interpreter, abi, "linux_x86_64")) == expected


@pytest.mark.parametrize(
    ("platform_tag", "expected"),
    [
        ("manylinux_2_28_x86_64", ["linux-x86_64"]),
        ("manylinux2014_aarch64", ["linux-aarch64"]),
        ("win_amd64", ["windows-x86_64"]),
        ("macosx_14_0_arm64", ["macos-arm64"]),
        ("macosx_10_9_x86_64", ["macos-x86_64"]),
        ("macosx_10_9_universal2", ["macos-arm64", "macos-x86_64"]),
        ("win32", []),
        ("musllinux_1_2_x86_64", []),
    ],
    ids=lambda v: str(v),
)
def test_platform_of_a_wheel_tag(platform_tag: str, expected: list[str]) -> None:
    assert platforms_of(platform_tag, CONFIG) == expected


@pytest.mark.parametrize(
    ("requirement", "platform", "expected"),
    [
        ('cuda-toolkit[cublas,cudart]==13.2.2; platform_system == "Linux"', "linux-x86_64",
         ("cuda", "cu132", "13.2.2")),
        ('cuda-toolkit[cublas,cudart]==13.2.2; platform_system == "Linux"', "windows-x86_64",
         ("cpu", "cpu", None)),
        ('nvidia-cuda-runtime-cu11==11.7.99; platform_system == "Linux"', "linux-x86_64", ("cuda", "cu117", "11.7.99")),
        ('nvidia-cuda-runtime-cu12==12.1.105; platform_machine == "x86_64"', "linux-aarch64", ("cpu", "cpu", None)),
        ("cuda-toolkit>=13.4", "linux-x86_64", ("cuda", None, None)),
    ],
    ids=["cu132", "windows-cpu", "cu117", "marker-excludes-aarch64", "unpinned-unknown-label"],
)
def test_runtime_of_the_default_wheel(requirement: str, platform: str, expected: tuple[object, ...]) -> None:
    env = next(r.markers for r in CONFIG.platforms if r.platform == platform)
    environment = {**env, "python_version": "3.12", "python_full_version": "3.12.0", "extra": "",
                   "implementation_name": "cpython", "platform_python_implementation": "CPython"}
    fact = runtime_fact([Requirement(requirement)], environment, CONFIG, LABELS, platform, "f.whl")
    assert (fact.family, fact.label, fact.version) == expected


def test_label_for_an_unknown_runtime_is_null() -> None:
    assert label_for("cuda", "13.4.1", LABELS) is None


def test_index_location_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:1/simple")
    assert resolve_index("http://127.0.0.1:2/simple").origin == "--index-url"
    env = resolve_index(None)
    url = "http://127.0.0.1:1/simple/"
    assert (env.url, env.label, env.origin) == (url, url, "PIP_INDEX_URL")
    default = pip_builtin_default()
    assert default is not None
    monkeypatch.setenv("PIP_INDEX_URL", default)
    assert resolve_index(None).label == PIP_DEFAULT  # the data never names the default index's host


def test_generated_files_name_no_index_host() -> None:
    default = pip_builtin_default()
    assert default is not None
    host = default.split("/")[2]
    for file in (DATA_DIR / "index").glob("*.yaml"):
        text = file.read_text()
        assert host not in text, file
        assert "index: pip-default" in text or file.name == "refresh.yaml"
    recorded = Path(__file__).parents[1].joinpath("data", "index").rglob("*")
    assert all(host not in p.read_text(errors="ignore") for p in recorded if p.is_file())
