"""Request bodies of the report routes: one probe report, or a batch as a JSON array or as NDJSON.

Every problem becomes a ReportInvalidError whose causes name the place (``report checks.3.status``); a batch
item that fails gets its own error (an ``InvalidItem``) while the other items go on. NDJSON (one report per
line, ``Content-Type: application/x-ndjson``) is what `accelenv report submit` sends.

**Count before you parse.** A batch body is first scanned for its items' boundaries (`_array_items`,
`_ndjson_lines`: a regular expression over the structural bytes and strings, in C, building no object),
and refused as a whole (413) as soon as it holds more than ``max_reports`` items or an item longer than
``max_item_bytes``: a 2 MB array of ``{}`` stops at its 101st item, where validating it first once took a
worker into the gigabytes (issue 34). Only then is each item validated, one at a time, so a batch never
holds more than one item's parsed objects or validation errors. A report's validation errors are read
without their input values and cut to ``MAX_CAUSES``; a report with more unknown keys than ``MAX_UNKNOWN_KEYS``
at its top level is refused before validation (each unknown key was otherwise one error object).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from pydantic_core import from_json

from compat_service.domain.errors import Cause, ReportInvalidError, ReportTooLargeError
from compat_service.domain.evidence.report import ProbeReport, nul_character_paths

#: causes listed in a report-invalid error; a broken report can have thousands of problems
MAX_CAUSES = 20
#: longest text of one cause (a pydantic message can quote a long input)
MAX_CAUSE_CHARS = 300
#: media types read as one report per line
NDJSON_TYPES = ("application/x-ndjson", "application/jsonl", "application/jsonlines")
#: deepest nesting the batch scanner follows (a report nests ~6 levels; pydantic's own JSON parser stops at 200)
MAX_DEPTH = 200

#: a JSON string (escapes included), a lone quote (an unterminated string), or a structural byte
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|"|[\[\]{},]', re.DOTALL)
#: everything up to the next bracket (or lone quote), strings whole
_SKIP = re.compile(rb'(?:[^"\[\]{}]++|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+', re.DOTALL)
#: an NDJSON line holding something besides whitespace
_LINE = re.compile(rb"[^\s][^\n]*")
_NONBLANK = re.compile(rb"\S")
_OPEN = {ord("["): ord("]"), ord("{"): ord("}")}
_QUOTE, _COMMA, _ARRAY_END = ord('"'), ord(","), ord("]")


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


def _validate(body: bytes, *, item: str = "the report") -> ProbeReport | InvalidItem:
    try:
        # pydantic's own parser (what validation reads too): NaN, 1e309 and big integers parse here and are
        # refused by the schema with their place named
        parsed = from_json(body, allow_inf_nan=True, cache_strings="keys")
    except ValueError as exc:
        return InvalidItem(None, ReportInvalidError(
            f"{item} is not valid JSON: {exc}",
            hint="send the JSON file written by `accelenv probe --output FILE` unchanged",
        ))
    unknown: list[str] = []
    _unknown_keys(parsed, _REPORT_SHAPE, "report", unknown)
    if unknown:
        return InvalidItem(_report_id_of(parsed), _unknown_keys_error(unknown))
    try:
        report = ProbeReport.model_validate_json(body)
    except ValidationError as exc:
        return InvalidItem(_report_id_of(parsed), _schema_error(exc))
    if paths := nul_character_paths(report, body):
        return InvalidItem(str(report.report_id), _nul_error(paths))
    return report


def _report_id_of(parsed: Any) -> str | None:
    """The report_id an invalid item was sent with, if it has a readable one (for its result)."""
    report_id = parsed.get("report_id") if isinstance(parsed, dict) else None
    return report_id[:64] if isinstance(report_id, str) else None


_SCHEMA = ProbeReport.model_json_schema()


@dataclass
class _Shape:
    """What the unknown-key walk needs of a schema node: the keys an object may hold (None: any), and the
    shape of each key's value, or of a list's items, where one is worth walking."""

    keys: frozenset[str] | None = None
    children: dict[str, _Shape] | None = None
    items: _Shape | None = None


def _shape(schema: dict[str, Any]) -> _Shape | None:
    if "$ref" in schema:
        schema = _SCHEMA["$defs"][schema["$ref"].rsplit("/", 1)[1]]
    for option in schema.get("anyOf", ()):
        if (found := _shape(option)) is not None:
            return found
    if "properties" in schema and schema.get("additionalProperties") is False:
        children = {key: child for key, sub in schema["properties"].items() if (child := _shape(sub)) is not None}
        return _Shape(keys=frozenset(schema["properties"]), children=children)
    if "items" in schema and (items := _shape(schema["items"])) is not None:
        return _Shape(items=items)
    return None


_REPORT_SHAPE = _shape(_SCHEMA)


def _unknown_keys(value: Any, shape: _Shape | None, path: str, found: list[str]) -> None:
    """Collect (up to ``MAX_CAUSES``) keys of ``value`` that its schema does not allow, walking the objects
    whose schema forbids other keys: each such key was otherwise one validation error, its input kept."""
    if shape is None:
        return
    if shape.keys is not None and isinstance(value, dict):
        _unknown_object_keys(value, shape.keys, shape.children or {}, path, found)
    elif shape.items is not None and isinstance(value, list):
        for i, item in enumerate(value):
            _unknown_keys(item, shape.items, f"{path}.{i}", found)
            if len(found) == MAX_CAUSES:
                return


def _unknown_object_keys(
    value: dict[str, Any], keys: frozenset[str], children: dict[str, _Shape], path: str, found: list[str]
) -> None:
    """``_unknown_keys`` for an object whose schema lists its keys: its own unknown keys, then its children's."""
    if extra := value.keys() - keys:
        found.extend(f"{path}.{key}"[:MAX_CAUSE_CHARS] for key in sorted(extra)[:MAX_CAUSES - len(found)])
        if len(found) == MAX_CAUSES:
            return
    for key, child in children.items():
        if key in value:
            _unknown_keys(value[key], child, f"{path}.{key}", found)
            if len(found) == MAX_CAUSES:
                return


