"""`POST /v1/tokens/{id}/withdraw` (scope `admin`): revoke a token and withdraw the evidence it submitted
(``compat_service.db.evidence.withdraw``; the trust model is in docs/service.md)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request
from starlette.concurrency import run_in_threadpool

from compat_service.api.deps import require_scope, state_of
from compat_service.db.evidence.withdraw import WithdrawResult, withdraw_submitter
from compat_service.db.matrix.tables import ApiTokenPublic
from compat_service.domain.errors import ConflictError, ErrorBody

router = APIRouter(prefix="/v1/tokens", tags=["tokens"])


@router.post(
    "/{token_id}/withdraw",
    summary="Revoke a token and withdraw every report it submitted from the evidence (admin)",
    response_model=WithdrawResult,
    responses={status: {"model": ErrorBody} for status in (401, 403, 404, 409)},
)
async def withdraw_token(
    request: Request,
    admin: Annotated[ApiTokenPublic, Depends(require_scope("admin"))],
    token_id: Annotated[int, Path(ge=1, le=2**31 - 1, description="the id `accelenv token list` shows")],
) -> WithdrawResult:
    if token_id == admin.id:
        # revoking the token in use would lock its holder out mid-call (and may be the last admin token)
        raise ConflictError(
            "a token cannot withdraw itself",
            hint="withdraw it with another admin token, or on the server with `accelenv token withdraw`",
        )
    return await run_in_threadpool(withdraw_submitter, state_of(request.app).engine, token_id)
