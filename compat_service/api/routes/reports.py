"""`POST /v1/reports` (ingest a probe report; token scope `report`), `POST /v1/reports/batch` (many at once)
and `GET /v1/reports/{id}`.

A batch is a JSON array, or NDJSON (``Content-Type: application/x-ndjson``, one report per line), of 1 to
``Settings.max_batch_reports`` probe reports, stored in one transaction (bodies: ``report_bodies``). The
answer is 200 with one result per item, in order: ``created``, ``exists`` (the same report is stored, or
came earlier in the batch), ``conflict`` (its report_id is stored, or came earlier, with other content) or
``invalid`` (it fails the schema). Items are independent: an invalid or conflicting item is refused with
its error and nothing of it is stored, while the valid items of the same batch are stored, so a fleet
resending a batch after fixing one report loses nothing and duplicates nothing (ingest is idempotent).
Only problems with the batch as a whole (not a JSON array, empty, too many items, bad token) refuse it all.

A single report joins its worker's ingest queue (``compat_service.db.evidence.queue``): reports submitted at
the same time are stored in one transaction, each answered as if stored alone.
"""

from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import Future
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Request, Response
from fastapi.security import HTTPAuthorizationCredentials
from pydantic import BaseModel
from sqlalchemy.engine import Engine
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from compat_service.api.deps import PRIVATE, BearerDep, SessionDep, require_scope, state_of
from compat_service.api.inputs.report_bodies import InvalidItem, is_ndjson, parse_batch, parse_report
from compat_service.api.service_reads import report_json
from compat_service.db.evidence.ingest import ingest_prepared
from compat_service.db.evidence.prepare import PreparedReport, prepare_report, utcnow
from compat_service.db.evidence.queue import IngestQueue
from compat_service.db.matrix.tables import ApiTokenPublic
from compat_service.db.tokens import TokenCache, authorize, hash_token
from compat_service.domain.errors import (
    AccelenvError,
    AuthError,
    ErrorBody,
    ReportConflictError,
    ReportInvalidError,
)
from compat_service.domain.evidence.cells import CellKey, IngestResult
from compat_service.domain.evidence.report import ProbeReport

router = APIRouter(prefix="/v1/reports", tags=["reports"])

class ReportAccepted(BaseModel):
    report_id: str
    #: false when this report_id was already stored with the same content (nothing changed)
    created: bool
    cell: CellKey
    url: str


_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody}
    for status in (401, 403, 409, 413, 422, 503)
}


@router.post(
    "",
    summary="Submit a probe report (201 stored, 200 already stored)",
    status_code=201,
    response_model=ReportAccepted,
    responses={200: {"model": ReportAccepted, "description": "already stored; nothing changed"}, **_ERRORS},
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": ProbeReport.model_json_schema()}},
        }
    },
)
async def submit_report(request: Request, response: Response, credentials: BearerDep) -> ReportAccepted:
    state = state_of(request.app)
    # the token first, from the headers alone: an unauthorized caller's body is never read
    token = await token_before_body(state.engine, state.token_cache, credentials)
    body = await request.body()
    # validation in one worker thread; the report then joins the worker's ingest queue, stored with
    # whatever else is queued
    quota = state.settings.quota_token_report_bytes
    queued = await run_in_threadpool(_prepare_and_queue, state.ingest_queue, token, body, quota)
    result = await asyncio.wrap_future(queued)
    if isinstance(result, AccelenvError):
        raise result
    if not result.created:
        response.status_code = 200
    url = f"/v1/reports/{result.report_id}"
    response.headers["Location"] = url
    return ReportAccepted(report_id=result.report_id, created=result.created, cell=result.key, url=url)


def _authorize(engine: Engine, tokens: TokenCache, secret: str | None) -> ApiTokenPublic:
    with Session(engine) as session:  # connects only when the token is not cached
        return authorize(session, secret, "report", tokens)


async def token_before_body(
    engine: Engine, tokens: TokenCache, credentials: HTTPAuthorizationCredentials | None
) -> ApiTokenPublic:
    """The `report` token of a submission, decided before its body is read (a 401 costs no upload): no
    token or a cached one is decided on the event loop, an unknown one is looked up in a worker thread."""
    secret = credentials.credentials if credentials else None
    if secret and tokens.get(hash_token(secret)) is None:
        return await run_in_threadpool(_authorize, engine, tokens, secret)
    return _authorize(engine, tokens, secret)


def _prepare_and_queue(
    ingest_queue: IngestQueue, token: ApiTokenPublic, body: bytes, byte_quota: int
) -> Future[IngestResult | AccelenvError]:
    report = parse_report(body)
    prepared = prepare_report(report, submitter_id=token.id, owner_key=token.counted_as, byte_quota=byte_quota)
    return ingest_queue.submit(prepared)


