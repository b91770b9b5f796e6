"""Every install format installs a stack whole: a source build whose build imports torch (flash-attn) without
build isolation after torch, and a package pinned to another torch (vLLM beside vllm-ascend) with --no-deps and
then its own other requirements; each format is parsed back and checked."""

from __future__ import annotations

import dataclasses
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from compat_service.domain.matrix.loading.snapshot import load_matrix_cached
from compat_service.domain.resolver.install_commands import pip_commands
from compat_service.domain.resolver.install_formats import render
from compat_service.domain.resolver.request import ResolveRequest
from compat_service.domain.resolver.resolution import Resolution
from compat_service.domain.stacks.catalog import load_catalog
from compat_service.domain.stacks.resolve import resolve_stack

tomllib = pytest.importorskip("tomllib")  # Python 3.11+; the project supports 3.10
MATRIX = load_matrix_cached()
CATALOG = load_catalog()


@pytest.fixture(scope="module")
def source_build() -> Resolution:
    """flash-attn without a prebuilt wheel for torch 2.9 + cu13 + cp311: built from its sdist."""
    request = ResolveRequest.from_strings(with_=["flash-attn"], torch="2.9", backend="cuda", python="3.11")
    res = resolve_stack(request, MATRIX, None, CATALOG)
    assert [(p.name, p.origin) for p in res.stack] == [("flash-attn", "sdist")]
    return res


@pytest.fixture(scope="module")
def no_deps() -> Resolution:
    """vllm-ascend 0.13.0 pairs vLLM 0.13.0, whose metadata pins another torch: vLLM goes in with --no-deps."""
    request = ResolveRequest.from_strings(with_=["vllm-ascend==0.13.0"], backend="npu", python="3.11", arch="aarch64")
    res = resolve_stack(request, MATRIX, None, CATALOG)
    assert [p.name for p in res.stack if p.no_deps] == ["vllm"]
    return res


def _commands(text: str) -> list[str]:
    """The commands a file says to run after it, from its comments."""
    return [line.split("#", 1)[1].strip() for line in text.splitlines() if line.startswith("#   ")]


def test_pip_builds_the_source_package_without_build_isolation_after_torch(source_build: Resolution) -> None:
    first, *rest = pip_commands(source_build)
    assert "flash-attn" not in first
    build = shlex.split(rest[-1])
    assert build[:3] == ["pip", "install", "--no-build-isolation"] and build[-1].startswith("flash-attn==")
    assert all(f"{p.name}=={p.version}" in build for p in source_build.packages)  # torch is held, not replaced


@pytest.mark.parametrize("fmt", ["requirements", "conda"])
def test_a_file_leaves_the_source_build_out_and_says_the_command_after_it(source_build: Resolution,
                                                                         fmt: str) -> None:
    text = render(source_build, fmt)
    body = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    assert not any("flash-attn" in line for line in body)  # pip would build it before torch is installed
    assert _commands(text) == pip_commands(source_build)[1:]
    if fmt == "conda":
        pip_section = yaml.safe_load(text)["dependencies"][-1]["pip"]
        assert not any("flash-attn" in line for line in pip_section)


def test_uv_turns_build_isolation_off_for_the_source_build(source_build: Resolution) -> None:
    doc = tomllib.loads(render(source_build, "uv"))
    assert doc["tool"]["uv"]["no-build-isolation-package"] == ["flash-attn"]
    assert any(d.startswith("flash-attn==") for d in doc["project"]["dependencies"])


def test_no_deps_package_then_gets_its_other_requirements(no_deps: Resolution) -> None:
    commands = pip_commands(no_deps)
    at = commands.index("pip install --no-deps vllm==0.13.0")
    listing, install = commands[at + 1:at + 3]
    assert listing.endswith("> vllm-requirements.txt")
    held = shlex.split(install)
    assert held[:4] == ["pip", "install", "-r", "vllm-requirements.txt"]
    assert all(f"{p.name}=={p.version}" in held for p in no_deps.packages)


