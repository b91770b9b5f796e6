"""The local cache behind conditional requests: a project page with its validators, metadata by file hash.

Project pages change and are revalidated on every refresh (``If-None-Match`` / ``If-Modified-Since``; a 304
reuses the stored body). Metadata is keyed by the wheel's sha256 from the index, so it never needs
revalidation: a wheel with the same hash has the same ``METADATA``. Writes go to a temporary file and are
renamed into place, so a refresh killed midway leaves no half-written entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CachedPage:
    url: str
    content_type: str
    body: bytes
    etag: str | None
    last_modified: str | None

    def validators(self) -> dict[str, str]:
        """The conditional-request headers this entry allows."""
        headers = {}
        if self.etag:
            headers["If-None-Match"] = self.etag
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class IndexCache:
    """A directory: ``pages/<sha256 of URL and Accept>.json`` and ``metadata/<wheel sha256>.METADATA``."""

    def __init__(self, root: Path | None) -> None:
        self.root = root

    def _page_path(self, url: str, accept: str) -> Path | None:
        if self.root is None:
            return None
        key = hashlib.sha256(f"{accept}\n{url}".encode()).hexdigest()
        return self.root / "pages" / f"{key}.json"

    def page(self, url: str, accept: str) -> CachedPage | None:
        path = self._page_path(url, accept)
        if path is None or not path.is_file():
            return None
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            return CachedPage(
                url=raw["url"],
                content_type=raw["content_type"],
                body=raw["body"].encode("utf-8"),
                etag=raw.get("etag"),
                last_modified=raw.get("last_modified"),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None  # a damaged entry is a miss, never an error

    def store_page(self, accept: str, page: CachedPage) -> None:
        path = self._page_path(page.url, accept)
        if path is None:
            return
        record = {
            "url": page.url,
            "content_type": page.content_type,
            "etag": page.etag,
            "last_modified": page.last_modified,
            "body": page.body.decode("utf-8", errors="replace"),
        }
        _atomic_write(path, json.dumps(record).encode("utf-8"))

    def _metadata_path(self, sha256: str | None) -> Path | None:
        if self.root is None or not sha256:
            return None
        return self.root / "metadata" / f"{sha256}.METADATA"

    def metadata(self, sha256: str | None) -> bytes | None:
        path = self._metadata_path(sha256)
        if path is None or not path.is_file():
            return None
        try:
            return path.read_bytes()
        except OSError:
            return None

    def store_metadata(self, sha256: str | None, data: bytes) -> None:
        path = self._metadata_path(sha256)
        if path is not None:
            _atomic_write(path, data)
