"""Variants in: `matrix refresh` reads a PEP 825 variants JSON the index links into the generated layer, with
each wheel's sha256 as the index states it; the export then fills an arch list the matrix lacks from it."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from compat_service.domain.matrix.loading.snapshot import load_matrix_cached
from compat_service.domain.variants.export import build_properties
from compat_service.index.client import IndexCache, IndexClient
from compat_service.index.location import IndexLocation
from compat_service.index.refresh import run_refresh
from tests.index.conftest import matrix_without_generated
from tests.lock.lock_index import TinyWheel, lock_index

STATED = {"rocm7.1": {"amd": {"rocm_version": ["7.1"], "gfx_arch": ["gfx90a", "gfx942"]}}, "null": {}}
DOCUMENT = {"default-priorities": {"namespace": ["amd"]},
            "providers": {"amd": {"requires": ["amd-variant-provider"]}}, "variants": STATED}


@pytest.fixture
def matrix(tmp_path: Path) -> Path:
    return matrix_without_generated(tmp_path)


def test_refresh_reads_the_variants_json_and_each_wheels_sha256(matrix: Path) -> None:
    roots = {"simple": {"torch": [
        TinyWheel("torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl", ("filelock",)),
        TinyWheel("torch-2.13.0-cp312-cp312-manylinux_2_28_x86_64.whl", ("filelock",), hash_stated=False),
    ]}}
    extras = {"simple": [("torch", "torch-2.13.0-variants.json", json.dumps(DOCUMENT).encode())]}
    with lock_index(roots, extras) as served, IndexClient(cache=IndexCache(None), timeout=5.0) as client:
        location = IndexLocation(url=served.simple, label=served.simple, origin="--index-url")
        result = run_refresh(client, location, matrix, packages=["torch"], variants=False,
                             today=dt.date(2026, 12, 6))
    facts = result.facts["torch"]
    (found,) = facts.variants_json
    assert (found.version, found.file, found.variants) == ("2.13.0", "torch-2.13.0-variants.json", STATED)
    assert found.default_namespaces == ["amd"] and found.sha256
    wheels = {w.python: w.sha256 for w in facts.release("2.13.0").wheels}  # type: ignore[union-attr]
    assert wheels["3.12"] is None and wheels["3.11"] is not None and len(wheels["3.11"]) == 64
    written = (matrix / "index" / "torch.yaml").read_text()
    assert "variants_json:" in written and "gfx942" in written


def test_refresh_reads_a_variant_wheels_variant_json_with_range_reads(matrix: Path) -> None:
    one = {"default-priorities": {"namespace": ["nvidia"]},
           "providers": {"nvidia": {"requires": ["nvidia-variant-provider"]}},
           "variants": {"cu126": {"nvidia": {"cuda_version_lower_bound": ["12.6"], "sm_arch": ["80_real", "90_real"]}}}}
    wheel = TinyWheel("torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl", ("filelock",),
                      {"torch/__init__.py": "", "torch-2.13.0.dist-info/variant.json": json.dumps(one)},
                      variant_label="cu126")
    plain = TinyWheel("torch-2.13.0-cp312-cp312-manylinux_2_28_x86_64.whl", ("filelock",))
    with lock_index({"simple": {"torch": [wheel, plain]}}) as served, \
            IndexClient(cache=IndexCache(None), timeout=5.0) as client:
        location = IndexLocation(url=served.simple, label=served.simple, origin="--index-url")
        result = run_refresh(client, location, matrix, packages=["torch"], variants=False, write=False,
                             today=dt.date(2026, 12, 6))
    (found,) = result.facts["torch"].variants_json
    assert found.file == "torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64-cu126.whl"
    assert found.variants == one["variants"] and found.version == "2.13.0"


def test_an_index_stated_arch_list_fills_the_one_the_matrix_lacks() -> None:
    matrix = load_matrix_cached()
    assert matrix.arch_list("2.13.0", "rocm7.1", "linux-x86_64") is None
    build = build_properties(matrix, "2.13.0", "rocm7.1", "linux-x86_64", STATED["rocm7.1"])
    assert build.properties["amd"]["gfx_arch"] == ["gfx90a", "gfx942"]
    assert "package_index" in build.source and build.unknown == ()
    curated = build_properties(matrix, "2.13.0", "cu126", "linux-x86_64",
                               {"nvidia": {"sm_arch": ["99_real"]}})
    assert "99_real" not in curated.properties["nvidia"]["sm_arch"]  # a sourced list is not replaced
