"""The errors of reading a package index, for the modules of this package.

They are defined in `compat_service.domain.errors` with every other error, so the one registry `ERRORS` holds
them (and the CLI's client knows their codes) whether or not this package was imported.
"""

from compat_service.domain.errors import (
    IndexResponseError,
    IndexUnreachableError,
    MatrixOutOfDateError,
    RefreshRemovesFactsError,
)

__all__ = ["IndexResponseError", "IndexUnreachableError", "MatrixOutOfDateError", "RefreshRemovesFactsError"]
