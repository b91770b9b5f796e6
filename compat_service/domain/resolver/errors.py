"""The resolver's failure kinds. Each `code` is stable: clients, tests and docs match on it.

| code                   | raised when                                                                    |
| ---------------------- | ------------------------------------------------------------------------------ |
| torch-not-found        | no torch release in the matrix matches --torch                                 |
| platform-unsupported   | the matching releases publish no wheels for --os/--arch                        |
| python-unsupported     | the matching releases have no wheels for --python on that platform            |
| backend-unavailable    | the backend family has no build at all for the platform (ROCm on Windows, ...) |
| variant-not-published  | the asked build label / family is not published for the matching releases     |
| driver-too-old         | every candidate build needs a newer driver than --driver                       |
| gpu-arch-unsupported   | no candidate build ships kernels (or PTX) for --gpu-arch                       |
| companion-unknown      | the matrix has no torchvision/torchaudio version for the matching releases    |

All are `UnsatisfiableError` (exit code 5, HTTP 409). Malformed flags are `InvalidRequestError` (exit 2).
"""

from __future__ import annotations

from typing import Any

from compat_service.domain.errors import Alternative, Cause, UnsatisfiableError
from compat_service.domain.resolver.conflict import Conflict


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


class CompanionUnknownError(UnsatisfiableError):
    code = "companion-unknown"


ERRORS_BY_CODE: dict[str, type[UnsatisfiableError]] = {
    cls.code: cls
    for cls in (
        TorchNotFoundError,
        PlatformUnsupportedError,
        PythonUnsupportedError,
        BackendUnavailableError,
        VariantNotPublishedError,
        DriverTooOldError,
        GpuArchUnsupportedError,
        CompanionUnknownError,
    )
}
RESOLVER_ERROR_CODES: tuple[str, ...] = tuple(ERRORS_BY_CODE)


def to_error(conflict: Conflict, alternatives: list[tuple[str, dict[str, Any]]]) -> UnsatisfiableError:
    cls = ERRORS_BY_CODE[conflict.code]
    return cls(
        conflict.message,
        hint=conflict.hint,
        causes=[Cause(constraint=c, origin=o, detail=d) for c, o, d in conflict.causes],
        alternatives=[Alternative(description=text, request=req) for text, req in alternatives],
    )
