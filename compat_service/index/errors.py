"""Errors of reading a package index; each is an `AccelenvError` with a stable code and exit code."""

from __future__ import annotations

from compat_service.domain.errors import AccelenvError


class IndexUnreachableError(AccelenvError):
    """The index (or one of its files) did not answer after the retries."""

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
