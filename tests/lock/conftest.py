"""The loopback index every lock test reads: torch 2.13.0 for each build label the matrix lists on
linux-x86_64 (tiny wheels whose module answers `verify-env`), its PEP 825 variants JSON, and a small closure
on the default index (one file listed without its sha256)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from compat_service.domain.matrix.loading.snapshot import load_matrix_cached
from compat_service.domain.variants.export import release_variants
from tests.lock.lock_index import LockIndex, TinyWheel, fake_torch, lock_index

TORCH = "2.13.0"
CUDA_RUNTIME = "nvidia-cuda-runtime-cu12==12.6.77; platform_system == 'Linux'"


def torch_roots() -> dict[str, dict[str, list[TinyWheel]]]:
    matrix = load_matrix_cached()
    exported = release_variants(matrix, TORCH, "linux-x86_64")
    roots: dict[str, dict[str, list[TinyWheel]]] = {}
    for build in exported["builds"]:
        variant = matrix.build_variant(build["label"])
        assert variant is not None
        requires = ("filelock", "typing-extensions>=4") + ((CUDA_RUNTIME,) if build["label"] == "cu126" else ())
        roots[f"whl/{build['label']}"] = {
            "torch": [fake_torch(TORCH, build["label"], variant.family, variant.runtime, requires)]
        }
    return roots


@pytest.fixture(scope="module")
def index() -> Iterator[LockIndex]:
    variants = json.dumps(release_variants(load_matrix_cached(), TORCH, "linux-x86_64")["document"]).encode()
    roots = torch_roots()
    roots["simple"] = {
        "filelock": [TinyWheel("filelock-3.16.1-py3-none-any.whl")],
        "typing-extensions": [TinyWheel("typing_extensions-4.12.2-py3-none-any.whl", hash_stated=False)],
        "nvidia-cuda-runtime-cu12": [TinyWheel("nvidia_cuda_runtime_cu12-12.6.77-py3-none-manylinux_2_28_x86_64.whl")],
    }
    extras = {root: [("torch", f"torch-{TORCH}-variants.json", variants)] for root in roots if root != "simple"}
    with lock_index(roots, extras) as served:
        yield served
