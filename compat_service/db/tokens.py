"""API tokens: created once, stored only as a hash, revocable.

sha256 (no salt, no slow KDF) is enough here because the secret is 32 random bytes from ``secrets``: there is
no dictionary to attack and 2**256 guesses to brute-force, so a slow hash would only slow every request.
A token looks like ``acv_<43 url-safe characters>``; the prefix makes a leaked token easy to grep for.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
import threading
import time

from cachetools import TTLCache
from pydantic import ValidationError
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from compat_service.db.engine import session_scope
from compat_service.db.matrix.tables import ApiToken, ApiTokenCreate, ApiTokenPublic
from compat_service.domain.errors import AuthError, Cause, ForbiddenError, InvalidRequestError, NotFoundError

#: report: submit probe reports; read: read raw reports (docs/service.md, what is public); admin: everything
SCOPES: tuple[str, ...] = ("report", "read", "admin")
TOKEN_PREFIX = "acv_"


def hash_token(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def token_request(scope: str, note: str | None, owner: str | None = None) -> ApiTokenCreate:
    """The request to create a token, checked against the model's own limits (scope, note length): each
    problem an InvalidRequestError cause naming the ``--scope`` / ``--note`` option, not a validation trace."""
    try:
        request = ApiTokenCreate(scope=scope, note=note, owner=owner)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        fields = [f"--{err['loc'][0]}" if err["loc"] else "the request" for err in errors]
        raise InvalidRequestError(
            f"invalid {', '.join(dict.fromkeys(fields))}",
            hint=f"--scope is one of {', '.join(SCOPES)}; shorten --note or --owner to the length each cause names",
            causes=[Cause(constraint=str(err["msg"]), origin=f"request: {field}",
                          detail=f"got {len(err['input'])} characters" if isinstance(err.get("input"), str) else None)
                    for field, err in zip(fields, errors, strict=True)],
        ) from None
    if request.scope not in SCOPES:
        raise InvalidRequestError(
            f"unknown token scope {request.scope!r}", hint=f"use one of: {', '.join(SCOPES)}",
            causes=[Cause(constraint=f"--scope in {{{', '.join(SCOPES)}}}", origin="request: --scope")],
        )
    return request


def create_token(engine: Engine, request: ApiTokenCreate) -> tuple[ApiTokenPublic, str]:
    """Store a new token; returns its public record and the secret (shown once, never stored)."""
    if request.scope not in SCOPES:
        raise InvalidRequestError(
            f"unknown token scope {request.scope!r}", hint=f"use one of: {', '.join(SCOPES)}"
        )
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with session_scope(engine) as session:
        first = None
        if request.owner is not None:
            # the owner's first token: every token of one owner counts as that one submitter
            first = session.exec(
                select(ApiToken.id).where(ApiToken.owner == request.owner).order_by(ApiToken.id)
            ).first()
        row = ApiToken(
            scope=request.scope, note=request.note, owner=request.owner, token_hash=hash_token(secret),
            created_at=_now(),
        )
        session.add(row)
        session.flush()
        row.owner_key = first if first is not None else row.id
        row.owner = row.owner or f"token-{row.id}"
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


class TokenCache:
    """Tokens found valid, remembered by one service worker for ``ttl_s`` seconds.

    Every report submission is authorized; looking the token up each time was ~15 % of a worker's CPU at
    hundreds of reports a second (an ORM query and a round trip). The price: a revoked token keeps working
    on a worker that saw it valid for up to ``ttl_s`` seconds (``ACCELENV_TOKEN_CACHE_S``; 0 = look it up on
    every request). Unknown and revoked tokens are never remembered, so a new token works at once.
    """

    def __init__(self, ttl_s: float, max_entries: int = 1024) -> None:
        self.ttl_s = ttl_s
        # cachetools' TTL cache (expired entries go first, then the least recently used); None: caching off
        # (a TTL of 0 remembers nothing, and TTLCache wants a positive one)
        self._entries: TTLCache[str, ApiTokenPublic] | None = (
            TTLCache(maxsize=max_entries, ttl=ttl_s, timer=time.monotonic) if ttl_s > 0 else None
        )
        self._lock = threading.Lock()  # cachetools' caches are not thread-safe; a read reorders them too

    def get(self, token_hash: str) -> ApiTokenPublic | None:
        if self._entries is None:
            return None
        with self._lock:
            return self._entries.get(token_hash)

    def put(self, token_hash: str, token: ApiTokenPublic) -> None:
        if self._entries is None:
            return
        with self._lock:
            self._entries[token_hash] = token


def authorize(
    session: Session, secret: str | None, scope: str, cache: TokenCache | None = None, *, any_scope: bool = False
) -> ApiTokenPublic:
    """The token behind ``secret`` if it is valid and carries ``scope`` (``admin`` may do everything; with
    ``any_scope`` any valid token is returned, whatever its scope)."""
    if not secret:
        raise AuthError(
            f"this endpoint needs a token with scope {scope!r}",
            hint="send `Authorization: Bearer <token>`; an admin creates one with "
            f"`accelenv token create --scope {scope}`",
        )
    token_hash = hash_token(secret)
    token = cache.get(token_hash) if cache is not None else None
    if token is None:
        row = session.exec(select(ApiToken).where(ApiToken.token_hash == token_hash)).first()
        if row is None or row.revoked_at is not None:
            raise AuthError(
                "the token is unknown or revoked",
                hint="ask an admin for a new token (`accelenv token create --scope report`)",
            )
        token = ApiTokenPublic.model_validate(row, from_attributes=True)
        if cache is not None:
            cache.put(token_hash, token)
    if not any_scope and token.scope != scope and token.scope != "admin":
        raise ForbiddenError(
            f"the token has scope {token.scope!r}; this endpoint needs {scope!r}",
            hint=f"use a token created with `accelenv token create --scope {scope}`",
        )
    return token
