"""Tokens: shown once, stored as a hash, scoped, revocable."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from compat_service.db.matrix.tables import ApiToken, ApiTokenCreate
from compat_service.db.tokens import authorize, create_token, hash_token, list_tokens, revoke_token
from compat_service.domain.errors import AuthError, ForbiddenError, InvalidRequestError, NotFoundError


def test_only_the_hash_is_stored(engine: Engine) -> None:
    public, secret = create_token(engine, ApiTokenCreate(scope="report", note="ci runner"))
    with Session(engine) as session:
        row = session.exec(select(ApiToken)).one()
    assert row.token_hash == hash_token(secret)
    assert secret not in row.model_dump_json()
    assert secret.startswith("acv_") and len(secret) > 40
    assert public.note == "ci runner" and public.revoked_at is None


@pytest.mark.parametrize(
    ("token_scope", "needed", "outcome"),
    [
        ("report", "report", None),
        ("admin", "report", None),
        ("admin", "admin", None),
        ("report", "admin", "forbidden"),
    ],
    ids=["report-for-report", "admin-for-report", "admin-for-admin", "report-for-admin"],
)
def test_scopes(engine: Engine, token_scope: str, needed: str, outcome: str | None) -> None:
    public, secret = create_token(engine, ApiTokenCreate(scope=token_scope))
    with Session(engine) as session:
        if outcome is None:
            assert authorize(session, secret, needed).id == public.id
        else:
            with pytest.raises(ForbiddenError) as info:
                authorize(session, secret, needed)
            assert info.value.code == outcome


def test_revoked_unknown_and_missing_tokens_are_unauthorized(engine: Engine) -> None:
    public, secret = create_token(engine, ApiTokenCreate(scope="admin"))
    revoked = revoke_token(engine, public.id)
    assert revoked.revoked_at is not None
    with Session(engine) as session:
        for candidate in (secret, "acv_not-a-token", None, ""):
            with pytest.raises(AuthError) as info:
                authorize(session, candidate, "report")
            assert info.value.code == "unauthorized"


def test_list_and_errors(engine: Engine) -> None:
    create_token(engine, ApiTokenCreate(scope="report", note="a"))
    create_token(engine, ApiTokenCreate(scope="admin", note="b"))
    assert [(t.scope, t.note) for t in list_tokens(engine)] == [("report", "a"), ("admin", "b")]
    with pytest.raises(InvalidRequestError):
        create_token(engine, ApiTokenCreate(scope="root"))
    with pytest.raises(NotFoundError):
        revoke_token(engine, 999)
