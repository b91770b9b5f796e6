"""The error tree every layer shares.

Each error has a stable kebab-case ``code`` (clients match on it, never on the message), a one-line
``message``, a ``hint`` saying what to do, and structured ``causes``: the constraints that clashed and
where each came from. Every class says its HTTP status and its exit code; `ERRORS` (code -> class) is
built from the classes, and the API handler, the CLI renderer and the CLI's HTTP client all read it, so an
error has the same code, status and exit code locally and through `--server`.

The resolver's failure kinds (all `UnsatisfiableError`: exit 5, HTTP 409):

| code                   | raised when                                                                    |
| ---------------------- | ------------------------------------------------------------------------------ |
| torch-not-found        | no torch release in the matrix matches --torch                                 |
| platform-unsupported   | the matching releases publish no wheels for --os/--arch                        |
| python-unsupported     | the matching releases have no wheels for --python on that platform            |
| backend-unavailable    | the backend family has no build at all for the platform (ROCm on Windows, ...) |
| variant-not-published  | the asked build label / family is not published for the matching releases     |
| driver-too-old         | every candidate build needs a newer driver than --driver                       |
| gpu-arch-unsupported   | no candidate build ships kernels (or PTX) for --gpu-arch                       |
| runtime-mismatch       | no candidate build fits the vendor runtime --runtime names (CANN, ROCm, CTR)   |
| companion-unknown      | the matrix has no torchvision/torchaudio version for the matching releases    |
| not-verified           | --require-verified, and no candidate's cell is verified by probe reports       |
| rests-on-unknown       | --strict, and the answer rests on data the matrix lacks (arch list, floor)     |
| stack-conflict         | no release of a --with package fits torch and the host together (its pins, its |
|                        | wheels, the torch build its binaries need); a host-only failure of every       |
|                        | candidate keeps the torch resolver's code (driver-too-old, ...)                |

Malformed flags are `InvalidRequestError` (exit 2, HTTP 422); two kinds of it name a CI matrix's problems:
``matrix-too-large`` (over GitHub Actions' 256 jobs or 1 MB output: shard it) and ``install-plan-refused``
(a cell's install steps are not ``pip install`` argument lists; nothing ran).

The HTTP layer's refusals, before or instead of a route (all `BadRequestError`: exit 1):

| code                | status | raised when                                                                 |
| ------------------- | ------ | --------------------------------------------------------------------------- |
| bad-request         | 400    | the HTTP request cannot be parsed (request line, header, Content-Length)    |
| token-in-query      | 400    | a token was sent in the query string (refused, never logged)                |
| client-disconnected | 400    | the client hung up while sending its body (nobody reads the answer)         |
| method-not-allowed  | 405    | the path exists, the method does not                                        |
| request-timeout     | 408    | the headers or the body did not arrive within the service's time limit      |
| body-too-large      | 413    | the body is larger than the service accepts                                 |
| headers-too-large   | 431    | the request line and headers are larger than the service accepts            |
| too-many-connections | 503   | the worker holds ACCELENV_MAX_CONNECTIONS connections (Retry-After: 1)       |
| quota-exceeded      | 429    | the client's address or token used its ACCELENV_QUOTA_* (Retry-After)        |
| http-error          | any    | any other refusal of the HTTP framework (its status kept)                   |

`error_json` is the one writer of an error body on the wire, whichever layer refuses the request.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType

from pydantic import BaseModel, Field

__all__ = [
    "AccelenvError",
    "Alternative",
    "AuthError",
    "BackendUnavailableError",
    "BadRequestError",
    "BodyTooLargeError",
    "Cause",
    "ClientDisconnectedError",
    "CompanionUnknownError",
    "ConflictError",
    "DatabaseNotReadyError",
    "DriverTooOldError",
    "ERRORS",
    "ErrorBody",
    "ForbiddenError",
    "GpuArchUnsupportedError",
    "HeadersTooLargeError",
    "HttpError",
    "IndexResponseError",
    "IndexUnreachableError",
    "InstallPlanRefusedError",
    "InternalError",
    "InvalidRequestError",
    "KnownBadError",
    "LockNotConfiguredError",
    "MatrixDataError",
    "MatrixOutOfDateError",
    "MatrixTooLargeError",
    "MethodNotAllowedError",
    "NoLockForHostError",
    "NotFoundError",
    "NotVerifiedError",
    "PlatformUnsupportedError",
    "PythonUnsupportedError",
    "QuotaExceededError",
    "RESOLVER_ERROR_CODES",
    "RefreshRemovesFactsError",
    "ReportConflictError",
    "ReportInvalidError",
    "ReportStorageQuotaError",
    "ReportTooLargeError",
    "RequestTimeoutError",
    "RestsOnUnknownError",
    "RuntimeMismatchError",
    "ServerFailedError",
    "ServerUnreachableError",
    "StackConflictError",
    "TokenInQueryError",
    "TooManyConnectionsError",
    "TorchNotFoundError",
    "UnsatisfiableError",
    "VariantNotPublishedError",
    "error_class",
    "error_from_body",
    "error_json",
]


class Cause(BaseModel):
    """One constraint that took part in a failure, and where it came from."""

    constraint: str = Field(description="what was required, e.g. 'python == 3.13'")
    origin: str = Field(description="who required it: 'request: --python', 'matrix: torch 2.3 (source key)'")
    detail: str | None = None


class Alternative(BaseModel):
    """A nearby request that would work."""

    description: str
    request: dict[str, str | None] = Field(default_factory=dict)


class ErrorBody(BaseModel):
    """The wire form of an error (API body, CLI --format json)."""

    code: str
    message: str
    hint: str | None = None
    causes: list[Cause] = Field(default_factory=list)
    alternatives: list[Alternative] = Field(default_factory=list)


#: code -> class, filled by `AccelenvError.__init_subclass__`; read through `ERRORS`
_REGISTRY: dict[str, type[AccelenvError]] = {}


class AccelenvError(Exception):
    """Base of every error accelenv raises on purpose."""

    code: str = "accelenv-error"
    #: the HTTP status the API answers with; the CLI uses ``exit_code``
    http_status: int = 400
    exit_code: int = 1

    def __init_subclass__(cls, **kwargs: object) -> None:
        # the registry is complete by construction: a class registers itself where it is defined
        super().__init_subclass__(**kwargs)
        if "code" not in cls.__dict__:
            raise TypeError(f"{cls.__name__} must set its own `code` (the registry maps each code to one class)")
        taken = _REGISTRY.get(cls.code)
        if taken is not None and (taken.__module__, taken.__qualname__) != (cls.__module__, cls.__qualname__):
            raise TypeError(f"error code {cls.code!r} of {cls.__name__} is already {taken.__name__}'s")
        _REGISTRY[cls.code] = cls

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


class ServerFailedError(ServerUnreachableError):
    """The server answered, but with a failure of its own (5xx): this request may work later, others now."""

    code = "server-failed"


class AuthError(AccelenvError):
    code = "unauthorized"
    http_status = 401
    exit_code = 7


class ForbiddenError(AccelenvError):
    code = "forbidden"
    http_status = 403
    exit_code = 7


class ReportStorageQuotaError(ForbiddenError):
    """A report token has stored its ACCELENV_QUOTA_TOKEN_REPORT_BYTES of report data; nothing of the
    submission was stored. The quota does not refill with time: an admin raises it or withdraws reports."""

    code = "report-storage-quota"


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


class InternalError(AccelenvError):
    """A bug in accelenv (the API answers 500 and logs the traceback)."""

    code = "internal-error"
    http_status = 500
    exit_code = 1


class ReportTooLargeError(ReportInvalidError):
    code = "report-too-large"
    http_status = 413


class ReportConflictError(ConflictError):
    """The report_id is already stored with different content."""

    code = "report-id-conflict"


class TorchNotFoundError(UnsatisfiableError):
    code = "torch-not-found"


class PlatformUnsupportedError(UnsatisfiableError):
    code = "platform-unsupported"


class PythonUnsupportedError(UnsatisfiableError):
    code = "python-unsupported"


class BackendUnavailableError(UnsatisfiableError):
    code = "backend-unavailable"


class VariantNotPublishedError(UnsatisfiableError):
    code = "variant-not-published"


class DriverTooOldError(UnsatisfiableError):
    code = "driver-too-old"


class GpuArchUnsupportedError(UnsatisfiableError):
    code = "gpu-arch-unsupported"


class RuntimeMismatchError(UnsatisfiableError):
    """``--runtime``: no candidate build fits the host's CANN / ROCm / Cambricon toolkit version."""

    code = "runtime-mismatch"


