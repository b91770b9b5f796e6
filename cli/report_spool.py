"""Send probe reports to a service (`POST URL/v1/reports`, Bearer token) and keep what could not be sent.

The spool is a directory of ``<report_id>.json`` files: ``ACCELENV_SPOOL_DIR``, else ``spool/`` in the
user data directory. Resending is safe: the service stores a report_id once (201 first, 200 after).
The spool goes out in batches (`POST URL/v1/reports/batch` as NDJSON, one compact report per line,
``BATCH_SIZE`` reports a request, one result per report); a server without the batch route (404) gets the
reports one by one, and a batch the server refuses as a whole (too large, or NDJSON it cannot read) is sent
one by one too, and so is a batch the server fails on (5xx: one poisoned report must not block the others).
A report the server refuses (4xx, or invalid JSON) is moved to ``rejected/`` in the spool with
``<name>.reason.json`` beside it, never retried; one the server keeps failing on (5xx) is moved there after
``MAX_ATTEMPTS`` runs (counted in ``<name>.json.attempts``). Saved reports named on the command line are
only read: sent, or listed with the reason.
Reading a file is bounded: only regular files are read (a FIFO or a device named ``*.json`` is skipped, never
opened for a blocking read), at most ``MAX_REPORT_BYTES`` of it, parsed by orjson (not recursive: a file of
``[`` characters is an error, not a RecursionError); what cannot be parsed goes to ``rejected/`` with why.
The HTTP calls go through the CLI's one service client (cli/service_client.py): an unreachable server is
``ServerUnreachableError`` (exit 6); a refused token ``AuthError`` / ``ForbiddenError`` (exit 7); a report
the server rejects ``ReportInvalidError`` (exit 10).
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson

from cli.service_client import ServiceClient
from compat_service.domain.errors import (
    AccelenvError,
    AuthError,
    ConflictError,
    ErrorBody,
    ForbiddenError,
    ReportInvalidError,
    ServerFailedError,
    ServerUnreachableError,
)

SPOOL_ENV = "ACCELENV_SPOOL_DIR"
#: reports per batch request; the service accepts up to its ACCELENV_MAX_BATCH_REPORTS (100 by default)
BATCH_SIZE = 50
#: the largest report file read (the service's default ACCELENV_MAX_BODY_BYTES; a real report is ~65 KB)
MAX_REPORT_BYTES = 1_000_000


class _NotARegularFile(OSError):
    pass


def read_report_file(path: Path, max_bytes: int = MAX_REPORT_BYTES) -> bytes:
    """A report file's bytes: a regular file only (opened without blocking, so a FIFO cannot hang the
    command), ReportTooLargeError past ``max_bytes``."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _NotARegularFile(0, "not a regular file (a FIFO, device or directory?)")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        from compat_service.domain.errors import ReportTooLargeError

        raise ReportTooLargeError(
            f"the file is larger than {max_bytes} bytes: not a probe report",
            hint="delete it, or replace it with the report written by `accelenv probe --output FILE`",
        )
    return data


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
    """The spool's report files: regular files only (not following links), never a FIFO or a folder."""
    directory = directory or spool_dir()
    if not directory.is_dir():
        return []
    found = []
    for path in sorted(directory.glob("*.json")):
        try:
            if stat.S_ISREG(path.lstat().st_mode):
                found.append(path)
        except OSError:
            continue
    return found


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
    #: left where they are, to be sent again (the server unreachable, failing, or the token refused)
    kept: list[tuple[Path, AccelenvError]] = field(default_factory=list)
    #: refused by the server (4xx), or failing MAX_ATTEMPTS times: moved to `rejected/` with the reason
    moved: list[tuple[Path, AccelenvError]] = field(default_factory=list)

    def headline(self) -> AccelenvError | None:
        """The error the command exits with: a refused token first (it fails every report), then the first
        report kept, then the first moved aside."""
        errors = [err for _, err in self.kept + self.moved]
        auth = next((e for e in errors if isinstance(e, (AuthError, ForbiddenError))), None)
        return auth or (errors[0] if errors else None)


#: the folder inside the spool where refused reports go, each beside ``<name>.reason.json``
REJECTED_DIR = "rejected"
#: times a report may meet a server failure (5xx) of its own before it is moved aside
MAX_ATTEMPTS = 3


def submit_spooled(server: str, token: str, directory: Path | None = None, *,
                   client: httpx.Client | None = None) -> SpoolResult:
    """Send every spooled report; remove each one stored, move aside each one refused, keep the rest."""
    directory = directory or spool_dir()
    return submit_paths(server, token, spooled(directory), spool=directory, client=client)


