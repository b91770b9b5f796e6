"""Request bodies of the report routes: one probe report, or a batch as a JSON array or as NDJSON.

Every problem becomes a ReportInvalidError whose causes name the place (``report checks.3.status``); a batch
item that fails gets its own error (an ``InvalidItem``) while the other items go on. NDJSON (one report per
line, ``Content-Type: application/x-ndjson``) is what `accelenv report submit` sends: each line is parsed
and reduced on its own, so a batch never holds more than one parsed report at a time, which measured
~2x cheaper than parsing a JSON array of 50 whole (benchmarks/bench_ingest.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from compat_service.domain.errors import Cause, ReportInvalidError, ReportTooLargeError
from compat_service.domain.evidence.report import NUL_ESCAPE, ProbeReport, nul_character_paths

#: causes listed in a report-invalid error; a broken report can have thousands of problems
MAX_CAUSES = 20
#: media types read as one report per line
NDJSON_TYPES = ("application/x-ndjson", "application/jsonl", "application/jsonlines")


@dataclass
class InvalidItem:
    """A batch item that fails the schema; ``report_id`` as sent, when it is a string."""

    report_id: str | None
    error: ReportInvalidError


def is_ndjson(content_type: str | None) -> bool:
    return (content_type or "").split(";")[0].strip().lower() in NDJSON_TYPES


def parse_report(body: bytes) -> ProbeReport:
    """Validate a request body against the probe report schema; every problem becomes a cause."""
    if not body.strip():
        raise ReportInvalidError(
            "the request body is empty; a probe report (JSON) was expected",
            hint="send the JSON written by `accelenv probe --output FILE`",
        )
    report = _validate(body, item="the request body")
    if isinstance(report, InvalidItem):
        raise report.error
    return report


def _validate(body: bytes, *, skip_loc: int = 0, item: str = "the report") -> ProbeReport | InvalidItem:
    try:
        report = ProbeReport.model_validate_json(body)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        if errors and errors[0]["type"] == "json_invalid":
            # not parsed again for its report_id: JSON pydantic refuses (nested too deep, say) could
            # exhaust Python's own parser
            return InvalidItem(None, ReportInvalidError(
                f"{item} is not valid JSON: {errors[0]['msg'].removeprefix('Invalid JSON: ')}",
                hint="send the JSON file written by `accelenv probe --output FILE` unchanged",
            ))
        return InvalidItem(_report_id_of(body), _schema_error(errors, skip_loc=skip_loc))
    if paths := nul_character_paths(report, body):
        return InvalidItem(str(report.report_id), _nul_error(paths))
    return report


def _report_id_of(body: bytes | Any) -> str | None:
    """The report_id an invalid item was sent with, if it has a readable one (for its result)."""
    if isinstance(body, bytes):
        try:
            body = json.loads(body)
        except (ValueError, RecursionError):
            return None
    report_id = body.get("report_id") if isinstance(body, dict) else None
    return report_id[:64] if isinstance(report_id, str) else None


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
        hint="produce reports with `accelenv probe`; GET /v1/schemas/probe-report is the schema they follow",
        causes=causes,
    )


def _nul_error(paths: list[str]) -> ReportInvalidError:
    return ReportInvalidError(
        f"the report holds NUL characters (\\u0000) in {len(paths)} place(s), which the store cannot keep",
        hint="remove the NUL characters (they usually come from reading binary output as text) and resend",
        causes=[Cause(constraint="no U+0000 in keys or strings", origin=path) for path in paths[:MAX_CAUSES]],
    )


_BATCH = TypeAdapter(list[ProbeReport])


def parse_batch(body: bytes, max_reports: int, *, ndjson: bool = False) -> Iterator[ProbeReport | InvalidItem]:
    """A batch body: one validated report, or why it is invalid, per item, in order.

    Raises (at once, before any item) ReportInvalidError when the body as a whole is not a non-empty JSON
    array (or NDJSON), and ReportTooLargeError when it holds more than ``max_reports`` items.
    """
    form = "NDJSON, one probe report per line" if ndjson else "a JSON array of probe reports"
    if not body.strip():
        raise ReportInvalidError(
            f"the request body is empty; {form} was expected",
            hint="send the reports written by `accelenv probe --output FILE`",
        )
    if ndjson:
        # numbered as in the body (blank lines are skipped but counted), so an error names the line to fix
        lines = [(n, line) for n, line in enumerate(body.split(b"\n"), start=1) if line.strip()]
        _check_count(len(lines), max_reports)
        return (_validate(line, item=f"line {n}") for n, line in lines)
    items = _parse_array(body)
    _check_count(len(items), max_reports)
    return iter(items)


def _check_count(count: int, max_reports: int) -> None:
    if count == 0:
        raise ReportInvalidError("the batch is empty", hint=f"send 1 to {max_reports} probe reports")
    if count > max_reports:
        raise ReportTooLargeError(
            f"the batch holds {count} reports; this service accepts at most {max_reports} per batch",
            hint=f"split it into batches of at most {max_reports} reports (service setting "
            "ACCELENV_MAX_BATCH_REPORTS)",
        )


def _parse_array(body: bytes) -> list[ProbeReport | InvalidItem]:
    try:
        # the whole array in one pass (in Rust): the common case, every item valid
        items: list[ProbeReport | InvalidItem] = list(_BATCH.validate_json(body))
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        if errors and errors[0]["type"] == "json_invalid":
            raise ReportInvalidError(
                f"the request body is not valid JSON: {errors[0]['msg'].removeprefix('Invalid JSON: ')}",
                hint="send a JSON array of the reports written by `accelenv probe --output FILE`",
            ) from None
        if any(not err["loc"] for err in errors):
            raise ReportInvalidError(
                "the batch body must be a JSON array of probe reports",
                hint="send `[report, report, ...]` (or NDJSON with Content-Type: application/x-ndjson); "
                "a single report goes to POST /v1/reports",
            ) from None
        by_item: dict[int, list[Any]] = {}
        for err in errors:
            by_item.setdefault(int(err["loc"][0]), []).append(err)
        items = [
            InvalidItem(_report_id_of(item), _schema_error(by_item[i], skip_loc=1))
            if i in by_item
            else ProbeReport.model_validate_json(json.dumps(item))
            for i, item in enumerate(json.loads(body))
        ]
    if NUL_ESCAPE in body:
        items = [
            InvalidItem(str(item.report_id), _nul_error(paths))
            if isinstance(item, ProbeReport) and (paths := nul_character_paths(item, body))
            else item
            for item in items
        ]
    return items
