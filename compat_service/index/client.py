"""HTTP access to a simple-API index: project pages, PEP 658 metadata files and byte ranges of wheels.

- Project pages are negotiated (``Accept`` prefers PEP 691 JSON, accepts PEP 503 HTML; pypi-simple's
  constant and parsers) and revalidated against the local cache (``If-None-Match``/``If-Modified-Since``).
- Every request is retried with exponential backoff and jitter (stamina) on transport errors, 429 and 5xx;
  a 404 is an answer, not a failure.
- Range reads never fall back to a full download: a server that ignores ``Range`` is an error.
- One `httpx.Client` is shared by the worker threads of a refresh (its connection pool is thread-safe);
  tests inject a transport or point the client at a loopback server.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx
import stamina
from pypi_simple import ACCEPT_JSON_PREFERRED, ProjectPage

from compat_service.index.errors import IndexResponseError, IndexUnreachableError
from compat_service.index.page_cache import CachedPage, IndexCache

_RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
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
    ) -> None:
        self.cache = cache or IndexCache(None)
        self._own_http = http is None
        self.http = http or httpx.Client(
            timeout=timeout,
            follow_redirects=True,
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

    def _send(self, method: str, url: str, headers: dict[str, str]) -> httpx.Response:
        """One request with retries; returns any non-retryable response (200, 206, 304, 404, ...)."""
        with self._attempts(url) as attempts:
            for number, attempt in enumerate(attempts):
                with attempt:  # type: ignore[attr-defined]
                    if number:
                        self.stats.add(retries=1)
                    self.stats.add(requests=1)
                    response = self.http.request(method, url, headers=headers)
                    if response.status_code in _RETRY_STATUS:
                        raise _RetryableStatus(response.status_code, url)
                    self.stats.add(bytes_read=len(response.content))
                    return response
        raise AssertionError("unreachable")  # pragma: no cover

    # -- project pages ------------------------------------------------------------------------------

    def project_page(self, index_url: str, project: str) -> ProjectPage | None:
        """The project's page (JSON or HTML as the server chose), or None when the index has no such project."""
        url = f"{index_url.rstrip('/')}/{project}/"
        cached = self.cache.page(url, self.accept)
        headers = {"Accept": self.accept, **(cached.validators() if cached else {})}
        response = self._send("GET", url, headers)
        if response.status_code == 304 and cached is not None:
            self.stats.add(not_modified=1)
            page = cached
        elif response.status_code == 404:
            return None
        elif response.status_code == 200:
            page = CachedPage(
                url=str(response.url),
                content_type=response.headers.get("content-type", "text/html"),
                body=response.content,
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
        response = self._send("GET", url, {})
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise IndexResponseError(f"{url} answered HTTP {response.status_code}")
        return response.content

    def read_range(self, url: str, start: int | None, end: int | None) -> tuple[bytes, int]:
        """Bytes ``start..end`` (inclusive; ``start=None`` = the last ``end`` bytes) and the file's size."""
        spec = f"bytes=-{end}" if start is None else f"bytes={start}-{end}"
        with self._attempts(url) as attempts:
            for number, attempt in enumerate(attempts):
                with attempt:  # type: ignore[attr-defined]
                    if number:
                        self.stats.add(retries=1)
                    self.stats.add(requests=1, range_requests=1)
                    with self.http.stream("GET", url, headers={"Range": spec}) as response:
                        if response.status_code in _RETRY_STATUS:
                            raise _RetryableStatus(response.status_code, url)
                        if response.status_code != 206:
                            raise IndexResponseError(
                                f"{url} answered HTTP {response.status_code} to a range request",
                                hint="refresh reads wheel metadata with HTTP range requests and never downloads "
                                "whole wheels; use an index whose file host supports Range",
                            )
                        body = response.read()
                    self.stats.add(bytes_read=len(body))
                    return body, _total_size(response, url)
        raise AssertionError("unreachable")  # pragma: no cover


def _total_size(response: httpx.Response, url: str) -> int:
    content_range = response.headers.get("content-range", "")
    total = content_range.rpartition("/")[2]
    if not total.isdigit():
        raise IndexResponseError(f"{url}: range answer without a file size (Content-Range {content_range!r})")
    return int(total)


def _parse_page(project: str, page: CachedPage) -> ProjectPage:
    media = page.content_type.split(";")[0].strip().lower()
    try:
        if media == JSON_TYPE:
            return ProjectPage.from_json_data(json.loads(page.body), base_url=page.url)
        if media in ("application/vnd.pypi.simple.v1+html", "text/html"):
            return ProjectPage.from_html(project, page.body, base_url=page.url)
    except (ValueError, KeyError, TypeError) as exc:
        raise IndexResponseError(f"{page.url}: the project page cannot be parsed: {exc}") from exc
    raise IndexResponseError(
        f"{page.url} answered with content type {page.content_type!r}, not a simple-API page",
        hint="the URL must be a PEP 503/691 simple API (…/simple/); check --index-url",
    )
