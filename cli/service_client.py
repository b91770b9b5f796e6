"""The CLI's one client of the accelenv service: base URL, token, injectable transport.

Used by `resolve --server` (GET /v1/resolve), `matrix show --server` (GET /v1/matrix, every page) and report
submission (POST /v1/reports, /v1/reports/batch; the spool itself is cli/report_spool.py). Tests inject an
``httpx.Client`` (Starlette's TestClient is one) or point at a loopback server.

- An unreachable server (or an answer that is not the service's) is `ServerUnreachableError` (exit 6).
- An error body ``{code, message, hint, causes, alternatives}`` becomes the class the registry of
  compat_service/domain/errors.py names for its code, so it renders and exits exactly as the local path
  would (`not-verified` exits 5, `database-not-ready` 9, ...).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import httpx

from compat_service.domain.errors import (
    AccelenvError,
    AuthError,
    ConflictError,
    ErrorBody,
    ForbiddenError,
    ReportInvalidError,
    ServerFailedError,
    ServerUnreachableError,
    error_class,
    error_from_body,
)

if TYPE_CHECKING:
    from compat_service.domain.resolver.resolution import Resolution

#: rows per GET /v1/matrix page
MATRIX_PAGE = 500
#: the answers with which POST /v1/reports refuses a report (anything else: the server could not take it now)
_REPORT_REFUSALS = frozenset({400, 401, 403, 409, 413, 422})
_REPORT_HINTS: dict[type[AccelenvError], str] = {
    AuthError: "pass a valid token with --token or ACCELENV_TOKEN (scope 'report')",
    ForbiddenError: "the token lacks the 'report' scope; create one that has it",
}


class ServiceClient:
    """One accelenv service at ``base_url``; ``client`` (an httpx.Client) replaces the network in tests."""

    def __init__(self, base_url: str, *, token: str | None = None, client: httpx.Client | None = None,
                 timeout_s: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self._client = client
        self._timeout_s = timeout_s

    @contextmanager
    def _session(self, timeout_s: float | None) -> Iterator[httpx.Client]:
        if self._client is not None:
            yield self._client
            return
        with httpx.Client(timeout=timeout_s or self._timeout_s) as own:
            yield own

    def request(self, method: str, path: str, *, unreachable_hint: str, timeout_s: float | None = None,
                **kwargs: Any) -> httpx.Response:
        """One request; a transport failure is ServerUnreachableError with ``unreachable_hint``."""
        headers = dict(kwargs.pop("headers", None) or {})
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            with self._session(timeout_s) as http:
                return http.request(method, self.base_url + path, headers=headers, **kwargs)
        except (httpx.TransportError, httpx.InvalidURL) as exc:
            raise ServerUnreachableError(
                f"cannot reach the accelenv server at {self.base_url}: {exc.__class__.__name__}",
                hint=unreachable_hint,
            ) from exc

    def error_from(self, response: httpx.Response) -> AccelenvError:
        """The error an unsuccessful answer stands for (the registry's class for its code)."""
        try:
            body = ErrorBody.model_validate(response.json())
        except ValueError:
            return ServerUnreachableError(
                f"the server at {self.base_url} answered HTTP {response.status_code} without an accelenv "
                "error body",
                hint="is the URL pointing at an accelenv service?",
            )
        return error_from_body(body, response.status_code)

    # ------------------------------------------------------------------ resolve

    def resolve(self, query: dict[str, str]) -> Resolution:
        from compat_service.domain.resolver.resolution import resolution_from_json

        response = self.request(
            "GET", "/v1/resolve", params=query,
            unreachable_hint=(
                "check --server / ACCELENV_SERVER, or drop it to resolve with the bundled matrix"
            ),
        )
        if not response.is_success:
            raise self.error_from(response)
        try:
            return resolution_from_json(response.json())
        except (KeyError, TypeError, ValueError) as exc:
            raise ServerUnreachableError(
                f"the server at {self.base_url} answered, but not with a resolution (missing {exc})",
                hint="is --server pointing at an accelenv service of a compatible version?",
            ) from None

    # ------------------------------------------------------------------ ci matrix

    def ci_matrix(self, query: dict[str, str]) -> dict[str, Any]:
        """GET /v1/ci-matrix with ``query`` (API parameter names): the matrix object."""
        response = self.request(
            "GET", "/v1/ci-matrix", params=query,
            unreachable_hint="check --server / ACCELENV_SERVER, or drop it to build the matrix offline",
        )
        if not response.is_success:
            raise self.error_from(response)
        try:
            body = response.json()
            body["include"], body["excluded"]
        except (KeyError, TypeError, ValueError) as exc:
            raise ServerUnreachableError(
                f"the server at {self.base_url} answered, but not with a CI matrix ({exc})",
                hint="is --server pointing at an accelenv service of a compatible version?",
            ) from None
        return body

    # ------------------------------------------------------------------ evidence

    def matrix_rows(self, torch: str) -> list[dict[str, Any]]:
        """Every evidence row of GET /v1/matrix for one release (all pages)."""
        rows: list[dict[str, Any]] = []
        hint = "check --server / ACCELENV_SERVER, or drop it to show the matrix alone"
        try:
            while True:
                response = self.request("GET", "/v1/matrix", unreachable_hint=hint,
                                        params={"torch": torch, "limit": MATRIX_PAGE, "offset": len(rows)})
                if not response.is_success:
                    raise self.error_from(response)
                page = response.json()
                rows.extend(page["items"])
                if not page["items"] or len(rows) >= page["total"]:
                    return rows
        except ServerUnreachableError as exc:
            raise ServerUnreachableError(
                f"could not read the matrix evidence from {self.base_url}: {exc.message}", hint=hint
            ) from None
        except (ValueError, KeyError, TypeError) as exc:
            raise ServerUnreachableError(
                f"could not read the matrix evidence from {self.base_url}: {exc}", hint=hint
            ) from None

    # ------------------------------------------------------------------ reports

    def post_report(self, body: bytes, *, timeout_s: float = 30.0) -> int:
        """POST one report; 201 (stored) or 200 (already stored), else the refusal as an AccelenvError."""
        response = self._post_reports("/v1/reports", body, "application/json", timeout_s)
        if response.status_code in (200, 201):
            return response.status_code
        raise self.report_refusal(response)

    def post_report_batch(self, body: bytes, *, timeout_s: float = 120.0) -> httpx.Response:
        """POST an NDJSON batch of reports; the caller reads the per-report results."""
        return self._post_reports("/v1/reports/batch", body, "application/x-ndjson", timeout_s)

    def _post_reports(self, path: str, body: bytes, content_type: str, timeout_s: float) -> httpx.Response:
        return self.request(
            "POST", path, content=body, headers={"Content-Type": content_type}, timeout_s=timeout_s,
            unreachable_hint="check the URL; the report is kept and `accelenv report submit` sends it later",
        )

    def report_refusal(self, response: httpx.Response) -> AccelenvError:
        """Why the service did not store a report. A refused token stays Auth/ForbiddenError (exit 7), a
        stored conflict ConflictError (8); any other refusal means the report itself was refused
        (ReportInvalidError, exit 10); any other answer means "not now": ServerUnreachableError, retry
        later."""
        status = response.status_code
        err = self.error_from(response)
        if isinstance(err, ServerUnreachableError):  # no error body: only the status says what happened
            err = error_class("", status)(f"HTTP {status}")
        if status not in _REPORT_REFUSALS:
            return (ServerFailedError if status >= 500 else ServerUnreachableError)(
                f"the server at {self.base_url} did not store the report (HTTP {status}: {err.message})",
                hint="the report is kept; `accelenv report submit` retries",
            )
        kept = (AuthError, ForbiddenError, ConflictError)
        kind = next((c for c in kept if isinstance(err, c)), None)
        # a kept refusal keeps its exact class and code (report-storage-quota is a ForbiddenError of its own)
        refusal = (type(err) if kind else ReportInvalidError)(
            f"the server refused the report: {err.message}",
            hint=err.hint or _REPORT_HINTS.get(kind or ReportInvalidError), causes=err.causes,
        )
        if kind:
            refusal.code = err.code
        return refusal
