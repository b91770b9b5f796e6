"""Every output format is generated from one decision; each is parsed back and checked against it."""

from __future__ import annotations

import json
import shlex
from typing import Any

import orjson
import pytest
import yaml
from packaging.requirements import Requirement

from compat_service.domain.errors import InvalidRequestError
from compat_service.domain.matrix.interface import InMemoryMatrix
from compat_service.domain.matrix.loading.loader import load_matrix_rows
from compat_service.domain.resolver.install_formats import render
from compat_service.domain.resolver.request import ResolveRequest
from compat_service.domain.resolver.resolution import (
    HostRequirement,
    Resolution,
    StackPin,
    resolution_from_json,
    resolution_to_json,
)
from compat_service.domain.resolver.stages import resolve

REQUESTS: dict[str, dict[str, Any]] = {
    "default-index-cu121": {"torch": "2.3", "backend": "cu121", "python": "3.10"},
    "index-url-cu118": {"torch": "2.3", "backend": "cu118", "python": "3.10"},
    "extra-index-1.13": {"torch": "1.13", "backend": "cu116", "python": "3.10"},
    "npu-two-indexes": {"torch": "2.12", "backend": "npu", "python": "3.11"},
    "mlu-no-deps-companions": {"torch": "2.4", "backend": "mlu", "python": "3.10"},
    "unknown-arch-list": {"torch": "2.7.1", "backend": "cuda", "python": "3.12", "gpu_arch": "sm_120"},
}


@pytest.fixture(scope="module")
def matrix() -> InMemoryMatrix:
    return InMemoryMatrix(load_matrix_rows())


@pytest.fixture(params=list(REQUESTS), ids=list(REQUESTS))
def res(request: pytest.FixtureRequest, matrix: InMemoryMatrix) -> Resolution:
    return resolve(ResolveRequest.from_strings(**REQUESTS[request.param]), matrix)


def _reqs(lines: list[str]) -> dict[str, str]:
    parsed = [Requirement(line.split("#")[0].strip()) for line in lines]
    return {r.name: str(r.specifier).removeprefix("==") for r in parsed}


def test_json_has_the_contract_fields_and_round_trips(res: Resolution) -> None:
    body = json.loads(render(res, "json"))
    assert {"pins", "index_url", "backend", "python", "reasons", "warnings"} <= body.keys()
    assert body["pins"] == res.pins
    assert all(r["sources"] is not None and r["decision"] for r in body["reasons"])
    assert resolution_from_json(body) == res
    assert resolution_to_json(resolution_from_json(body)) == body


def test_orjson_writes_the_rows_as_the_plain_json_form(res: Resolution) -> None:
    """The service writes `resolution_to_json(res, for_orjson=True)` (its rows the dataclasses themselves) with
    orjson: the bytes must be those of the plain form, every kind of row included."""
    assert orjson.dumps(resolution_to_json(res, for_orjson=True)) == orjson.dumps(resolution_to_json(res))
    full = res.changed(
        stack=(StackPin("vllm", "0.15.1", "url", "pins torch", ("vllm-src",), "https://example.org/w.whl", True),),
        requirements=(*res.requirements, HostRequirement("cann", None, "Ascend CANN")),
        evidence={"status": "verified", "hosts": 3, "detail": None},
        unknowns=("whether x",),
        no_deps=("torchvision",),
    )
    assert orjson.dumps(resolution_to_json(full, for_orjson=True)) == orjson.dumps(resolution_to_json(full))


def test_changed_resolutions_hold_every_field(res: Resolution) -> None:
    """`Resolution.changed` copies every field and changes the named ones; equal answers are equal and hash
    alike; the fields left out of the constructor take their defaults."""
    values = res.fields()
    assert Resolution(**values) == res.changed() == res and hash(res.changed()) == hash(res)
    warned = res.changed(warnings=("w",))
    assert warned.warnings == ("w",) and warned != res
    assert {k: v for k, v in warned.fields().items() if k != "warnings"} == {
        k: v for k, v in values.items() if k != "warnings"
    }
    required = dict(list(values.items())[:10])
    assert Resolution(**required).fields() == required | {
        "requirements": (), "reasons": (), "warnings": (), "evidence": None, "unknowns": (), "no_deps": (),
        "stack": (),
    }


def test_pip_commands_install_exactly_the_pins(res: Resolution) -> None:
    pins: dict[str, str] = {}
    text = render(res, "pip")
    comments = [ln for ln in text.splitlines() if ln.startswith("#")]
    assert comments == [f"# warning: {w}" for w in res.warnings] + (
        [f"# status: {res.status}: " + "; ".join(res.unknowns)] if res.unknowns else []
    ), "a script's output keeps every warning"
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        words = shlex.split(line)
        assert words[:2] == ["pip", "install"]
        if "--no-deps" in words:
            words.remove("--no-deps")
        specs = [w for w in words[2:] if "==" in w]
        pins.update(_reqs(specs))
        if res.index_url and any(Requirement(s).name == "torch" for s in specs):
            assert words[-2:] == [res.index_option, res.index_url]
    assert pins == res.pins


