"""`POST /v1/reports` (ingest a probe report; token scope `report`), `POST /v1/reports/batch` (many at once)
and `GET /v1/reports/{id}`.

A batch is a JSON array of 1 to ``Settings.max_batch_reports`` probe reports, stored in one transaction. The
answer is 200 with one result per item, in order: ``created``, ``exists`` (the same report is stored, or
came earlier in the batch), ``conflict`` (its report_id is stored, or came earlier, with other content) or
``invalid`` (it fails the schema). Items are independent: an invalid or conflicting item is refused with
its error and nothing of it is stored, while the valid items of the same batch are stored, so a fleet
resending a batch after fixing one report loses nothing and duplicates nothing (ingest is idempotent).
Only problems with the batch as a whole (not a JSON array, empty, too many items, bad token) refuse it all.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Request, Response
from fastapi.security import HTTPAuthorizationCredentials
from pydantic import BaseModel, TypeAdapter, ValidationError
from sqlalchemy.engine import Engine
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from compat_service.api.deps import BearerDep, SessionDep
from compat_service.db.evidence_ingest import ingest_report, ingest_reports
from compat_service.db.evidence_queries import get_report_json
from compat_service.db.tokens import authorize
from compat_service.domain.errors import Cause, ErrorBody, NotFoundError, ReportInvalidError
from compat_service.domain.evidence import CellKey, IngestResult, ReportConflictError, ReportTooLargeError
from compat_service.domain.report import NUL_ESCAPE, ProbeReport, nul_character_paths

router = APIRouter(prefix="/v1/reports", tags=["reports"])

#: causes listed in a report-invalid error; a broken report can have thousands of problems
MAX_CAUSES = 20


class ReportAccepted(BaseModel):
    report_id: str
    #: false when this report_id was already stored with the same content (nothing changed)
    created: bool
    cell: CellKey
    url: str


def parse_report(body: bytes) -> ProbeReport:
    """Validate a request body against the probe report schema; every problem becomes a cause."""
    if not body.strip():
        raise ReportInvalidError(
            "the request body is empty; a probe report (JSON) was expected",
            hint="send the JSON written by `accelenv probe --output FILE`",
        )
    try:
        report = ProbeReport.model_validate_json(body)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        _raise_if_not_json(errors)
        raise _schema_error(errors) from None
    if paths := nul_character_paths(report, body):
        raise _nul_error(paths)
    return report


def _nul_error(paths: list[str]) -> ReportInvalidError:
    return ReportInvalidError(
        f"the report holds NUL characters (\\u0000) in {len(paths)} place(s), which the store cannot keep",
        hint="remove the NUL characters (they usually come from reading binary output as text) and resend",
        causes=[Cause(constraint="no U+0000 in keys or strings", origin=path) for path in paths[:MAX_CAUSES]],
    )


def _raise_if_not_json(errors: list[Any]) -> None:
    if errors and errors[0]["type"] == "json_invalid":
        raise ReportInvalidError(
            f"the request body is not valid JSON: {errors[0]['msg'].removeprefix('Invalid JSON: ')}",
            hint="send the JSON file written by `accelenv probe --output FILE` unchanged",
        )


def _schema_error(errors: list[Any], *, skip_loc: int = 0) -> ReportInvalidError:
    """One report's validation errors as one error; ``skip_loc`` drops the batch index from locations."""
    causes = [
        Cause(
            constraint=str(err["msg"]),
            origin="report " + (".".join(str(p) for p in err["loc"][skip_loc:]) or "(whole body)"),
        )
        for err in errors[:MAX_CAUSES]
    ]
    more = f" (first {MAX_CAUSES} shown)" if len(errors) > MAX_CAUSES else ""
    return ReportInvalidError(
        f"the report does not match the probe report schema v1: {len(errors)} problem(s){more}",
        hint="produce reports with `accelenv probe`; the schema is compat_service/schemas/probe-report.v1.json",
        causes=causes,
    )


_BATCH = TypeAdapter(list[ProbeReport])


@dataclass
class InvalidItem:
    """A batch item that fails the schema; ``report_id`` as sent, when it is a string."""

    report_id: str | None
    error: ReportInvalidError


