"""A stack package's wheels against the described host (issue 29): platform tags from the index's file names,
Requires-Python against the full Python version."""

from __future__ import annotations

import json
from typing import Any

import pytest

from compat_service.domain.errors import AccelenvError
from compat_service.domain.matrix.loading.snapshot import load_matrix_cached
from compat_service.domain.resolver.request import ResolveRequest
from compat_service.domain.stacks.catalog import Catalog, _platform_tags, load_catalog
from compat_service.domain.stacks.host_wheels import lowest_floor, platform_blocked
from compat_service.domain.stacks.resolve import resolve_stack

MATRIX = load_matrix_cached()


def _release(version: str, requires_python: str | None, tags: str = "any", sdist: str | None = None) -> dict[str, Any]:
    return {
        "version": version,
        "yanked": False,
        "prerelease": False,
        "requires_python": requires_python,
        "sdist": sdist,
        "wheels": {"linux-x86_64": ["3.10+" if tags != "any" else "any"]},
        "wheel_tags": {"linux-x86_64": [["3.10+" if tags != "any" else "any", tags]]},
        "requires": {},
        "first_upload": "2026-01-01",
    }


def _catalog(*releases: dict[str, Any]) -> Catalog:
    package = {
        "name": "demo-pkg",
        "torch_build": "any",
        "sources": [],
        "index": "pip-default",
        "retrieved": "2026-12-01",
        "releases": list(releases),
        "wheel_rows": [],
    }
    return Catalog({"demo-pkg": json.dumps(package)})


def test_wheel_file_names_give_their_platform_tags() -> None:
    assert (
        _platform_tags("torchao-0.9.0-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl")
        == "manylinux2014_x86_64.manylinux_2_17_x86_64"
    )
    assert _platform_tags("bitsandbytes-0.42.0-py3-none-any.whl") == "any"
    floor = lowest_floor(["manylinux_2_28_x86_64", "manylinux2014_x86_64.manylinux_2_17_x86_64"])
    assert floor is not None and floor.text == "glibc >= 2.17"
    assert lowest_floor(["manylinux_2_28_x86_64", "any"]) is None


def test_the_full_python_excluded_by_requires_python_moves_to_a_release_that_admits_it() -> None:
    # 3.13.1: at 3.14.1 the bundled torchvision releases' own Requires-Python (!=3.14.1) already refuses torch
    catalog = _catalog(_release("1.1", "!=3.13.1,>=3.10"), _release("1.0", ">=3.10"))
    request = ResolveRequest.from_strings(with_=["demo-pkg"], backend="cpu", python="3.13.1")
    res = resolve_stack(request, MATRIX, None, catalog)
    assert [(p.name, p.version) for p in res.stack] == [("demo-pkg", "1.0")]
    assert any("demo-pkg 1.1 requires Python !=3.13.1,>=3.10, not 3.13.1" in r.detail for r in res.reasons)
    # the same minor with another patch keeps the newest release
    res = resolve_stack(
        ResolveRequest.from_strings(with_=["demo-pkg"], backend="cpu", python="3.13.2"), MATRIX, None, catalog
    )
    assert [(p.name, p.version) for p in res.stack] == [("demo-pkg", "1.1")]


def test_a_release_only_excluding_the_full_python_is_refused_naming_it() -> None:
    catalog = _catalog(_release("1.1", "!=3.13.1,>=3.10"))
    request = ResolveRequest.from_strings(with_=["demo-pkg"], backend="cpu", python="3.13.1")
    with pytest.raises(AccelenvError) as caught:
        resolve_stack(request, MATRIX, None, catalog)
    assert caught.value.code == "python-unsupported"
    assert "demo-pkg 1.1 requires Python !=3.13.1,>=3.10, not 3.13.1" in caught.value.message


def test_an_sdist_is_said_not_chosen_when_no_wheel_fits_the_host() -> None:
    catalog = _catalog(_release("1.1", None, "manylinux_2_28_x86_64", sdist="demo_pkg-1.1.tar.gz"))
    request = ResolveRequest.from_strings(with_=["demo-pkg"], backend="cpu", python="3.12", glibc="2.17")
    package = catalog.get("demo-pkg")
    assert package is not None
    why = platform_blocked(request, package, package.releases[0], None)
    assert why is not None and "need glibc >= 2.28" in why and "demo_pkg-1.1.tar.gz" in why and "compiler" in why
    with pytest.raises(AccelenvError) as caught:
        resolve_stack(request, MATRIX, None, catalog)
    assert caught.value.code == "platform-unsupported"
    # without --glibc nothing is refused: the answer says the floor it assumed
    res = resolve_stack(
        ResolveRequest.from_strings(with_=["demo-pkg"], backend="cpu", python="3.12"), MATRIX, None, catalog
    )
    assert any(q.name == "glibc" and q.version == "2.28" and "no --glibc given" in q.detail for q in res.requirements)


def test_bundled_catalog_records_each_wheels_platform_tags() -> None:
    release = load_catalog().get("bitsandbytes").release("0.49.0")  # type: ignore[union-attr]
    assert release is not None
    assert {tags for _py, tags in release.wheel_tags["macos-arm64"]} == {"macosx_14_0_arm64"}