class CompanionUnknownError(UnsatisfiableError):
    code = "companion-unknown"


class KnownBadError(UnsatisfiableError):
    """The only builds that fit are ones a cited known-bad rule (matrix_data/known_bad.yaml) says never to
    recommend; the error names the rule and its source, the alternatives resolve."""

    code = "known-bad"


class RestsOnUnknownError(UnsatisfiableError):
    """``--strict``: the only answer rests on data the matrix does not have (an arch list, a driver floor)."""

    code = "rests-on-unknown"


class StackConflictError(UnsatisfiableError):
    """No release of an ecosystem package (`--with vllm`) fits torch and the target together."""

    code = "stack-conflict"


class NotVerifiedError(UnsatisfiableError):
    """``--require-verified``: no candidate's cell is verified by probe reports."""

    code = "not-verified"


class IndexUnreachableError(AccelenvError):
    """`matrix refresh`: the index (or one of its files) did not answer after the retries."""

    code = "index-unreachable"
    http_status = 502
    exit_code = 6


class IndexResponseError(AccelenvError):
    """The index answered, but with something that cannot be read (bad status, unknown content type, bad zip)."""

    code = "index-bad-response"
    http_status = 502
    exit_code = 6


class MatrixOutOfDateError(AccelenvError):
    """`matrix refresh --check`: the index has releases or wheels the generated matrix lacks or contradicts."""

    code = "matrix-out-of-date"
    http_status = 409
    exit_code = 11


