"""`GET /v1/lock` on the real app: the same pylock.toml `accelenv lock` writes, against the index the settings
name (the loopback index of this package's conftest)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from packaging.pylock import Pylock

from compat_service.api.app import create_app
from compat_service.config import Settings
from compat_service.domain.lock.pylock import pep751_part
from tests.lock.lock_index import LockIndex

tomllib: Any = pytest.importorskip("tomllib")


@pytest.fixture(scope="module")
def client(index: LockIndex, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'accelenv.sqlite3'}"
    settings = Settings(database_url=url, auto_migrate=True, lock_index_url=index.simple,
                        lock_torch_index=index.torch_template)
    with TestClient(create_app(settings), raise_server_exceptions=False) as c:
        yield c


def test_the_lock_endpoint_answers_a_valid_pylock(client: TestClient, tmp_path: Path) -> None:
    response = client.get("/v1/lock", params={"torch": "2.13.0", "backend": "cuda", "driver": "560.35.05",
                                              "gpu_arch": "sm_80", "python": "3.11", "os": "linux",
                                              "arch": "x86_64", "with": "none"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/toml")
    document = tomllib.loads(response.text)
    part = pep751_part(document)
    assert Pylock.from_dict(part).to_dict() == part
    assert document["tool"]["accelenv"]["answer"]["build"] == "cu126"
    assert {p["name"] for p in document["packages"]} >= {"torch", "nvidia-cuda-runtime-cu12"}


def test_an_unknown_parameter_and_a_bad_request_are_error_bodies(client: TestClient) -> None:
    unknown = client.get("/v1/lock", params={"index_url": "http://elsewhere/"})
    assert unknown.status_code == 422 and "index_url" in unknown.json()["message"]
    bad = client.get("/v1/lock", params={"torch": "1.0", "python": "3.11", "os": "linux", "arch": "x86_64"})
    assert bad.status_code == 409 and bad.json()["code"] == "torch-not-found"


def test_a_service_without_a_lock_index_answers_503(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'a.sqlite3'}", auto_migrate=True)
    with TestClient(create_app(settings), raise_server_exceptions=False) as c:
        response = c.get("/v1/lock", params={"torch": "2.13.0", "backend": "cpu"})
    assert response.status_code == 503 and response.json()["code"] == "lock-not-configured"