def test_requirements_file_has_index_line_and_pins(res: Resolution) -> None:
    lines = [ln for ln in render(res, "requirements").splitlines() if ln and not ln.startswith("#")]
    index_lines = [ln for ln in lines if ln.startswith("--")]
    assert _reqs([ln for ln in lines if not ln.startswith("--")]) == res.pins
    if res.index_url is None:
        assert index_lines == []
    else:
        # the one index rule: every format prints the resolution's own index option
        assert index_lines[0].split() == [res.index_option, res.index_url]
    for warning in res.warnings:
        assert f"# warning: {warning}" in render(res, "requirements")


def test_uv_snippet_is_toml_with_explicit_index_and_sources(res: Resolution) -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+; the project supports 3.10
    text = render(res, "uv")
    doc = tomllib.loads(text)
    assert _reqs(doc["project"]["dependencies"]) == res.pins
    assert any(line.startswith("# uv pip install ") for line in text.splitlines())
    if res.index_url is None:
        assert "tool" not in doc
        return
    (index,) = doc["tool"]["uv"]["index"]
    assert index["url"] == res.index_url and index["explicit"] is True
    sources = doc["tool"]["uv"]["sources"]
    assert sources["torch"] == [{"index": index["name"]}]
    assert all(p.name in sources for p in res.packages if p.index_url)


def test_conda_environment_has_python_and_pip_section(res: Resolution) -> None:
    env = yaml.safe_load(render(res, "conda"))
    assert f"python={res.python}" in env["dependencies"]
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert _reqs([x for x in pip_section if not x.startswith("--")]) == res.pins


def test_dockerfile_runs_the_pip_commands(res: Resolution) -> None:
    lines = render(res, "docker").splitlines()
    assert any(ln.startswith(f"FROM python:{res.python}") for ln in lines)
    runs = [ln.removeprefix("RUN ") for ln in lines if ln.startswith("RUN ")]
    assert runs == [
        c.replace("pip install", "pip install --no-cache-dir", 1)
        for c in render(res, "pip").splitlines()
        if not c.startswith("#")
    ]


def test_text_names_version_backend_and_reasons(res: Resolution) -> None:
    text = render(res, "text")
    assert res.torch_version in text and res.backend in text and "why:" in text


def test_docker_refuses_a_macos_target(matrix: InMemoryMatrix) -> None:
    res = resolve(
        ResolveRequest.from_strings(torch="2.3", backend="cpu", python="3.11", os="macos", arch="arm64"),
        matrix,
    )
    with pytest.raises(InvalidRequestError):
        render(res, "docker")


def test_unknown_format_is_invalid(matrix: InMemoryMatrix) -> None:
    res = resolve(ResolveRequest.from_strings(torch="2.3", backend="cpu", python="3.11"), matrix)
    with pytest.raises(InvalidRequestError, match="--format"):
        render(res, "yaml")


@pytest.mark.parametrize("backend", ["cu124", "cu118"], ids=["torch-from-the-default-index", "torch-from-its-index"])
def test_a_package_from_its_project_wheel_page_takes_the_page_in_every_format(backend: str) -> None:
    from compat_service.domain.stacks.resolve import resolve_stack

    tomllib = pytest.importorskip("tomllib")
    request = ResolveRequest.from_strings(with_=["torch-scatter"], torch="2.5", backend=backend, python="3.12")
    res = resolve_stack(request, InMemoryMatrix(load_matrix_rows()))
    page = f"https://data.pyg.org/whl/torch-2.5.0+{backend}.html"
    (pin,) = res.stack
    assert (pin.origin, pin.url) == ("find-links", page)
    pip = [c for c in render(res, "pip").splitlines() if not c.startswith("#")]
    assert pip[-1].endswith(f"torch-scatter==2.1.2 --find-links {page}") and f"torch=={res.pins['torch']}" in pip[-1]
    for fmt in ("requirements", "conda"):
        lines = [ln.strip().removeprefix("- ") for ln in render(res, fmt).splitlines()]
        assert lines.index(f"--find-links {page}") < lines.index("torch-scatter==2.1.2"), fmt
    doc = tomllib.loads(render(res, "uv"))
    flat = next(i for i in doc["tool"]["uv"]["index"] if i["url"] == page)
    assert flat["format"] == "flat" and flat["explicit"] is True
    assert doc["tool"]["uv"]["sources"]["torch-scatter"] == [{"index": flat["name"]}]
    runs = [ln for ln in render(res, "docker").splitlines() if ln.startswith("RUN ")]
    assert runs[-1].endswith(f"--find-links {page}")