def submit_paths(server: str, token: str, paths: list[Path], *, spool: Path | None = None,
                 client: httpx.Client | None = None) -> SpoolResult:
    """Send the reports in ``paths``. With ``spool`` (the files are the spool's) a stored report is removed,
    a refused one moved to ``spool/rejected/`` with its reason, and one the server fails on (5xx) kept until
    MAX_ATTEMPTS; without it (saved reports the user named) the files are only read."""
    result = SpoolResult()
    pending: list[tuple[Path, bytes]] = []
    for path in paths:
        try:
            body = read_report_file(path)
            # one broken file must not break its whole batch; a batch line is the report, compact. orjson:
            # bounded nesting, no recursion (json's parser overflowed the stack on 100 KB of "[")
            report = orjson.loads(body)
            if not isinstance(report, dict):
                raise ValueError(f"a report is a JSON object, not a {type(report).__name__}")
            line = orjson.dumps(report)
        except ReportInvalidError as err:
            _refused(path, err, result, spool)
            continue
        except OSError as exc:
            result.kept.append((path, ReportInvalidError(
                f"cannot read {path}: {exc.strerror or exc}", hint="name a report file `accelenv probe` wrote",
            )))
            continue
        except (ValueError, TypeError, RecursionError) as exc:  # orjson's errors are ValueError / TypeError
            _refused(path, ReportInvalidError(
                f"the file is not valid JSON (or not a report object): {str(exc)[:200]}",
                hint="delete it, or replace it with the report written by `accelenv probe --output FILE`",
            ), result, spool)
            continue
        pending.append((path, line))
    use_batches = True
    for start in range(0, len(pending), BATCH_SIZE):
        chunk = pending[start : start + BATCH_SIZE]
        results = None
        if use_batches:
            try:
                results = submit_batch(server, token, [body for _, body in chunk], client=client)
            except (ServerFailedError, ReportInvalidError):
                # the batch as a whole failed (one poisoned report, too large): one by one, so the
                # others still go and only the failing one stays
                pass
            except (ServerUnreachableError, AuthError, ForbiddenError) as err:
                # The same failure awaits every other report: keep them all, stop asking.
                result.kept.extend((path, err) for path, _ in pending[start:])
                break
            else:
                use_batches = results is not None  # None: a server without the batch route (404)
        if results is None:
            if not _submit_one_by_one(server, token, chunk, pending[start + len(chunk):], result, client, spool):
                break
            continue
        for (path, _), item in zip(chunk, results):
            _settle(path, item, result, spool)
    return result


def _submit_one_by_one(server: str, token: str, chunk: list[tuple[Path, bytes]], after: list[tuple[Path, bytes]],
                       result: SpoolResult, client: httpx.Client | None, spool: Path | None) -> bool:
    """POST each report of ``chunk``; False (everything left kept) when the server cannot take any more."""
    for i, (path, body) in enumerate(chunk):
        try:
            ServiceClient(server, token=token, client=client).post_report(body)
        except ServerFailedError as err:
            _failed_attempt(path, err, result, spool)  # this report only: the next may go through
            continue
        except (ServerUnreachableError, AuthError, ForbiddenError) as err:
            result.kept.extend((rest, err) for rest, _ in chunk[i:] + after)
            return False
        except AccelenvError as err:
            _refused(path, err, result, spool)
            continue
        _stored(path, result, spool)
    return True


def _stored(path: Path, result: SpoolResult, spool: Path | None) -> None:
    if spool is not None:
        path.unlink()
        _attempts_file(path).unlink(missing_ok=True)
    result.sent.append(path)


def _attempts_file(path: Path) -> Path:
    return path.with_name(path.name + ".attempts")


def _failed_attempt(path: Path, err: AccelenvError, result: SpoolResult, spool: Path | None) -> None:
    """Count a server failure against this report; at MAX_ATTEMPTS it is moved aside, not retried forever."""
    if spool is None:
        result.kept.append((path, err))
        return
    counter = _attempts_file(path)
    try:
        attempts = int(counter.read_text().strip() or 0) + 1
    except (OSError, ValueError):
        attempts = 1
    if attempts >= MAX_ATTEMPTS:
        counter.unlink(missing_ok=True)
        _refused(path, type(err)(f"{err.message} ({attempts} attempts)", hint=err.hint, causes=err.causes),
                 result, spool)
        return
    counter.write_text(f"{attempts}\n")
    result.kept.append((path, err))


def _refused(path: Path, err: AccelenvError, result: SpoolResult, spool: Path | None) -> None:
    """A report the server will not take: out of the spool into ``rejected/``, its reason beside it."""
    if spool is None:
        result.kept.append((path, err))
        return
    target_dir = spool / REJECTED_DIR
    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / path.name
    reason = {"code": err.code, "message": err.message, "hint": err.hint,
              "causes": [c.model_dump() for c in err.causes]}
    (target_dir / f"{path.stem}.reason.json").write_text(json.dumps(reason, indent=2) + "\n", encoding="utf-8")
    path.replace(target)
    result.moved.append((target, err))


def _settle(path: Path, item: dict[str, Any], result: SpoolResult, spool: Path | None) -> None:
    """Remove a report the batch stored (or found stored); move aside one it refused, with the server's reason."""
    status = item.get("status") if isinstance(item, dict) else None
    if status in ("created", "exists"):
        _stored(path, result, spool)
        return
    cls = ConflictError if status == "conflict" else ReportInvalidError
    try:
        error = ErrorBody.model_validate(item["error"])
        message, hint, causes = error.message, error.hint, error.causes
    except (KeyError, TypeError, ValueError):
        message, hint, causes = f"status {status!r}", None, []
    _refused(path, cls(f"the server refused the report: {message}", hint=hint, causes=causes), result, spool)
