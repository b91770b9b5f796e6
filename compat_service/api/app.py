"""The app factory: `create_app(settings)` builds a FastAPI app over one database.

At creation it prepares the database: on the embedded SQLite default it migrates and loads the bundled
matrix into an empty database (no set-up); on PostgreSQL it requires the schema at head (run `accelenv db
upgrade` once) unless ``Settings.auto_migrate`` says otherwise, and refuses to start with
DatabaseNotReadyError. Several workers build one app each (`app_from_env`, a uvicorn factory).
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI
from fastapi.staticfiles import StaticFiles

from compat_service.api.deps import AppState
from compat_service.api.errors import install_error_handlers, unhandled_error_response
from compat_service.api.inputs.strict_query import strict_query
from compat_service.api.metrics import ServiceMetrics
from compat_service.api.middleware.body_limit import BodyLimitMiddleware
from compat_service.api.middleware.compression import LargeBodyCompression
from compat_service.api.middleware.head_requests import HeadRequestsMiddleware
from compat_service.api.middleware.http_cache import HttpCacheMiddleware
from compat_service.api.middleware.nul_guard import NulGuardMiddleware
from compat_service.api.middleware.observability import ObservabilityMiddleware, configure_logging, flush_log_lines
from compat_service.api.middleware.quota import QuotaMiddleware
from compat_service.api.openapi_doc import install_openapi
from compat_service.api.pages.routes import PAGE_CACHE_BYTES, PAGE_CACHE_SIZE, page_weight
from compat_service.api.pages.routes import static_files as pages_static
from compat_service.api.resolve_cache import LruCache, ResolveCache
from compat_service.api.routes import docs
from compat_service.api.server.gc_tuning import tune_for_service
from compat_service.api.server.lifecycle import announce_start, announce_stop
from compat_service.config import Settings, load_settings
from compat_service.db.engine import make_engine
from compat_service.db.evidence.lookup import EvidenceVersion
from compat_service.db.evidence.matrix_cells import MatrixRowsCache
from compat_service.db.evidence.queue import IngestQueue
from compat_service.db.matrix.loader import prepare_database
from compat_service.db.matrix.snapshot_follower import MatrixRepository
from compat_service.db.tokens import TokenCache

#: routers in include order (routes match in this order: the hot /v1/resolve first, the API's own documents
#: last); reports, evidence, matrix and probe are owned by other parts of the project; pages are the HTML site
#: (api/pages/)
ROUTERS = (
    "resolve", "health", "torch", "packages", "matrix", "ci_matrix", "reports", "evidence", "probe", "tokens",
    "metrics", "variants", "lock", "pages", "docs",
)
#: routers whose query strings strict_query does not check: GET /v1/resolve refuses an unknown name while
#: reading its query itself; Swagger UI's OAuth2 redirect carries the identity provider's parameters
UNCHECKED_QUERY = frozenset({"resolve", "docs"})
#: where a router's module lives when not under api/routes/ (the pages are a self-contained package)
ROUTER_MODULES = {"pages": "compat_service.api.pages.routes"}


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings if settings is not None else load_settings()
    configure_logging(settings.log_format)
    engine = make_engine(settings.database_url)
    try:
        prepare_database(
            engine,
            migrate_schema=settings.migrates_on_start(),
            load_matrix=settings.load_matrix_on_start,
            matrix_path=settings.matrix_path,
        )
    except BaseException:
        engine.dispose()
        raise

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if settings.tune_gc:
            tune_for_service()
        announce_start(state)
        yield
        flush_log_lines()  # the last turn's lines
        state.ingest_queue.close()
        engine.dispose()
        announce_stop(state, state.metrics.served)
        state.metrics.process_exiting()

    # the OpenAPI document and the docs pages are a router of our own (api/routes/docs.py), included last
    app = FastAPI(
        title="accelenv compatibility service",
        summary="Which PyTorch install works on this accelerator host — with evidence.",
        version="1",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
        telemetry=None if settings.opentelemetry else {"tracing": False, "metrics": False, "logs": False},
    )
    state = app.state.service = AppState(
        settings=settings,
        engine=engine,
        matrix_repository=MatrixRepository(
            engine, refresh_s=settings.matrix_refresh_s, resolver_memo_size=settings.resolver_memo_size
        ),
        resolve_cache=ResolveCache(settings.resolve_cache_size, max_bytes=settings.resolve_cache_bytes),
        evidence_version=EvidenceVersion(engine, refresh_s=settings.matrix_refresh_s),
        matrix_rows_cache=MatrixRowsCache(),
        ingest_queue=IngestQueue(engine, max_batch=settings.ingest_group_max),
        token_cache=TokenCache(settings.token_cache_s),
        metrics=ServiceMetrics(),
        page_cache=LruCache(PAGE_CACHE_SIZE, max_bytes=PAGE_CACHE_BYTES, weigh=page_weight),
    )
    install_error_handlers(app)
    for name in ROUTERS:
        module = importlib.import_module(ROUTER_MODULES.get(name, f"compat_service.api.routes.{name}"))
        # an unknown query parameter is a 422 naming the nearest known one (api/inputs/strict_query.py)
        checks = [] if name in UNCHECKED_QUERY else [Depends(strict_query)]
        app.include_router(module.router, dependencies=checks)
    install_openapi(app)
    app.mount("/static/site", pages_static, name="site-static")
    app.mount(docs.STATIC_URL, StaticFiles(directory=docs.STATIC_DIR), name="api-docs-static")
    # Added last = outermost: the size limit applies before anything reads the body.
    app.add_middleware(HttpCacheMiddleware, max_age_s=settings.cache_max_age_s)
    # the ETag is the uncompressed body's; HEAD runs as its GET (tag, compression and all) with no body
    app.add_middleware(LargeBodyCompression)
    app.add_middleware(HeadRequestsMiddleware)
    app.add_middleware(
        BodyLimitMiddleware,
        max_body_bytes=settings.max_body_bytes,
        limits_by_path={"/v1/reports/batch": settings.max_batch_body_bytes},
        read_timeout_s=settings.body_read_timeout_s,
    )
    app.add_middleware(NulGuardMiddleware)
    # before anything else of ours runs for the request (after observability, which logs the 429)
    app.add_middleware(
        QuotaMiddleware,
        requests_per_min=settings.quota_requests_per_min,
        token_requests_per_min=settings.quota_token_requests_per_min,
        bytes_per_min=settings.quota_bytes_per_min,
        refusals=state.metrics.quota_refusals,
    )
    # Outermost of ours: request id, access log, metrics, and the one log line of an unhandled error.
    app.add_middleware(
        ObservabilityMiddleware,
        metrics=state.metrics,
        access_log=settings.access_log,
        on_unhandled=unhandled_error_response,
    )
    return app


def app_from_env() -> FastAPI:
    """uvicorn factory for `accelenv serve --workers N`: each worker reads Settings from the environment."""
    return create_app(load_settings())
