"""The resolution oracle (uv pip compile) against a loopback index built from recorded metadata."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from compat_service.domain.errors import InvalidRequestError
from compat_service.index.errors import IndexUnreachableError
from compat_service.index.resolution_oracle import (
    OracleTarget,
    failing_requirement,
    parse_compiled,
    resolve_closure,
)
from tests.index.metadata_index import RecordedWheel, metadata_index

LINUX_312 = OracleTarget("x86_64-manylinux_2_28", "3.12")
W = RecordedWheel

PROJECTS = {
    "torch": [
        W("torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl", ("filelock",), ">=3.10"),
        W("torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64.whl", ("filelock",), ">=3.10"),
        W("torch-2.10.0-cp312-cp312-win_amd64.whl", ("filelock",), ">=3.10"),
    ],
    "filelock": [W("filelock-3.20.0-py3-none-any.whl")],
    "vllm": [
        W("vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl", ("torch==2.10.0", "flashinfer-python==0.7.2"), ">=3.10"),
        W("vllm-0.34.0-cp38-abi3-manylinux_2_28_x86_64.whl", ("torch==2.10.0", "flashinfer-python==0.7.3"), ">=3.10"),
    ],
    "flashinfer-python": [W("flashinfer_python-0.7.2-py3-none-any.whl", ("torch",))],
}


@pytest.fixture(scope="module")
def index():
    with metadata_index(PROJECTS) as served:
        yield served


def test_a_resolvable_stack_gives_the_whole_closure_with_the_served_hashes(index, tmp_path: Path) -> None:
    answer = resolve_closure(["vllm==0.33.0"], LINUX_312, index_url=index.simple, cache_dir=tmp_path)
    assert answer.resolvable
    assert {name: pin.version for name, pin in answer.pins.items()} == {
        "vllm": "0.33.0", "torch": "2.10.0", "flashinfer-python": "0.7.2", "filelock": "3.20.0",
    }
    served = PROJECTS["flashinfer-python"][0].wheel()
    assert answer.pins["flashinfer-python"].hashes == (f"sha256:{hashlib.sha256(served).hexdigest()}",)
    assert answer.pins["torch"].index == index.simple
    assert answer.version_of("Flashinfer_Python") == "0.7.2"


def test_an_unpublished_pin_names_the_failing_requirement(index, tmp_path: Path) -> None:
    answer = resolve_closure(["vllm==0.34.0"], LINUX_312, index_url=index.simple, cache_dir=tmp_path)
    assert not answer.resolvable and answer.pins == {}
    assert answer.failing_requirement == "flashinfer-python==0.7.3"
    assert "vllm" in (answer.failure or "")
    assert answer.causes() and all(c.origin == "uv pip compile" for c in answer.causes())


def test_constraints_hold_torch_and_the_platform_decides_the_wheels(index, tmp_path: Path) -> None:
    pinned = resolve_closure(["flashinfer-python"], LINUX_312, index_url=index.simple,
                             constraints=["torch==2.9.0"], cache_dir=tmp_path)
    assert pinned.version_of("torch") == "2.9.0"
    windows = OracleTarget("x86_64-pc-windows-msvc", "3.12")
    answer = resolve_closure(["vllm==0.33.0"], windows, index_url=index.simple, cache_dir=tmp_path)
    assert not answer.resolvable
    assert answer.failing_requirement is not None and answer.failing_requirement.startswith("vllm")


def test_an_extra_index_is_read(tmp_path: Path) -> None:
    rest = {name: wheels for name, wheels in PROJECTS.items() if name != "filelock"}
    with metadata_index({"filelock": PROJECTS["filelock"]}) as first, metadata_index(rest) as second:
        answer = resolve_closure(["torch==2.9.0"], LINUX_312, index_url=first.simple,
                                 extra_index_urls=[second.simple], cache_dir=tmp_path)
    assert answer.resolvable
    assert answer.pins["filelock"].index == first.simple
    assert answer.pins["torch"].index == second.simple


def test_a_wheel_page_is_read_as_find_links(tmp_path: Path) -> None:
    """A package whose wheels are on its project's own page (PyG's ``torch-2.9.0+cu128.html``): the index holds
    only its sdist (here: no file), the page a wheel per build with a local label."""
    page = [W("torch_scatter-2.1.2+pt29cu128-cp312-cp312-linux_x86_64.whl")]
    projects = {**PROJECTS, "torch-scatter": []}
    with metadata_index(projects, flat_pages={"whl/torch-2.9.0+cu128.html": page}) as served:
        without = resolve_closure(["torch==2.9.0", "torch-scatter==2.1.2"], LINUX_312, index_url=served.simple,
                                  cache_dir=tmp_path)
        answer = resolve_closure(["torch==2.9.0", "torch-scatter==2.1.2"], LINUX_312, index_url=served.simple,
                                 find_links=[f"{served.base}/whl/torch-2.9.0+cu128.html"], cache_dir=tmp_path)
        asked = list(served.requests)
    assert not without.resolvable and (without.failing_requirement or "").startswith("torch-scatter")
    assert answer.resolvable, answer.failure
    assert answer.version_of("torch-scatter") == "2.1.2+pt29cu128"
    assert answer.pins["torch-scatter"].index == f"{served.base}/whl/torch-2.9.0+cu128.html"
    assert "/whl/torch-2.9.0+cu128.html" in asked


def test_an_index_that_does_not_answer_is_an_error_not_an_unresolvable_answer(tmp_path: Path) -> None:
    with metadata_index({}) as gone:
        url = gone.simple
    with pytest.raises(IndexUnreachableError):
        resolve_closure(["torch"], LINUX_312, index_url=url, cache_dir=tmp_path, timeout=60)
    with pytest.raises(InvalidRequestError):
        resolve_closure([], LINUX_312, index_url=url)


@pytest.mark.parametrize(
    ("explanation", "expected"),
    [
        ("Because there is no version of flashinfer-python==0.7.3 and vllm==0.34.0 depends on "
         "flashinfer-python==0.7.3, we can conclude that vllm==0.34.0 cannot be used.", "flashinfer-python==0.7.3"),
        ("Because flash-attn==2.8.3 has no usable wheels and you require flash-attn==2.8.3, we can conclude",
         "flash-attn==2.8.3"),
        ("Because nosuch was not found in the package registry and you require nosuch, we can conclude", "nosuch"),
        ("Because llguidance{platform_machine == 'aarch64' or platform_machine == 'x86_64'}>=1.7.0,<=1.7.6 has no "
         "usable wheels and only the following versions", "llguidance>=1.7.0,<=1.7.6"),
    ],
    ids=["missing-pin", "sdist-only", "unknown-project", "marker-and-range"],
)
def test_failing_requirement_is_read_from_uv_explanations(explanation: str, expected: str) -> None:
    assert failing_requirement(explanation) == expected


def test_parse_compiled_reads_pins_hashes_and_index() -> None:
    text = (
        "a==1.0 \\\n    --hash=sha256:aa \\\n    --hash=sha256:bb\n    # via b\n    # from http://x/simple\n"
        "b[extra]==2.0 ; sys_platform == 'linux'\n"
    )
    pins = parse_compiled(text)
    assert pins["a"].hashes == ("sha256:aa", "sha256:bb") and pins["a"].index == "http://x/simple"
    assert pins["b"].version == "2.0" and pins["b"].hashes == () and pins["b"].index is None