class BatchItemResult(BaseModel):
    #: absent when an invalid item has no readable report_id
    report_id: str | None = None
    status: Literal["created", "exists", "conflict", "invalid"]
    #: where a created or existing report is stored
    url: str | None = None
    #: why a conflicting or invalid item was refused
    error: ErrorBody | None = None


class BatchAccepted(BaseModel):
    #: one per submitted item, in order
    results: list[BatchItemResult]


_REPORT_SCHEMA = ProbeReport.model_json_schema()


@router.post(
    "/batch",
    summary="Submit many probe reports at once (200, one result per item)",
    response_model=BatchAccepted,
    response_model_exclude_none=True,
    responses={status: {"model": ErrorBody} for status in (401, 403, 413, 422, 503)},
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {
                        "type": "array",
                        "minItems": 1,
                        "items": {k: v for k, v in _REPORT_SCHEMA.items() if k != "$defs"},
                        "$defs": _REPORT_SCHEMA.get("$defs", {}),
                    }
                },
                # one report (the same schema) per line; what `accelenv report submit` sends
                # not blank: the server strips ASCII whitespace (bytes.strip) and refuses an empty body
                "application/x-ndjson": {
                    "schema": {"type": "string", "minLength": 1, "pattern": "[^\\u0009-\\u000d\\u0020]"}
                },
            },
        }
    },
)
async def submit_batch(request: Request, credentials: BearerDep) -> BatchAccepted:
    state = state_of(request.app)
    token = await token_before_body(state.engine, state.token_cache, credentials)
    body = await request.body()
    ndjson = is_ndjson(request.headers.get("content-type"))
    settings = state.settings
    results = await run_in_threadpool(
        _ingest_batch, state.engine, token, body, settings.max_batch_reports, ndjson, settings.max_body_bytes,
        settings.quota_token_report_bytes,
    )
    return BatchAccepted(results=results)


def _ingest_batch(
    engine: Engine, token: ApiTokenPublic, body: bytes, max_reports: int, ndjson: bool, max_item_bytes: int,
    byte_quota: int,
) -> list[BatchItemResult]:
    now = utcnow()
    # each parsed report is reduced at once, so the batch holds compact records, not object trees; no
    # database connection is held meanwhile
    items = [
        _prepare_item(item, now, token, byte_quota) if isinstance(item, ProbeReport) else item
        for item in parse_batch(body, max_reports, ndjson=ndjson, max_item_bytes=max_item_bytes)
    ]
    valid = [item for item in items if not isinstance(item, InvalidItem)]
    with Session(engine) as session:
        ingested = iter(ingest_prepared(session, valid, now=now) if valid else [])
    results = []
    for item in items:
        if isinstance(item, InvalidItem):
            invalid = BatchItemResult(report_id=item.report_id, status="invalid", error=item.error.to_body())
            results.append(invalid)
            continue
        outcome = next(ingested)
        if isinstance(outcome, AuthError):  # the token was revoked meanwhile: nothing of the batch is stored
            raise outcome
        if isinstance(outcome, ReportConflictError):
            conflict = BatchItemResult(report_id=item.report_id, status="conflict", error=outcome.to_body())
            results.append(conflict)
        elif isinstance(outcome, AccelenvError):  # any other refusal answers the whole batch with its error
            raise outcome
        else:
            status = "created" if outcome.created else "exists"
            url = f"/v1/reports/{outcome.report_id}"
            results.append(BatchItemResult(report_id=outcome.report_id, status=status, url=url))
    return results


def _prepare_item(
    report: ProbeReport, now: datetime, token: ApiTokenPublic, byte_quota: int
) -> PreparedReport | InvalidItem:
    """A batch item reduced for ingest, or why it cannot be stored: the other items go on."""
    try:
        return prepare_report(report, now, submitter_id=token.id, owner_key=token.counted_as, byte_quota=byte_quota)
    except ReportInvalidError as exc:
        return InvalidItem(str(report.report_id), exc)


@router.get(
    # the uuid convertor: GET /v1/reports/batch is a 405 (POST only there), not an invalid id
    "/{report_id:uuid}",
    summary="A stored probe report, as stored (validated, summary derived); needs a `read` token",
    responses={
        200: {"description": "the probe report (schema v1)"},
        **{status: {"model": ErrorBody} for status in (401, 403, 404)},
    },
)
def get_report(
    session: SessionDep,
    _reader: Annotated[ApiTokenPublic, Depends(require_scope("read"))],
    report_id: Annotated[uuid.UUID, Path(description="the report's UUID")],
) -> Response:
    body = report_json(session, report_id)
    # raw reports are for token holders: no shared cache may keep one
    return Response(content=body, media_type="application/json", headers=PRIVATE)