def _unknown_keys_error(keys: list[str]) -> ReportInvalidError:
    more = f" (first {MAX_CAUSES} shown)" if len(keys) == MAX_CAUSES else ""
    return ReportInvalidError(
        f"the report holds keys the probe report schema v1 does not know{more}",
        hint="send reports as `accelenv probe` writes them; GET /v1/schemas/probe-report is the schema",
        causes=[Cause(constraint="no keys besides the schema's", origin=key) for key in keys],
    )


def _schema_error(exc: ValidationError) -> ReportInvalidError:
    """One report's validation errors as one error, at most ``MAX_CAUSES`` causes of bounded length."""
    count = exc.error_count()
    errors = exc.errors(include_url=False, include_input=False, include_context=False)[:MAX_CAUSES]
    causes = [
        Cause(
            constraint=str(err["msg"])[:MAX_CAUSE_CHARS],
            origin=("report " + (".".join(str(p) for p in err["loc"]) or "(whole body)"))[:MAX_CAUSE_CHARS],
        )
        for err in errors
    ]
    more = f" (first {MAX_CAUSES} shown)" if count > MAX_CAUSES else ""
    return ReportInvalidError(
        f"the report does not match the probe report schema v1: {count} problem(s){more}",
        hint="produce reports with `accelenv probe`; GET /v1/schemas/probe-report is the schema they follow",
        causes=causes,
    )


def _nul_error(paths: list[str]) -> ReportInvalidError:
    return ReportInvalidError(
        f"the report holds NUL characters (\\u0000) in {len(paths)} place(s), which the store cannot keep",
        hint="remove the NUL characters (they usually come from reading binary output as text) and resend",
        causes=[Cause(constraint="no U+0000 in keys or strings", origin=path) for path in paths[:MAX_CAUSES]],
    )


def parse_batch(
    body: bytes, max_reports: int, *, ndjson: bool = False, max_item_bytes: int | None = None
) -> Iterator[ProbeReport | InvalidItem]:
    """A batch body: one validated report, or why it is invalid, per item, in order.

    Raises (at once, before any item is parsed) ReportInvalidError when the body as a whole is not a
    non-empty JSON array (or NDJSON), and ReportTooLargeError when it holds more than ``max_reports`` items
    or an item longer than ``max_item_bytes``. Items are validated as the iterator is read.
    """
    form = "NDJSON, one probe report per line" if ndjson else "a JSON array of probe reports"
    if not _NONBLANK.search(body):
        raise ReportInvalidError(
            f"the request body is empty; {form} was expected",
            hint="send the reports written by `accelenv probe --output FILE`",
        )
    limit = max_item_bytes or len(body)
    if ndjson:
        # numbered as in the body (blank lines are skipped but counted), so an error names the line to fix
        lines = _ndjson_lines(body, max_reports, limit)
        return (_validate(body[start:end], item=f"line {n}") for n, start, end in lines)
    spans = _array_items(body, max_reports, limit)
    return (_validate(body[start:end], item=f"item {i}") for i, (start, end) in enumerate(spans))