class RefreshRemovesFactsError(AccelenvError):
    """`matrix refresh`: the index's answer would remove more than a small share of a project's facts (a
    captive portal, a broken mirror, a truncated page); nothing is written unless ``--allow-removals``."""

    code = "refresh-removes-facts"
    http_status = 409
    exit_code = 12


class BadRequestError(AccelenvError):
    """The service refused the HTTP request itself, before a route read it; subclasses name how (the table
    in this module's docstring)."""

    code = "bad-request"
    http_status = 400
    exit_code = 1


class TokenInQueryError(BadRequestError):
    """A token in the URL's query string: refused unread, and redacted from the access log."""

    code = "token-in-query"


class ClientDisconnectedError(BadRequestError):
    code = "client-disconnected"


class MethodNotAllowedError(BadRequestError):
    code = "method-not-allowed"
    http_status = 405


class RequestTimeoutError(BadRequestError):
    """The request's headers or body did not arrive within the service's time limit."""

    code = "request-timeout"
    http_status = 408


class BodyTooLargeError(BadRequestError):
    code = "body-too-large"
    http_status = 413


class HeadersTooLargeError(BadRequestError):
    code = "headers-too-large"
    http_status = 431


class TooManyConnectionsError(BadRequestError):
    """The worker holds its most open connections (ACCELENV_MAX_CONNECTIONS); the client may retry."""

    code = "too-many-connections"
    http_status = 503


class QuotaExceededError(BadRequestError):
    """A client (its address or its token) used up its request or byte quota; `Retry-After` says when it
    may go on (compat_service/api/middleware/quota.py)."""

    code = "quota-exceeded"
    http_status = 429


