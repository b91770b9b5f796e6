"""Send probe reports to a service (`POST URL/v1/reports`, Bearer token) and keep what could not be sent.

The spool is a directory of ``<report_id>.json`` files: ``ACCELENV_SPOOL_DIR``, else ``spool/`` in the
user data directory. Resending is safe: the service stores a report_id once (201 first, 200 after).
An unreachable server is ``ServerUnreachableError`` (exit 6); a refused token ``AuthError`` /
``ForbiddenError`` (exit 7); a report the server rejects ``ReportInvalidError`` (exit 10).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from compat_service.domain.errors import (
    AccelenvError,
    AuthError,
    ErrorBody,
    ForbiddenError,
    ReportInvalidError,
    ServerUnreachableError,
)

SPOOL_ENV = "ACCELENV_SPOOL_DIR"
_BY_STATUS: dict[int, type[AccelenvError]] = {
    400: ReportInvalidError, 401: AuthError, 403: ForbiddenError, 413: ReportInvalidError, 422: ReportInvalidError,
}


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
    url = server.rstrip("/") + "/v1/reports"
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    try:
        if client is not None:
            response = client.post(url, content=body, headers=headers)
        else:
            with httpx.Client(timeout=timeout_s) as own:
                response = own.post(url, content=body, headers=headers)
    except (httpx.TransportError, httpx.InvalidURL) as exc:
        raise ServerUnreachableError(
            f"cannot reach the accelenv server at {server}: {exc.__class__.__name__}",
            hint="check the URL; the report is kept and `accelenv report submit` sends it later",
        ) from exc
    if response.status_code in (200, 201):
        return response.status_code
    raise _error_from(response, server)


def _error_from(response: httpx.Response, server: str) -> AccelenvError:
    try:
        body = ErrorBody.model_validate(response.json())
        message, hint, causes = body.message, body.hint, body.causes
    except ValueError:
        message, hint, causes = f"HTTP {response.status_code}", None, []
    cls = _BY_STATUS.get(response.status_code)
    if cls is None:  # 5xx and anything unexpected: the server could not take it now; retry later
        return ServerUnreachableError(
            f"the server at {server} did not store the report (HTTP {response.status_code}: {message})",
            hint="the report is kept; `accelenv report submit` retries",
        )
    default_hint = {AuthError: "pass a valid token with --token or ACCELENV_TOKEN (scope 'report')",
                    ForbiddenError: "the token lacks the 'report' scope; create one that has it"}.get(cls)
    return cls(f"the server refused the report: {message}", hint=hint or default_hint, causes=causes)


@dataclass
class SpoolResult:
    sent: list[Path] = field(default_factory=list)
    kept: list[tuple[Path, AccelenvError]] = field(default_factory=list)


def submit_spooled(server: str, token: str, directory: Path | None = None, *,
                   client: httpx.Client | None = None) -> SpoolResult:
    """Send every spooled report; remove each one stored, keep each one that failed."""
    result = SpoolResult()
    paths = spooled(directory)
    for i, path in enumerate(paths):
        try:
            submit(server, token, path.read_bytes(), client=client)
        except (ServerUnreachableError, AuthError, ForbiddenError) as err:
            # The same failure awaits every other report: keep them all, stop asking.
            result.kept.extend((rest, err) for rest in paths[i:])
            break
        except AccelenvError as err:
            result.kept.append((path, err))
            continue
        path.unlink()
        result.sent.append(path)
    return result
