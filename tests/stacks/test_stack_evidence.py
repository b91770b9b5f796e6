"""Probe evidence keeps working per torch cell in a stack: the answer says whether its torch cell is verified,
and `require_verified` picks the newest package release whose torch cell the reports verify."""

from __future__ import annotations

from compat_service.domain.evidence.lookup import CellVerdict
from compat_service.domain.matrix.loading.snapshot import load_matrix_cached
from compat_service.domain.resolver.request import ResolveRequest
from compat_service.domain.stacks.catalog import load_catalog
from compat_service.domain.stacks.resolve import resolve_stack

MATRIX = load_matrix_cached()
CATALOG = load_catalog()


class _Reports:
    """Stored probe reports (the storage boundary): one verified cell, nothing about the others."""

    def __init__(self, verified: tuple[str, str, str]) -> None:
        self.verified = verified

    def status_for(self, torch_version: str, build: str, python: str, os: str, arch: str) -> CellVerdict | None:
        if (torch_version, build, python) == self.verified:
            return CellVerdict("verified", hosts=2)
        return None


def _newest_vllm_pinning(torch: str) -> str:
    vllm = CATALOG.get("vllm")
    assert vllm is not None
    return next(r.version for r in vllm.releases
                if not r.prerelease and r.pins("linux-x86_64", "3.12").get("torch") == torch)


def test_the_stack_answer_names_its_torch_cell_evidence() -> None:
    request = ResolveRequest.from_strings(with_=["vllm==0.15.1"], backend="cuda", python="3.12")
    res = resolve_stack(request, MATRIX, _Reports(("2.9.1", "cu129", "3.12")), CATALOG)
    assert res.evidence is not None and res.evidence["status"] == "verified"
    assert any(r.decision == "evidence" and "is verified by probe reports" in r.detail for r in res.reasons)


def test_require_verified_picks_the_newest_release_whose_torch_cell_is_verified() -> None:
    request = ResolveRequest.from_strings(with_=["vllm"], backend="cuda", python="3.12", require_verified=True)
    res = resolve_stack(request, MATRIX, _Reports(("2.9.1", "cu129", "3.12")), CATALOG)
    assert [(p.name, p.version) for p in res.stack] == [("vllm", _newest_vllm_pinning("2.9.1"))]
    assert res.torch_version.split("+")[0] == "2.9.1" and res.backend == "cu129"