def _too_many(max_reports: int) -> ReportTooLargeError:
    return ReportTooLargeError(
        f"the batch holds more than {max_reports} reports; this service accepts at most {max_reports} per batch",
        hint=f"split it into batches of at most {max_reports} reports (service setting "
        "ACCELENV_MAX_BATCH_REPORTS)",
    )


def _item_too_large(where: str, limit: int) -> ReportTooLargeError:
    return ReportTooLargeError(
        f"{where} of the batch is larger than a report may be ({limit} bytes)",
        hint="a single report is limited by the service setting ACCELENV_MAX_BODY_BYTES; send reports as "
        "`accelenv probe --output FILE` writes them",
    )


def _empty(max_reports: int) -> ReportInvalidError:
    return ReportInvalidError("the batch is empty", hint=f"send 1 to {max_reports} probe reports")


def _not_json(why: str) -> ReportInvalidError:
    return ReportInvalidError(
        f"the request body is not valid JSON: {why}",
        hint="send a JSON array of the reports written by `accelenv probe --output FILE`",
    )


def _ndjson_lines(body: bytes, max_reports: int, limit: int) -> list[tuple[int, int, int]]:
    """(line number, start, end) of each non-blank line, checked for count and length before any is parsed."""
    lines: list[tuple[int, int, int]] = []
    line_no, counted_to = 1, 0
    for match in _LINE.finditer(body):
        if len(lines) == max_reports:
            raise _too_many(max_reports)
        line_no += body.count(b"\n", counted_to, match.start())
        counted_to = match.start()
        if match.end() - match.start() > limit:
            raise _item_too_large(f"line {line_no}", limit)
        lines.append((line_no, match.start(), match.end()))
    if not lines:
        raise _empty(max_reports)
    return lines


def _array_items(body: bytes, max_reports: int, limit: int) -> list[tuple[int, int]]:
    """(start, end) of each item of a JSON array body, found by its top-level commas; the body is refused
    as a whole when it is not an array, holds too many items, an item too long or brackets that do not match.

    Inside an item, `_SKIP` passes over everything but brackets (strings whole) in C, so the loop runs once
    per bracket; between items, `_TOKEN` finds the next string, comma or bracket."""
    opened = _NONBLANK.search(body).start()  # type: ignore[union-attr]  # parse_batch refused a blank body
    if body[opened] != ord("["):
        if body[opened] == ord("{"):
            raise ReportInvalidError(
                "the batch body must be a JSON array of probe reports",
                hint="send `[report, report, ...]` (or NDJSON with Content-Type: application/x-ndjson); "
                "a single report goes to POST /v1/reports",
            )
        raise _not_json("it does not start with `[`")
    closers: list[int] = []  # the closing byte each open bracket inside the array waits for
    items: list[tuple[int, int]] = []
    start = pos = opened + 1
    size = len(body)
    while True:
        if closers:  # inside an item
            pos = _SKIP.match(body, pos).end()  # type: ignore[union-attr]  # it matches the empty string
            if pos == size:
                raise _not_json("the array is not closed")
            byte = body[pos]
            if byte == _QUOTE:
                raise _not_json(f"unterminated string at byte {pos}")
            if byte in _OPEN:
                if len(closers) == MAX_DEPTH:
                    raise _not_json(f"nested deeper than {MAX_DEPTH} levels")
                closers.append(_OPEN[byte])
            elif closers.pop() != byte:
                raise _not_json(f"mismatched bracket at byte {pos}")
            pos += 1
            continue
        match = _TOKEN.search(body, pos)
        if match is None:
            raise _not_json("the array is not closed")
        byte, pos = body[match.start()], match.end()
        if byte == _QUOTE:
            if pos - match.start() == 1:
                raise _not_json(f"unterminated string at byte {match.start()}")
            continue
        if byte in _OPEN:
            closers.append(_OPEN[byte])
            continue
        if byte not in (_COMMA, _ARRAY_END):
            raise _not_json(f"unexpected {chr(byte)!r} at byte {match.start()}")
        # a comma or the closing bracket of the array: one item ends here
        if len(items) == max_reports:
            raise _too_many(max_reports)
        if match.start() - start > limit:
            raise _item_too_large(f"item {len(items)}", limit)
        if _NONBLANK.search(body, start, match.start()):
            items.append((start, match.start()))
        elif byte == _COMMA or items:
            raise _not_json(f"a missing item before byte {match.start()}")
        start = pos
        if byte == _ARRAY_END:
            break
    if _NONBLANK.search(body, pos):
        raise _not_json(f"more after the array's end at byte {pos}")
    if not items:
        raise _empty(max_reports)
    return items