def parse_batch(body: bytes, max_reports: int) -> list[ProbeReport | InvalidItem]:
    """A batch body (a JSON array of reports): one validated report, or why it is invalid, per item.

    Raises ReportInvalidError when the body as a whole is not a non-empty JSON array, and
    ReportTooLargeError when it holds more than ``max_reports`` items.
    """
    if not body.strip():
        raise ReportInvalidError(
            "the request body is empty; a JSON array of probe reports was expected",
            hint="send a JSON array of the reports written by `accelenv probe --output FILE`",
        )
    try:
        # the whole array in one pass (in Rust): the common case, every item valid
        items: list[ProbeReport | InvalidItem] = list(_BATCH.validate_json(body))
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        _raise_if_not_json(errors)
        if any(not err["loc"] for err in errors):
            raise ReportInvalidError(
                "the batch body must be a JSON array of probe reports",
                hint="send `[report, report, ...]`; a single report goes to POST /v1/reports",
            ) from None
        by_item: dict[int, list[Any]] = {}
        for err in errors:
            by_item.setdefault(int(err["loc"][0]), []).append(err)
        raw = json.loads(body)
        items = [
            InvalidItem(_report_id_of(item), _schema_error(by_item[i], skip_loc=1))
            if i in by_item
            else ProbeReport.model_validate_json(json.dumps(item))
            for i, item in enumerate(raw)
        ]
    if NUL_ESCAPE in body:
        items = [
            InvalidItem(str(item.report_id), _nul_error(paths))
            if isinstance(item, ProbeReport) and (paths := nul_character_paths(item, body))
            else item
            for item in items
        ]
    if not items:
        raise ReportInvalidError(
            "the batch is empty", hint=f"send 1 to {max_reports} probe reports in the JSON array"
        )
    if len(items) > max_reports:
        raise ReportTooLargeError(
            f"the batch holds {len(items)} reports; this service accepts at most {max_reports} per batch",
            hint=f"split it into batches of at most {max_reports} reports (service setting "
            "ACCELENV_MAX_BATCH_REPORTS)",
        )
    return items


def _report_id_of(item: Any) -> str | None:
    report_id = item.get("report_id") if isinstance(item, dict) else None
    return report_id[:64] if isinstance(report_id, str) else None


_ERRORS = {
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
    body = await request.body()
    # Token check, validation and storage in ONE worker thread with one session: each sync dependency
    # would cost a thread hop of its own, a large share of a request's CPU at hundreds of reports/s.
    result = await run_in_threadpool(_authorize_and_ingest, request.app.state.engine, credentials, body)
    if not result.created:
        response.status_code = 200
    url = f"/v1/reports/{result.report_id}"
    response.headers["Location"] = url
    return ReportAccepted(report_id=result.report_id, created=result.created, cell=result.key, url=url)


def _authorize_and_ingest(
    engine: Engine, credentials: HTTPAuthorizationCredentials | None, body: bytes
) -> IngestResult:
    with Session(engine) as session:
        # the token first: an unauthorized caller learns nothing about its body
        authorize(session, credentials.credentials if credentials else None, "report")
        return ingest_report(session, parse_report(body))


class BatchItemResult(BaseModel):
    #: null when an invalid item has no readable report_id
    report_id: str | None
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
                }
            },
        }
    },
)
async def submit_batch(request: Request, credentials: BearerDep) -> BatchAccepted:
    body = await request.body()
    max_reports = request.app.state.settings.max_batch_reports
    results = await run_in_threadpool(
        _authorize_and_ingest_batch, request.app.state.engine, credentials, body, max_reports
    )
    return BatchAccepted(results=results)


def _authorize_and_ingest_batch(
    engine: Engine, credentials: HTTPAuthorizationCredentials | None, body: bytes, max_reports: int
) -> list[BatchItemResult]:
    with Session(engine) as session:
        authorize(session, credentials.credentials if credentials else None, "report")
        items = parse_batch(body, max_reports)
        valid = [item for item in items if isinstance(item, ProbeReport)]
        ingested = iter(ingest_reports(session, valid) if valid else [])
    results = []
    for item in items:
        if isinstance(item, InvalidItem):
            invalid = BatchItemResult(report_id=item.report_id, status="invalid", error=item.error.to_body())
            results.append(invalid)
            continue
        outcome = next(ingested)
        if isinstance(outcome, ReportConflictError):
            conflict = BatchItemResult(report_id=str(item.report_id), status="conflict", error=outcome.to_body())
            results.append(conflict)
        else:
            status = "created" if outcome.created else "exists"
            url = f"/v1/reports/{outcome.report_id}"
            results.append(BatchItemResult(report_id=outcome.report_id, status=status, url=url))
    return results


@router.get(
    "/{report_id}",
    summary="A stored probe report, as submitted (validated)",
    responses={200: {"description": "the probe report (schema v1)"}, 404: {"model": ErrorBody}},
)
def get_report(session: SessionDep, report_id: Annotated[uuid.UUID, Path(description="the report's UUID")]) -> Response:
    body = get_report_json(session, str(report_id))
    if body is None:
        raise NotFoundError(
            f"no report with id {report_id} is stored",
            hint="submit it with `accelenv report submit`, or check the id returned when it was submitted",
        )
    return Response(content=body, media_type="application/json")
