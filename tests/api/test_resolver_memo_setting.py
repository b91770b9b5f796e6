"""ACCELENV_RESOLVER_MEMO_SIZE bounds the resolver's three request-keyed error-path tables in the service (0 = off),
and the answers do not depend on it."""

from __future__ import annotations

from fastapi.testclient import TestClient

from compat_service.api.app import create_app
from tests.api.conftest import settings_for

FAILING = [
    "/v1/resolve?torch=2.3&python=3.13&backend=cu121",
    "/v1/resolve?torch=2.6&backend=cu126&driver=450.80.02",
    "/v1/resolve?torch=2.3&python=3.14&backend=rocm6.0&with=torchvision",
]


def _bodies_and_memo(database_url: str, size: int) -> tuple[list[dict[str, object]], tuple[int, int, int, int]]:
    settings = settings_for(database_url, resolver_memo_size=size, resolve_cache_size=0)
    with TestClient(create_app(settings)) as client:
        bodies = []
        for path in FAILING * 2:
            res = client.get(path)
            assert res.status_code == 409
            bodies.append({k: v for k, v in res.json().items() if k != "request_id"})
        memo = client.app.state.service.matrix_repository.current().matrix.memo
        held = memo.request_entries()
        return bodies, (memo.request_limit, *(held.get(name, 0) for name in ("tried", "nearest_torch", "nearby")))


def test_memo_size_zero_keeps_nothing_and_answers_the_same(shared_database_url: str) -> None:
    off, off_memo = _bodies_and_memo(shared_database_url, 0)
    on, on_memo = _bodies_and_memo(shared_database_url, 4096)
    assert off_memo == (0, 0, 0, 0)
    assert on_memo[0] == 4096 and min(on_memo[1:]) > 0
    assert off == on
