"""The start-up and stop lines each worker writes (``accelenv.service`` logger).

``accelenv worker 1234 listening on http://127.0.0.1:8000 database=sqlite:////…/accelenv.sqlite3
matrix=1f2e3d4c5b6a7988 cells=12345`` when the worker is ready, ``accelenv worker 1234 stopped after 42
requests`` when it stops. The URL is the one `accelenv serve` bound (the real port for ``--port 0``),
handed to the workers in ``ACCELENV_LISTEN_URL``; the database is named without its password.
"""

from __future__ import annotations

import os
from typing import Any

from compat_service.api.middleware.observability import service_log
from compat_service.db.engine import describe
from compat_service.db.evidence.queries import declared_for
from compat_service.domain.errors import AccelenvError


def matrix_summary(state: Any) -> tuple[str, int] | None:
    """(matrix version, declared cells) of the loaded matrix, or None while none is loaded."""
    try:
        snapshot = state.matrix_repository.current()
    except AccelenvError:
        return None
    return snapshot.version, len(declared_for(snapshot.content_hash, snapshot.data).cells)


def announce_start(state: Any) -> None:
    settings = state.settings
    url = settings.listen_url or "the address the ASGI server was given"
    database = describe(state.engine)
    summary = matrix_summary(state)
    version, cells = summary if summary is not None else ("none-loaded", 0)
    if summary is not None:
        state.metrics.set_matrix(version, cells)
    pid = os.getpid()
    service_log.info(
        "accelenv worker %d listening on %s database=%s matrix=%s cells=%d",
        pid, url, database, version, cells,
        extra={"event": "start", "pid": pid, "url": url, "database": database, "matrix_version": version,
               "matrix_cells": cells},
    )


def announce_stop(state: Any, requests: int) -> None:
    pid = os.getpid()
    service_log.info(
        "accelenv worker %d stopped after %d requests", pid, requests, extra={"event": "stop", "pid": pid}
    )
