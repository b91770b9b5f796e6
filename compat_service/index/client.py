"""HTTP access to a simple-API index: project pages, PEP 658 metadata files and byte ranges of wheels.

- Project pages are negotiated (``Accept`` prefers PEP 691 JSON, accepts PEP 503 HTML; pypi-simple's
  constant and parsers) and revalidated against the local cache (``If-None-Match``/``If-Modified-Since``).
- Every request is retried with exponential backoff and jitter (stamina) on transport errors, 429 and 5xx;
  a 404 is an answer, not a failure.
- Range reads never fall back to a full download: a server that ignores ``Range`` is an error.
- One `httpx.Client` is shared by the worker threads of a refresh (its connection pool is thread-safe);
  tests inject a transport or point the client at a loopback server.
- Every read is bounded (`ReadLimits`): bytes per project page, per metadata file and per range answer
  (never more than the range asked for), seconds per request (the body included: a server dripping one
  byte at a time is cut off) and for the whole run. A page is trusted only once it is a simple-API page
  for the project asked (content type, PEP 691 api-version 1.x, the project's name, at least one of its
  files): a captive portal's "Please sign in" is an error, not "the project has no files". Redirects are
  followed within the index's origin only (at most ``ReadLimits.redirects``); files may be served from
  another origin (an index links its files where it likes) but never over plain HTTP from an HTTPS page.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

import httpx
import stamina
from packaging.utils import canonicalize_name
from pypi_simple import ACCEPT_JSON_PREFERRED, ProjectPage

from compat_service.index.errors import IndexResponseError, IndexUnreachableError
from compat_service.index.page_cache import CachedPage, IndexCache

_RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
_REDIRECT_STATUS = frozenset({301, 302, 303, 307, 308})
JSON_TYPE = "application/vnd.pypi.simple.v1+json"


class _RetryableStatus(Exception):
    def __init__(self, status: int, url: str) -> None:
        super().__init__(f"HTTP {status} from {url}")
        self.status = status


def _retryable(exc: Exception) -> bool:
    return isinstance(exc, (httpx.TransportError, _RetryableStatus))


@dataclass
class RequestStats:
    """What a refresh cost: requests by outcome and bytes read from the network."""

    requests: int = 0
    not_modified: int = 0
    retries: int = 0
    range_requests: int = 0
    bytes_read: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **counts: int) -> None:
        with self._lock:
            for key, value in counts.items():
                setattr(self, key, getattr(self, key) + value)

    def as_dict(self) -> dict[str, int]:
        return {
            "requests": self.requests,
            "not_modified": self.not_modified,
            "retries": self.retries,
            "range_requests": self.range_requests,
            "bytes_read": self.bytes_read,
        }


@dataclass(frozen=True)
class ReadLimits:
    """What one refresh may read (issue 24: a page that never ended grew memory 10 MB/s)."""

    #: a project page (torch's JSON page is a few MB)
    page_bytes: int = 64 * 1024 * 1024
    #: a PEP 658 metadata file, and a METADATA member once inflated (wheel_metadata.py)
    metadata_bytes: int = 8 * 1024 * 1024
    #: seconds one request may take, its body included (the retries each get their own)
    request_s: float = 120.0
    #: seconds the whole refresh may take
    run_s: float = 3600.0
    #: redirects followed per request
    redirects: int = 5


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5
    wait_initial: float = 0.2
    wait_max: float = 5.0
    #: total seconds one request may spend over all its attempts
    timeout: float = 120.0


class IndexClient:
    """Reads one index. Use as a context manager (it owns the HTTP client unless one is passed in)."""

    def __init__(
        self,
        *,
        cache: IndexCache | None = None,
        http: httpx.Client | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        accept: str = ACCEPT_JSON_PREFERRED,
        user_agent: str = "accelenv-matrix-refresh",
        limits: ReadLimits | None = None,
        run_deadline: float | None = None,
    ) -> None:
        self.cache = cache or IndexCache(None)
        self.limits = limits or ReadLimits()
        #: time.monotonic() past which no request starts or goes on (shared with a derived client)
        self.run_deadline = run_deadline if run_deadline is not None else time.monotonic() + self.limits.run_s
        self._own_http = http is None
        self.http = http or httpx.Client(
            timeout=timeout,
            follow_redirects=False,
            headers={"User-Agent": user_agent},
            limits=httpx.Limits(max_connections=32, max_keepalive_connections=32),
        )
        self.retry = retry or RetryPolicy()
        self.accept = accept
        self.stats = RequestStats()

    def __enter__(self) -> IndexClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._own_http:
            self.http.close()

    @contextmanager
    def _attempts(self, url: str) -> Iterator[Iterator[object]]:
        """Yield stamina's attempt iterator; a last failure becomes `IndexUnreachableError`."""
        try:
            yield iter(
                stamina.retry_context(
                    on=_retryable,
                    attempts=self.retry.attempts,
                    timeout=self.retry.timeout,
                    wait_initial=self.retry.wait_initial,
                    wait_max=self.retry.wait_max,
                )
            )
        except (httpx.TransportError, _RetryableStatus) as exc:
            raise IndexUnreachableError(
                f"the index did not answer {url}: {exc}",
                hint="check the URL and the network, or retry later; --index-url picks another index",
            ) from exc

    def _deadline(self, url: str) -> float:
        now = time.monotonic()
        if now >= self.run_deadline:
            raise IndexUnreachableError(
                f"the refresh ran out of time before {url} ({self.limits.run_s:g} s for the whole run)",
                hint="retry later, or read fewer projects (--package)",
            )
        return min(now + self.limits.request_s, self.run_deadline)

    def _read_body(self, response: httpx.Response, url: str, max_bytes: int, deadline: float) -> bytes:
        """The body, refused past ``max_bytes`` or ``deadline`` (checked as each chunk arrives)."""
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise IndexResponseError(
                f"{url} announces {int(declared)} bytes; at most {max_bytes} are read from such an answer",
                hint="the index must serve simple-API pages and small metadata files; check --index-url",
            )
        chunks, size = [], 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > max_bytes:
                raise IndexResponseError(
                    f"{url} sent more than {max_bytes} bytes; the rest was not read",
                    hint="the index must serve simple-API pages and small metadata files; check --index-url",
                )
            if time.monotonic() > deadline:
                raise IndexUnreachableError(
                    f"{url} did not finish its answer within {self.limits.request_s:g} s ({size} bytes read)",
                    hint="the index is too slow or stalled; retry later",
                )
            chunks.append(chunk)
        return b"".join(chunks)

    def _next_url(self, url: str, response: httpx.Response, origin: str | None, hops: int) -> str:
        location = response.headers.get("location")
        if not location:
            raise IndexResponseError(f"{url} answered HTTP {response.status_code} without a Location")
        target = urljoin(url, location)
        if hops >= self.limits.redirects:
            raise IndexResponseError(
                f"{url}: more than {self.limits.redirects} redirects (a loop?)", hint="check --index-url"
            )
        if origin is not None and _origin(target) != origin:
            raise IndexResponseError(
                f"{url} redirects to another origin ({_origin(target)}); only redirects within {origin} are followed",
                hint="use the index's final URL as --index-url if the move is legitimate",
            )
        if url.startswith("https:") and target.startswith("http:"):
            raise IndexResponseError(f"{url} redirects from HTTPS to plain HTTP ({target})")
        return target

    def _send(
        self, method: str, url: str, headers: dict[str, str], *, max_bytes: int, same_origin: bool = False,
    ) -> tuple[httpx.Response, bytes]:
        """One request with retries and bounded redirects; returns any non-retryable response (200, 206,
        304, 404, ...) and its body, read within ``max_bytes`` and the time limits."""
        origin = _origin(url) if same_origin else None
        with self._attempts(url) as attempts:
            for number, attempt in enumerate(attempts):
                with attempt:  # type: ignore[attr-defined]
                    if number:
                        self.stats.add(retries=1)
                    current, hops = url, 0
                    while True:
                        deadline = self._deadline(current)
                        self.stats.add(requests=1)
                        with self.http.stream(method, current, headers=headers, follow_redirects=False) as response:
                            if response.status_code in _RETRY_STATUS:
                                raise _RetryableStatus(response.status_code, current)
                            if response.status_code in _REDIRECT_STATUS:
                                current, hops = self._next_url(current, response, origin, hops), hops + 1
                                continue
                            body = self._read_body(response, current, max_bytes, deadline)
                        self.stats.add(bytes_read=len(body))
                        return response, body
        raise AssertionError("unreachable")  # pragma: no cover

    # -- project pages ------------------------------------------------------------------------------

    def project_page(self, index_url: str, project: str) -> ProjectPage | None:
        """The project's page (JSON or HTML as the server chose), or None when the index has no such project."""
        url = f"{index_url.rstrip('/')}/{project}/"
        cached = self.cache.page(url, self.accept)
        headers = {"Accept": self.accept, **(cached.validators() if cached else {})}
        response, body = self._send("GET", url, headers, max_bytes=self.limits.page_bytes, same_origin=True)
        if response.status_code == 304 and cached is not None:
            self.stats.add(not_modified=1)
            page = cached
        elif response.status_code == 404:
            return None
        elif response.status_code == 200:
            page = CachedPage(
                url=str(response.url),
                content_type=response.headers.get("content-type", "text/html"),
                body=body,
                etag=response.headers.get("etag"),
                last_modified=response.headers.get("last-modified"),
            )
            if page.etag or page.last_modified:
                self.cache.store_page(self.accept, CachedPage(url, page.content_type, page.body,
                                                              page.etag, page.last_modified))
        else:
            raise IndexResponseError(
                f"{url} answered HTTP {response.status_code}",
                hint="the URL must be a PEP 503/691 simple API (…/simple/); check --index-url",
            )
        return _parse_page(project, page)

    # -- files ---------------------------------------------------------------------------------------

    def get_optional(self, url: str) -> bytes | None:
        """A small file (a PEP 658 metadata file) or None on 404."""
        response, body = self._send("GET", url, {}, max_bytes=self.limits.metadata_bytes)
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise IndexResponseError(f"{url} answered HTTP {response.status_code}")
        return body

    def read_range(self, url: str, start: int | None, end: int | None) -> tuple[bytes, int]:
        """Bytes ``start..end`` (inclusive; ``start=None`` = the last ``end`` bytes) and the file's size."""
        spec = f"bytes=-{end}" if start is None else f"bytes={start}-{end}"
        asked = end if start is None else (end or 0) - start + 1
        self.stats.add(range_requests=1)
        response, body = self._send("GET", url, {"Range": spec}, max_bytes=max(asked or 0, 1))
        if response.status_code != 206:
            raise IndexResponseError(
                f"{url} answered HTTP {response.status_code} to a range request",
                hint="refresh reads wheel metadata with HTTP range requests and never downloads "
                "whole wheels; use an index whose file host supports Range",
            )
        return body, _total_size(response, url)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def _total_size(response: httpx.Response, url: str) -> int:
    content_range = response.headers.get("content-range", "")
    total = content_range.rpartition("/")[2]
    if not total.isdigit():
        raise IndexResponseError(f"{url}: range answer without a file size (Content-Range {content_range!r})")
    return int(total)