def test_the_listing_command_writes_the_package_requirements_but_the_held_ones(no_deps: Resolution,
                                                                              tmp_path: Path) -> None:
    """Run the listing command for a distribution installed here (httpx: certifi, httpcore, idna, anyio), with
    anyio held as if the answer pinned it: the file lists the others, extras left out."""
    from importlib.metadata import requires

    pin = dataclasses.replace(no_deps.stack[0], name="httpx", no_deps=True)
    res = no_deps.changed(stack=(pin,),
                          packages=(*no_deps.packages, dataclasses.replace(no_deps.packages[0], name="anyio")))
    listing = next(c for c in pip_commands(res) if c.endswith("> httpx-requirements.txt"))
    command = listing.replace("python -c", f"{shlex.quote(sys.executable)} -c", 1)
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, timeout=60)
    written = (tmp_path / "httpx-requirements.txt").read_text().split()
    expected = [r for r in requires("httpx") or [] if "extra ==" not in r and not r.startswith("anyio")]
    assert written == [word for r in expected for word in r.split()] and written


def test_uv_overrides_the_no_deps_package_torch_pin(no_deps: Resolution) -> None:
    doc = tomllib.loads(render(no_deps, "uv"))
    assert "vllm==0.13.0" in doc["project"]["dependencies"]
    assert doc["tool"]["uv"]["override-dependencies"] == [f"{p.name}=={p.version}" for p in no_deps.packages]


@pytest.mark.parametrize("fmt", ["requirements", "conda"])
def test_a_file_says_the_no_deps_commands_after_it(no_deps: Resolution, fmt: str) -> None:
    text = render(no_deps, fmt)
    body = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    assert not any(line.strip().removeprefix("- ").startswith("vllm==") for line in body)
    assert _commands(text) == pip_commands(no_deps)[1:]


@pytest.fixture(scope="module")
def extension_build() -> Resolution:
    """transformer-engine 2.20.2 with a CUDA 13 torch: its [pytorch] extra's transformer-engine-torch is an sdist
    built against the installed torch (te_install_docs), with [core_cu13] for the core of torch's CUDA major."""
    request = ResolveRequest.from_strings(with_=["transformer-engine==2.20.2"], backend="cuda", python="3.12")
    res = resolve_stack(request, MATRIX, None, CATALOG)
    assert [(p.name, p.extras, p.builds) for p in res.stack] == [
        ("transformer-engine", ("pytorch", "core_cu13"), "transformer-engine-torch")]
    return res


def test_pip_installs_the_extension_extra_without_build_isolation_after_torch(extension_build: Resolution) -> None:
    first, *rest = pip_commands(extension_build)
    assert "transformer-engine" not in first
    build = shlex.split(rest[-1])  # the shell reads the quoted spec whole: no glob on its brackets
    assert build[:3] == ["pip", "install", "--no-build-isolation"]
    assert build[-1] == "transformer-engine[pytorch,core_cu13]==2.20.2"
    assert all(f"{p.name}=={p.version}" in build for p in extension_build.packages)


@pytest.mark.parametrize("fmt", ["requirements", "conda", "docker"])
def test_every_file_installs_the_extension_extra_after_torch(extension_build: Resolution, fmt: str) -> None:
    text = render(extension_build, fmt)
    body = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    if fmt == "docker":  # a RUN line per command, in the same order
        runs = [line.removeprefix("RUN ").replace(" --no-cache-dir", "") for line in body if line.startswith("RUN ")]
        assert runs == pip_commands(extension_build)
        return
    assert not any("transformer-engine" in line for line in body)  # its extra's build needs torch installed
    assert _commands(text) == pip_commands(extension_build)[1:]
    assert "without build isolation, after torch" in text


def test_uv_turns_build_isolation_off_for_the_extension_package(extension_build: Resolution) -> None:
    doc = tomllib.loads(render(extension_build, "uv"))
    assert doc["tool"]["uv"]["no-build-isolation-package"] == ["transformer-engine-torch"]
    assert "transformer-engine[pytorch,core_cu13]==2.20.2" in doc["project"]["dependencies"]
