"""Every resolver stage has its check in `stages.STAGE_CHECKS` and its explanation in `explanation.EXPLAIN`, in
the stages' order: a new stage without one fails here, not with a KeyError on the first request that dies there."""

from __future__ import annotations

from compat_service.domain.resolver.explanation import EXPLAIN
from compat_service.domain.resolver.stages import STAGE_CHECKS
from compat_service.domain.resolver.state import STAGES


def test_every_stage_is_explained_in_order() -> None:
    assert tuple(EXPLAIN) == STAGES


def test_every_stage_is_checked_in_order() -> None:
    assert tuple(STAGE_CHECKS) == STAGES
