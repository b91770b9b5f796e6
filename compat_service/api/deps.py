"""The service's typed state and the dependency aliases the routers use: settings, a database session, the
loaded matrix, token scopes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param
from sqlalchemy.engine import Engine
from sqlmodel import Session
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool

from compat_service.api.metrics import ServiceMetrics
from compat_service.api.resolve_cache import LruCache, ResolveCache
from compat_service.config import Settings
from compat_service.db.evidence.lookup import EvidenceVersion
from compat_service.db.evidence.matrix_cells import MatrixRowsCache
from compat_service.db.evidence.queue import IngestQueue
from compat_service.db.matrix.snapshot_follower import MatrixRepository, MatrixSnapshot
from compat_service.db.matrix.tables import ApiTokenPublic
from compat_service.db.tokens import TokenCache, authorize


@dataclass(eq=False)
class AppState:
    """What one app holds for its lifetime, built once by `create_app` (``app.state.service``)."""

    settings: Settings
    engine: Engine
    #: the loaded matrix, followed in the database
    matrix_repository: MatrixRepository
    resolve_cache: ResolveCache
    #: the stamp of the evidence tables (answers that include evidence are cached under it)
    evidence_version: EvidenceVersion
    matrix_rows_cache: MatrixRowsCache
    ingest_queue: IngestQueue
    token_cache: TokenCache
    metrics: ServiceMetrics
    #: the pages' models (heatmaps) of this worker
    page_cache: LruCache[Any]
    #: GET /v1/ci-matrix's answers (routes/ci_matrix.py): a full matrix is ~0.6-1.5 MB, pipelines ask a few;
    #: bounded in bytes (CI_MATRIX_CACHE_BYTES), not only by count: 80 distinct answers once cost 100 MB
    ci_matrix_cache: LruCache[bytes] = field(
        default_factory=lambda: LruCache(64, max_bytes=CI_MATRIX_CACHE_BYTES, weigh=len)
    )


#: bytes of GET /v1/ci-matrix answers a worker keeps (a handful of full matrices)
CI_MATRIX_CACHE_BYTES = 8 * 1024 * 1024


def state_of(app: Starlette | Any) -> AppState:
    """The typed state of ``app`` (every reader of the app's state goes through here)."""
    state: AppState = app.state.service
    return state


# Plain attribute reads: async so FastAPI does not hop to a thread for them.
async def get_settings(request: Request) -> Settings:
    return state_of(request.app).settings


async def get_engine(request: Request) -> Engine:
    return state_of(request.app).engine


def get_session(request: Request) -> Iterator[Session]:
    with Session(state_of(request.app).engine) as session:
        yield session


async def get_matrix(request: Request) -> MatrixSnapshot:
    return await current_matrix(request.app)


async def current_matrix(app: Any) -> MatrixSnapshot:
    """The app's loaded matrix (for a raw ASGI endpoint, which has no Request)."""
    repository = state_of(app).matrix_repository
    # Steady state: a clock check, not worth a thread hop. A refresh queries the database: off the loop.
    if repository.is_fresh():
        return repository.current()
    return await run_in_threadpool(repository.current)


def get_current_matrix(request: Request) -> MatrixSnapshot:
    return state_of(request.app).matrix_repository.current(check_now=True)


#: Cache-Control of answers that depend on the caller's token
PRIVATE = {"Cache-Control": "private, no-store", "Vary": "Authorization"}

SettingsDep = Annotated[Settings, Depends(get_settings)]
EngineDep = Annotated[Engine, Depends(get_engine)]
SessionDep = Annotated[Session, Depends(get_session)]
MatrixDep = Annotated[MatrixSnapshot, Depends(get_matrix)]
#: the snapshot of the newest load, checked against the database now: for routes that also query the
#: matrix tables, so both halves of an answer describe the same load
CurrentMatrixDep = Annotated[MatrixSnapshot, Depends(get_current_matrix)]

_bearer = HTTPBearer(auto_error=False, description="a token from `accelenv token create`")
#: the bearer credentials alone (HTTPBearer is async: no thread hop), for a route that authorizes in the same
#: worker thread as its own database work (report ingest)
BearerDep = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


#: the same bearer scheme, for routes where the token is optional (published as such: openapi_doc.py)
OPTIONAL_BEARER_SCHEME = "HTTPBearerOptional"
_optional_bearer = HTTPBearer(auto_error=False, scheme_name=OPTIONAL_BEARER_SCHEME, description="optional")


def holds_scope(scope: str) -> Callable[..., bool]:
    """A dependency telling whether the request carries a valid token with ``scope`` (or ``admin``), for
    routes that answer everyone but tell token holders more. No token, or one of another scope: False;
    an unknown or revoked token: 401 (a typo must not look like "nothing to see")."""

    def check(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_optional_bearer)],
    ) -> bool:
        if credentials is None:
            return False
        with Session(state_of(request.app).engine) as session:  # connects only when the token is not cached
            return token_holds_scope(request.app, session, credentials.credentials, scope)

    return check


def require_scope(scope: str) -> Callable[..., ApiTokenPublic]:
    """A dependency admitting bearer tokens with ``scope`` (or ``admin``); 401 / 403 otherwise."""

    def check(
        request: Request,
        session: SessionDep,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> ApiTokenPublic:
        secret = credentials.credentials if credentials else None
        return token_with_scope(request.app, session, secret, scope)

    return check


def token_holds_scope(app: Any, session: Session, secret: str | None, scope: str) -> bool:
    """Whether ``secret`` is a valid token with ``scope`` (or ``admin``), for answers that tell token holders
    more. No token, or one of another scope: False; an unknown or revoked one: AuthError (401)."""
    if secret is None:
        return False
    token = authorize(session, secret, "report", state_of(app).token_cache, any_scope=True)
    return token.scope in (scope, "admin")


def token_with_scope(app: Any, session: Session, secret: str | None, scope: str) -> ApiTokenPublic:
    """The token behind ``secret`` if it carries ``scope`` (or ``admin``); AuthError / ForbiddenError else."""
    return authorize(session, secret, scope, state_of(app).token_cache)


def bearer_secret(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (None for none, or another scheme), read as
    the routes' ``HTTPBearer(auto_error=False)`` reads it (for a caller that is not a route: the pages)."""
    scheme, credentials = get_authorization_scheme_param(authorization)
    if not (authorization and scheme and credentials) or scheme.lower() != "bearer":
        return None
    return credentials
