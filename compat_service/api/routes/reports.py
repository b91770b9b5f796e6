"""`POST /v1/reports` (ingest a probe report; token scope `report`) and `GET /v1/reports/{id}`."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Path, Request, Response
from fastapi.security import HTTPAuthorizationCredentials
from pydantic import BaseModel, ValidationError
from sqlalchemy.engine import Engine
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from compat_service.api.deps import BearerDep, SessionDep
from compat_service.db.evidence_ingest import ingest_report
from compat_service.db.evidence_queries import get_report_json
from compat_service.db.tokens import authorize
from compat_service.domain.errors import Cause, ErrorBody, NotFoundError, ReportInvalidError
from compat_service.domain.evidence import CellKey, IngestResult
from compat_service.domain.report import ProbeReport

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
        return ProbeReport.model_validate_json(body)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        if errors and errors[0]["type"] == "json_invalid":
            raise ReportInvalidError(
                f"the request body is not valid JSON: {errors[0]['msg'].removeprefix('Invalid JSON: ')}",
                hint="send the JSON file written by `accelenv probe --output FILE` unchanged",
            ) from None
        causes = [
            Cause(
                constraint=str(err["msg"]),
                origin="report " + (".".join(str(p) for p in err["loc"]) or "(whole body)"),
            )
            for err in errors[:MAX_CAUSES]
        ]
        more = f" (first {MAX_CAUSES} shown)" if len(errors) > MAX_CAUSES else ""
        raise ReportInvalidError(
            f"the report does not match the probe report schema v1: {len(errors)} problem(s){more}",
            hint="produce reports with `accelenv probe`; the schema is compat_service/schemas/probe-report.v1.json",
            causes=causes,
        ) from None


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
