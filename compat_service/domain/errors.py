"""The error tree every layer shares.

Each error has a stable kebab-case ``code`` (clients match on it, never on the message), a one-line
``message``, a ``hint`` saying what to do, and structured ``causes``: the constraints that clashed and
where each came from. The API maps classes to HTTP status codes in one handler; the CLI maps them to exit
codes in one handler.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Cause(BaseModel):
    """One constraint that took part in a failure, and where it came from."""

    constraint: str = Field(description="what was required, e.g. 'python == 3.13'")
    origin: str = Field(description="who required it: 'request: --python', 'matrix: torch 2.3 (source key)'")
    detail: str | None = None


class Alternative(BaseModel):
    """A nearby request that would work."""

    description: str
    request: dict[str, Any] = Field(default_factory=dict)


class ErrorBody(BaseModel):
    """The wire form of an error (API body, CLI --format json)."""

    code: str
    message: str
    hint: str | None = None
    causes: list[Cause] = Field(default_factory=list)
    alternatives: list[Alternative] = Field(default_factory=list)


class AccelenvError(Exception):
    """Base of every error accelenv raises on purpose."""

    code: str = "accelenv-error"
    #: the HTTP status the API answers with; the CLI uses ``exit_code``
    http_status: int = 400
    exit_code: int = 1

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        causes: list[Cause] | None = None,
        alternatives: list[Alternative] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.causes = list(causes or [])
        self.alternatives = list(alternatives or [])

    def to_body(self) -> ErrorBody:
        return ErrorBody(
            code=self.code,
            message=self.message,
            hint=self.hint,
            causes=self.causes,
            alternatives=self.alternatives,
        )


class InvalidRequestError(AccelenvError):
    """A request value is malformed (bad version string, unknown backend, ...)."""

    code = "invalid-request"
    http_status = 422
    exit_code = 2


class NotFoundError(AccelenvError):
    code = "not-found"
    http_status = 404
    exit_code = 3


class MatrixDataError(AccelenvError):
    """matrix_data failed validation; ``causes`` holds one entry per problem (file and key)."""

    code = "matrix-invalid"
    http_status = 500
    exit_code = 4


class UnsatisfiableError(AccelenvError):
    """No install set satisfies the request. Subclasses name the kind of conflict."""

    code = "unsatisfiable"
    http_status = 409
    exit_code = 5


class ServerUnreachableError(AccelenvError):
    code = "server-unreachable"
    http_status = 502
    exit_code = 6


class AuthError(AccelenvError):
    code = "unauthorized"
    http_status = 401
    exit_code = 7


class ForbiddenError(AccelenvError):
    code = "forbidden"
    http_status = 403
    exit_code = 7


class ConflictError(AccelenvError):
    code = "conflict"
    http_status = 409
    exit_code = 8


class DatabaseNotReadyError(AccelenvError):
    """The database is missing, unreachable or not migrated to the current schema."""

    code = "database-not-ready"
    http_status = 503
    exit_code = 9


class ReportInvalidError(AccelenvError):
    code = "report-invalid"
    http_status = 422
    exit_code = 10