def _parse_page(project: str, page: CachedPage) -> ProjectPage:
    """The page, once it is a simple-API page for ``project`` (nothing derived from it is trusted before)."""
    media = page.content_type.split(";")[0].strip().lower()
    try:
        if media == JSON_TYPE:
            data = json.loads(page.body)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            version = str((data.get("meta") or {}).get("api-version", ""))
            if version.split(".")[0] != "1":
                raise IndexResponseError(
                    f"{page.url} speaks simple-API version {version[:20]!r}; accelenv reads version 1.x",
                    hint="use an index serving PEP 691 version 1, or its HTML pages",
                )
            if canonicalize_name(str(data.get("name", ""))) != canonicalize_name(project):
                raise IndexResponseError(
                    f"{page.url} is the page of {str(data.get('name'))[:60]!r}, not of {project!r}",
                    hint="check --index-url",
                )
            parsed = ProjectPage.from_json_data(data, base_url=page.url)
        elif media in ("application/vnd.pypi.simple.v1+html", "text/html"):
            parsed = ProjectPage.from_html(project, page.body, base_url=page.url)
        else:
            raise IndexResponseError(
                f"{page.url} answered with content type {page.content_type[:80]!r}, not a simple-API page",
                hint="the URL must be a PEP 503/691 simple API (…/simple/); check --index-url",
            )
    except IndexResponseError:
        raise
    except Exception as exc:  # pypi_simple's and json's errors: the page is unreadable, whatever the cause
        raise IndexResponseError(f"{page.url}: the project page cannot be parsed: {_why_unreadable(exc)}") from exc
    wanted = canonicalize_name(project)
    ours = [p for p in parsed.packages if p.project is not None and canonicalize_name(p.project) == wanted]
    if not ours:
        # a project the index has is a page with its files; an empty or foreign page is a portal, an error
        # page or a mirror gone wrong, and trusting it would delete every fact of the project
        raise IndexResponseError(
            f"{page.url} lists no file of {project} ({len(parsed.packages)} link(s)): not a simple-API page "
            "for this project (a sign-in or error page?)",
            hint="check --index-url and that the index is reachable without signing in; nothing was changed",
        )
    return parsed


def _why_unreadable(exc: Exception) -> str:
    """One line saying why a page could not be read: a validation error's first problems by place (its
    own text is a multi-line dump quoting the input), anything else its message, cut to 200 characters."""
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        errors = exc.errors(include_url=False, include_input=False, include_context=False)
        shown = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'the page'}: {e['msg']}" for e in errors[:3])
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        return (shown + more)[:200]
    return " ".join(str(exc).split())[:200]