class HttpError(BadRequestError):
    """Every other refusal of the HTTP framework (the API's handler sets the framework's status on it)."""

    code = "http-error"


class LockNotConfiguredError(AccelenvError):
    """`GET /v1/lock`: the service names no index to resolve locks against (ACCELENV_LOCK_INDEX_URL)."""

    code = "lock-not-configured"
    http_status = 503
    exit_code = 1


class NoLockForHostError(NotFoundError):
    """`accelenv install --locks`: no lock of the directory is for this host's answer."""

    code = "no-lock-for-host"


class MatrixTooLargeError(InvalidRequestError):
    """A CI matrix (or one shard of it) holds more cells than one GitHub Actions matrix may (256 jobs), or its
    ``include`` JSON is over the 1 MB job-output limit; the message names both limits and the ways out
    (``max_cells``, ``shard=I/N``, a narrower request)."""

    code = "matrix-too-large"


class InstallPlanRefusedError(InvalidRequestError):
    """`accelenv ci check`: a cell's install plan is not a list of ``pip install`` argument lists (what a
    service sends is data, run without a shell, never a command line)."""

    code = "install-plan-refused"


def _tree(cls: type[AccelenvError]) -> list[type[AccelenvError]]:
    return [cls, *(sub for child in cls.__subclasses__() for sub in _tree(child))]


_REGISTRY[AccelenvError.code] = AccelenvError
#: code -> class, for every AccelenvError subclass (the one registry; each class adds itself when it is
#: defined, and every class accelenv raises is defined in this module, so importing it is enough)
ERRORS: Mapping[str, type[AccelenvError]] = MappingProxyType(_REGISTRY)
#: the resolver's failure kinds (the table in this module's docstring)
RESOLVER_ERROR_CODES: tuple[str, ...] = tuple(
    cls.code for cls in _tree(UnsatisfiableError) if cls is not UnsatisfiableError
)
#: for a body whose code this version does not know: the direct subclass of AccelenvError with that status
#: (client errors only: a 5xx of unknown code is the base class, exit 1)
_BY_STATUS: Mapping[int, type[AccelenvError]] = {
    cls.http_status: cls for cls in reversed(AccelenvError.__subclasses__()) if cls.http_status < 500
}


def error_class(code: str, http_status: int | None = None) -> type[AccelenvError]:
    """The class of an error ``code`` (a body from the service); unknown codes fall back to the status."""
    found = ERRORS.get(code)
    if found is not None:
        return found
    return _BY_STATUS.get(http_status or 0, AccelenvError)


def error_from_body(body: ErrorBody, http_status: int | None = None) -> AccelenvError:
    """The error a body ``{code, message, hint, causes, alternatives}`` stands for; keeps the exact code."""
    err = error_class(body.code, http_status)(
        body.message, hint=body.hint, causes=body.causes, alternatives=body.alternatives
    )
    err.code = body.code
    return err


def error_json(err: AccelenvError, request_id: str | None = None) -> bytes:
    """The one writer of an error body on the wire: `ErrorBody`'s fields in order, then ``request_id`` (the
    request's id in the access log; null where the HTTP parser refused the request before it had one), as
    compact UTF-8 JSON. uvicorn's protocol, the middlewares, the app's error handler and the pages all send
    these bytes."""
    body = {
        "code": err.code,
        "message": err.message,
        "hint": err.hint,
        "causes": [{name: getattr(c, name) for name in _CAUSE_FIELDS} for c in err.causes],
        "alternatives": [{name: getattr(a, name) for name in _ALTERNATIVE_FIELDS} for a in err.alternatives],
        "request_id": request_id,
    }  # `ErrorBody`'s dump, read off the error (building an ErrorBody validates every cause again)
    return json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


_CAUSE_FIELDS = tuple(Cause.model_fields)
_ALTERNATIVE_FIELDS = tuple(Alternative.model_fields)
