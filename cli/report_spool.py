"""Send probe reports to a service (`POST URL/v1/reports`, Bearer token) and keep what could not be sent.

The spool is a directory of ``<report_id>.json`` files: ``ACCELENV_SPOOL_DIR``, else ``spool/`` in the
user data directory. Resending is safe: the service stores a report_id once (201 first, 200 after).
The spool goes out in batches (`POST URL/v1/reports/batch` as NDJSON, one compact report per line,
``BATCH_SIZE`` reports a request, one result per report); a server without the batch route (404) gets the
reports one by one, and a batch the server refuses as a whole (too large, or NDJSON it cannot read) is sent
one by one too.
The HTTP calls go through the CLI's one service client (cli/service_client.py): an unreachable server is
``ServerUnreachableError`` (exit 6); a refused token ``AuthError`` / ``ForbiddenError`` (exit 7); a report
the server rejects ``ReportInvalidError`` (exit 10).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from cli.service_client import ServiceClient
from compat_service.domain.errors import (
    AccelenvError,
    AuthError,
    ConflictError,
    ErrorBody,
    ForbiddenError,
    ReportInvalidError,
    ServerUnreachableError,
)

SPOOL_ENV = "ACCELENV_SPOOL_DIR"
#: reports per batch request; the service accepts up to its ACCELENV_MAX_BATCH_REPORTS (100 by default)
BATCH_SIZE = 50


def spool_dir() -> Path:
    explicit = os.environ.get(SPOOL_ENV)
    if explicit:
        return Path(explicit)
    from platformdirs import user_data_dir

    return Path(user_data_dir("accelenv", appauthor=False)) / "spool"


def spool(report: dict[str, Any], directory: Path | None = None) -> Path:
    """Keep a report for later; the file name is its report_id, so spooling twice keeps one copy."""
    directory = directory or spool_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{report['report_id']}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def spooled(directory: Path | None = None) -> list[Path]:
    directory = directory or spool_dir()
    return sorted(directory.glob("*.json")) if directory.is_dir() else []


def submit(server: str, token: str, body: bytes, *, client: httpx.Client | None = None,
           timeout_s: float = 30.0) -> int:
    """POST one report; returns 201 (stored) or 200 (already stored), raises an AccelenvError otherwise."""
    return ServiceClient(server, token=token, client=client).post_report(body, timeout_s=timeout_s)


def submit_batch(server: str, token: str, bodies: list[bytes], *, client: httpx.Client | None = None,
                 timeout_s: float = 120.0) -> list[dict[str, Any]] | None:
    """POST reports (each a JSON object on one line) as one NDJSON batch; the server's per-report results in
    order (``{"report_id", "status": created|exists|conflict|invalid, "error"?}``), or None when the server
    has no batch route (404 or 405). Raises an AccelenvError when the server refuses the batch as a whole."""
    service = ServiceClient(server, token=token, client=client)
    response = service.post_report_batch(b"\n".join(bodies) + b"\n", timeout_s=timeout_s)
    if response.status_code in (404, 405):  # a server from before the batch route (405: POST on GET's path)
        return None
    if response.status_code != 200:
        raise service.report_refusal(response)
    try:
        results = response.json()["results"]
    except (ValueError, KeyError, TypeError):
        results = None
    if not isinstance(results, list) or len(results) != len(bodies):
        raise ServerUnreachableError(
            f"the server at {server} answered the batch with no result per report",
            hint="the reports are kept; check that the URL names an accelenv service",
        )
    return results


@dataclass
class SpoolResult:
    sent: list[Path] = field(default_factory=list)
    kept: list[tuple[Path, AccelenvError]] = field(default_factory=list)


def submit_spooled(server: str, token: str, directory: Path | None = None, *,
                   client: httpx.Client | None = None) -> SpoolResult:
    """Send every spooled report; remove each one stored, keep each one that failed."""
    result = SpoolResult()
    pending: list[tuple[Path, bytes]] = []
    for path in spooled(directory):
        body = path.read_bytes()
        try:
            # one broken file must not break its whole batch; a batch line is the report, compact
            line = json.dumps(json.loads(body), separators=(",", ":"), ensure_ascii=False).encode()
        except ValueError as exc:
            result.kept.append((path, ReportInvalidError(
                f"the spooled file is not valid JSON: {exc}",
                hint="delete it, or replace it with the report written by `accelenv probe --output FILE`",
            )))
            continue
        pending.append((path, line))
    use_batches = True
    for start in range(0, len(pending), BATCH_SIZE):
        chunk = pending[start : start + BATCH_SIZE]
        results = None
        if use_batches:
            try:
                results = submit_batch(server, token, [body for _, body in chunk], client=client)
            except (ServerUnreachableError, AuthError, ForbiddenError) as err:
                # The same failure awaits every other report: keep them all, stop asking.
                result.kept.extend((path, err) for path, _ in pending[start:])
                break
            except ReportInvalidError:
                pass  # the batch as a whole was refused (too large for this server): send it one by one
            else:
                use_batches = results is not None  # None: a server without the batch route (404)
        if results is None:
            if not _submit_one_by_one(server, token, chunk, pending[start + len(chunk):], result, client):
                break
            continue
        for (path, _), item in zip(chunk, results):
            _settle(path, item, result)
    return result


def _submit_one_by_one(server: str, token: str, chunk: list[tuple[Path, bytes]], after: list[tuple[Path, bytes]],
                       result: SpoolResult, client: httpx.Client | None) -> bool:
    """POST each report of ``chunk``; False (everything left kept) when the server cannot take any more."""
    for i, (path, body) in enumerate(chunk):
        try:
            submit(server, token, body, client=client)
        except (ServerUnreachableError, AuthError, ForbiddenError) as err:
            result.kept.extend((rest, err) for rest, _ in chunk[i:] + after)
            return False
        except AccelenvError as err:
            result.kept.append((path, err))
            continue
        path.unlink()
        result.sent.append(path)
    return True


def _settle(path: Path, item: dict[str, Any], result: SpoolResult) -> None:
    """Remove a report the batch stored (or found stored); keep one it refused, with the server's reason."""
    status = item.get("status") if isinstance(item, dict) else None
    if status in ("created", "exists"):
        path.unlink()
        result.sent.append(path)
        return
    cls = ConflictError if status == "conflict" else ReportInvalidError
    try:
        error = ErrorBody.model_validate(item["error"])
        message, hint, causes = error.message, error.hint, error.causes
    except (KeyError, TypeError, ValueError):
        message, hint, causes = f"status {status!r}", None, []
    result.kept.append((path, cls(f"the server refused the report: {message}", hint=hint, causes=causes)))
