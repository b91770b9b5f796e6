"""API tokens: created once, stored only as a hash, revocable.

sha256 (no salt, no slow KDF) is enough here because the secret is 32 random bytes from ``secrets``: there is
no dictionary to attack and 2**256 guesses to brute-force, so a slow hash would only slow every request.
A token looks like ``acv_<43 url-safe characters>``; the prefix makes a leaked token easy to grep for.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from compat_service.db.engine import session_scope
from compat_service.db.models import ApiToken, ApiTokenCreate, ApiTokenPublic
from compat_service.domain.errors import AuthError, ForbiddenError, InvalidRequestError, NotFoundError

SCOPES: tuple[str, ...] = ("report", "admin")
TOKEN_PREFIX = "acv_"


def hash_token(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def create_token(engine: Engine, request: ApiTokenCreate) -> tuple[ApiTokenPublic, str]:
    """Store a new token; returns its public record and the secret (shown once, never stored)."""
    if request.scope not in SCOPES:
        raise InvalidRequestError(
            f"unknown token scope {request.scope!r}", hint=f"use one of: {', '.join(SCOPES)}"
        )
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with session_scope(engine) as session:
        row = ApiToken(
            scope=request.scope, note=request.note, token_hash=hash_token(secret), created_at=_now()
        )
        session.add(row)
        session.flush()
        public = ApiTokenPublic.model_validate(row, from_attributes=True)
    return public, secret


def revoke_token(engine: Engine, token_id: int) -> ApiTokenPublic:
    with session_scope(engine) as session:
        row = session.get(ApiToken, token_id)
        if row is None:
            raise NotFoundError(f"no token with id {token_id}", hint="`accelenv token list` shows the ids")
        if row.revoked_at is None:
            row.revoked_at = _now()
            session.flush()
        return ApiTokenPublic.model_validate(row, from_attributes=True)


def list_tokens(engine: Engine) -> list[ApiTokenPublic]:
    with Session(engine) as session:
        rows = session.exec(select(ApiToken).order_by(ApiToken.id)).all()  # type: ignore[arg-type]
        return [ApiTokenPublic.model_validate(r, from_attributes=True) for r in rows]


def authorize(session: Session, secret: str | None, scope: str) -> ApiTokenPublic:
    """The token behind ``secret`` if it is valid and carries ``scope`` (``admin`` may do everything)."""
    if not secret:
        raise AuthError(
            "this endpoint needs a token",
            hint="send `Authorization: Bearer <token>`; an admin creates one with `accelenv token create`",
        )
    row = session.exec(select(ApiToken).where(ApiToken.token_hash == hash_token(secret))).first()
    if row is None or row.revoked_at is not None:
        raise AuthError(
            "the token is unknown or revoked",
            hint="ask an admin for a new token (`accelenv token create --scope report`)",
        )
    if row.scope != scope and row.scope != "admin":
        raise ForbiddenError(
            f"the token has scope {row.scope!r}; this endpoint needs {scope!r}",
            hint=f"use a token created with `accelenv token create --scope {scope}`",
        )
    return ApiTokenPublic.model_validate(row, from_attributes=True)
