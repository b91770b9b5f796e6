"""The caches a matrix keeps for the resolver (InMemoryMatrix's own and the memos in its `MemoStore`) are keyed by
facts drawn from the matrix, never by free text from a request: a flood of distinct requests must not grow it."""

from __future__ import annotations

from typing import Any

import pytest

from compat_service.domain.errors import AccelenvError
from compat_service.domain.matrix.interface import InMemoryMatrix
from compat_service.domain.matrix.loading.loader import load_matrix_rows
from compat_service.domain.resolver.request import ResolveRequest
from compat_service.domain.resolver.resolution import resolution_to_json
from compat_service.domain.resolver.stages import resolve


def _resolve(matrix: InMemoryMatrix, **flags: Any) -> dict | str:
    try:
        return resolution_to_json(resolve(ResolveRequest.from_strings(**flags), matrix))
    except AccelenvError as err:
        return err.to_body().model_dump_json()  # the whole error: causes and alternatives too


def test_distinct_free_text_requests_do_not_grow_the_memo() -> None:
    # the error path's two request-keyed tables are bounded instead: small bounds, which the flood exceeds
    matrix = InMemoryMatrix(load_matrix_rows())
    matrix.memo.request_limit = 20

    def flood(start: int) -> None:
        for i in range(start, start + 150):
            _resolve(matrix, torch=f">=2.{i % 10},<3.{i}", python="3.11", backend="cuda", driver=f"5{i:02d}.1.{i}")
            _resolve(matrix, torch="2.3", python="3.10", backend=f"cu{100 + i}")  # unknown labels, one each
            _resolve(matrix, torch=f"2.{i % 14}", python="3.12", backend=f"rocm{i}.{i % 10}")

    flood(0)
    size = matrix.cache_size()
    assert size > 0, "the flood went through the cached stages"
    flood(1000)
    assert matrix.cache_size() == size
    assert matrix.memo.request_entries() == {"tried": 20, "nearest_torch": 20, "nearby": 20}


def test_memoized_answers_equal_fresh_ones() -> None:
    """The same request on a matrix with a warm memo and on a fresh matrix answers the same."""
    warm = InMemoryMatrix(load_matrix_rows())
    requests = [
        {"torch": "2.3", "python": "3.10", "backend": "cu121"},
        {"torch": "2.4.0", "python": "3.10", "backend": "npu", "with_": "none"},
        {"torch": "2.4.0", "python": "3.10", "backend": "mlu", "with_": "none"},
        {"torch": "latest", "backend": "cuda", "gpu_arch": "sm_90", "driver": "550.54.14"},
        {"torch": "2.7", "os": "macos", "arch": "arm64", "backend": "mps"},
        # failures: their nearby requests are kept too (explanation's `nearby` memo)
        {"torch": "2.3", "python": "3.13", "backend": "cu121"},
        {"torch": "2.6", "backend": "cuda", "driver": "450.80.02"},
        {"torch": "2.4", "backend": "cu126", "python": "3.10"},
    ]
    for flags in requests * 2:  # the second round answers from the memo
        _resolve(warm, **flags)
    for flags in requests:
        assert _resolve(warm, **flags) == _resolve(InMemoryMatrix(load_matrix_rows()), **flags), flags


def test_changed_requests_equal_newly_built_ones() -> None:
    """`ResolveRequest.changed` (the alternatives search's copy) equals the request built from the changed
    fields: equal, hashed alike, platform recomputed, an unknown field refused; a pickled request rehashes."""
    import pickle

    from compat_service.domain.resolver.request import BackendSpec

    request = ResolveRequest.from_strings(torch="2.3", python="3.10", backend="cu121", driver="535.104.05")
    assert hash(request) == hash(request) and request.platform == "linux-x86_64"
    for fields in ({"python": None}, {"backend": BackendSpec("cpu", "label", "cpu"), "driver": None},
                   {"os": "windows", "arch": "x86_64"}, {}):
        changed, built = request.changed(**fields), ResolveRequest(**(request.fields() | fields))
        assert changed == built and hash(changed) == hash(built), fields
        assert changed.platform == built.platform == f"{built.os}-{built.arch}"
    with pytest.raises(TypeError):
        request.changed(pyton="3.11")
    again = pickle.loads(pickle.dumps(request))
    assert again == request and hash(again) == hash(request) and "_hash" not in pickle.dumps(request).decode("latin-1")


@pytest.mark.parametrize("flags", [
    {}, {"torch": "2.3", "python": "3.10", "backend": "cu121", "with_": "torchvision"},
    {"os": "macos", "backend": "mps"}, {"gpu": "A100", "driver": "535.104.05"},
    {"backend": "npu", "runtime": "8.0.0", "with_": ["vllm", "torchvision"], "strict": True},
])
def test_parsed_requests_equal_ones_built_from_their_fields(flags: dict[str, Any]) -> None:
    """`from_strings` builds its request with the constructor: it holds every field, equal to one built from the
    same values, and the same platform."""
    parsed = ResolveRequest.from_strings(**flags)
    built = ResolveRequest(**parsed.fields())
    assert parsed == built and hash(parsed) == hash(built) and parsed.platform == built.platform
    assert parsed.fields() == built.fields() and repr(parsed) == repr(built)
