"""The error path's memos (stages.try_resolve's answers, explanation's nearest fitting torch) change no answer:
every failing request's error — message, causes, alternatives — is the same with the memos off, cold, and warm
after many other failures, in any order."""

from __future__ import annotations

import itertools
import random

from compat_service.domain.errors import AccelenvError
from compat_service.domain.matrix.interface import InMemoryMatrix
from compat_service.domain.matrix.loading.loader import load_matrix_rows
from compat_service.domain.resolver import stages
from compat_service.domain.resolver.request import ResolveRequest


def _requests() -> list[ResolveRequest]:
    out = []
    for torch, python, backend, extra in itertools.product(
        ["1.13", "2.0", "2.3", "2.3.1", "2.6", "2.9", "2.13", ">=2.4,<2.7", "latest"],
        ["3.8", "3.11", "3.13", "3.14"],
        ["cpu", "cuda", "cu118", "cu126", "rocm", "xpu"],
        [{}, {"driver": "450.80.02"}, {"gpu_arch": "sm_120", "driver": "570.86.10"}, {"with": "torchvision"}],
    ):
        if ("driver" in extra or "gpu_arch" in extra) and not backend.startswith("cu"):
            continue
        try:
            out.append(ResolveRequest.from_query({"torch": torch, "python": python, "backend": backend, **extra}))
        except AccelenvError:
            continue
    return out


def _answers(matrix: InMemoryMatrix, requests: list[ResolveRequest]) -> dict[ResolveRequest, object]:
    found: dict[ResolveRequest, object] = {}
    for request in requests:
        try:
            found[request] = stages.resolve(request, matrix)
        except AccelenvError as err:
            found[request] = err.to_body().model_dump()
    return found


def test_memos_change_no_answer() -> None:
    requests = _requests()
    off = InMemoryMatrix(load_matrix_rows())
    off.memo.request_limit = 0
    reference = _answers(off, requests)
    assert not any(off.memo.request_entries().values())
    failures = [r for r, a in reference.items() if isinstance(a, dict)]
    assert len(failures) > 100 and len(failures) < len(requests)
    assert any(a["alternatives"] for a in reference.values() if isinstance(a, dict))
    warm = InMemoryMatrix(load_matrix_rows())
    shuffled = list(requests)
    random.Random(7).shuffle(shuffled)
    assert _answers(warm, shuffled) == reference  # cold memos, filled in another order
    assert _answers(warm, list(reversed(requests))) == reference  # warm memos


def test_the_minors_the_nearest_torch_search_skips_do_not_resolve() -> None:
    """`minors_past_first_stages` (every stage but the companions) only leaves out minors
    the stages refuse (the search skips them unresolved),
    and keeps the ones that resolve: checked against `run` itself."""
    from compat_service.domain.resolver.conflict import Conflict
    from compat_service.domain.resolver.request import TorchSpec
    from compat_service.domain.resolver.state import ResolverState

    def resolves(request: ResolveRequest) -> bool:
        try:
            stages.run(ResolverState(matrix, request, None))
        except Conflict:
            return False
        return True

    matrix = InMemoryMatrix(load_matrix_rows())
    matrix.memo.request_limit = 0
    checked = 0
    gpus = [
        ResolveRequest.from_query({"torch": "2.3", "python": python, "backend": backend, **extra})
        for python in ("3.10", "3.13")
        for backend, extra in [
            ("rocm", {"gpu_arch": "gfx90a"}),
            ("rocm", {"gpu_arch": "gfx1100", "runtime": "6.1"}),
            ("rocm6.0", {"gpu_arch": "gfx942"}),
            ("cuda", {"gpu_arch": "sm_50"}),
            ("cu118", {"gpu_arch": "sm_120"}),
            ("cuda", {"driver": "535.54.03"}),
            ("cu126", {"driver": "525.60.13"}),
            ("cu118", {"driver": "450.80.02", "gpu_arch": "sm_86"}),
            ("rocm", {"gpu_arch": "gfx90a", "runtime": "5.7"}),
        ]
    ]
    for request in _requests()[::3] + gpus:
        passing = stages.minors_past_first_stages(request, matrix)
        for minor in matrix.torch_minors():
            answer = resolves(request.changed(torch=TorchSpec(minor.minor, "minor")))
            if minor.minor not in passing:
                assert not answer, (request, minor.minor)
                checked += 1
            elif answer:
                checked += 1
    assert checked > 500
