"""A loopback index per test, and a matrix_data copy whose generated layer is empty (refresh.yaml kept)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_service.index.client import IndexClient, RetryPolicy
from compat_service.index.location import IndexLocation
from compat_service.index.page_cache import IndexCache
from matrix_data import DATA_DIR
from tests.index.loopback_index import IndexState, LoopbackIndex, loopback_index

FAST_RETRY = RetryPolicy(attempts=3, wait_initial=0.01, wait_max=0.05, timeout=20)


@pytest.fixture
def index() -> Iterator[LoopbackIndex]:
    with loopback_index(IndexState()) as served:
        yield served


def matrix_without_generated(tmp_path: Path) -> Path:
    """A copy of matrix_data under ``tmp_path`` without the generated index files (refresh.yaml kept)."""
    target = tmp_path / "matrix_data"
    shutil.copytree(DATA_DIR, target, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    for generated in (target / "index").glob("*.yaml"):
        if generated.name != "refresh.yaml":
            generated.unlink()
    return target


@pytest.fixture
def matrix(tmp_path: Path) -> Path:
    return matrix_without_generated(tmp_path)


def location(index: LoopbackIndex) -> IndexLocation:
    return IndexLocation(url=index.simple, label=index.simple, origin="--index-url")


def client(cache_dir: Path | None = None, *, timeout: float = 5.0) -> IndexClient:
    return IndexClient(cache=IndexCache(cache_dir), timeout=timeout, retry=FAST_RETRY)
