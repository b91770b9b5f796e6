"""How a page reads the service: `compat_service.api.service_reads` (what the ``/v1`` routes answer), called
in this process with the visitor's token, each answer or refusal kept as an `ApiAnswer`.

No HTTP and no route function: the functions are the ones the routes call, under the same access rules (the
visitor's ``Authorization`` header is checked by the routes' own token functions), so a page never shows
what the API would refuse that visitor, and a refusal keeps the API's status and error body.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from sqlalchemy.exc import OperationalError
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from compat_service.api.deps import bearer_secret, state_of
from compat_service.api.errors import database_not_ready
from compat_service.api.middleware.observability import current_request_id
from compat_service.domain.errors import AccelenvError, error_json


@dataclass(frozen=True)
class ApiAnswer:
    """What the API answers for a read: its status and its JSON body (an error body for a refusal)."""

    status: int
    body: Any

    @property
    def ok(self) -> bool:
        return self.status == 200

    @property
    def error(self) -> dict[str, Any]:
        """The API's error body ({code, message, hint, ...}); empty for a success."""
        return self.body if not self.ok and isinstance(self.body, dict) else {}


def refusal(exc: AccelenvError) -> ApiAnswer:
    """An AccelenvError as the API's error answer (status, and the body its error handler writes)."""
    return ApiAnswer(exc.http_status, json.loads(error_json(exc, current_request_id())))


def answered(read: Callable[[], Any]) -> ApiAnswer:
    """``read()``'s JSON-ready answer, or the refusal it raises (a lost database as the API says it)."""
    try:
        return ApiAnswer(200, read())
    except AccelenvError as exc:
        return refusal(exc)
    except OperationalError:
        return refusal(database_not_ready())


async def read_service(request: Request, read: Callable[[Session, str | None], Any]) -> ApiAnswer:
    """``read(session, token)`` in a worker thread (database reads block), with a session of its own and the
    visitor's bearer token (None without one)."""
    secret = bearer_secret(request.headers.get("authorization"))

    def run() -> ApiAnswer:
        with Session(state_of(request.app).engine) as session:
            return answered(lambda: read(session, secret))

    return await run_in_threadpool(run)
