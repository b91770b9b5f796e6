"""A wheel's core metadata without downloading the wheel.

1. The cache (keyed by the wheel's sha256 from the index page).
2. The PEP 658 metadata file (``<file URL>.metadata``) when the page announces one.
3. HTTP range reads: the zip's end record and central directory from the end of the file, then only the
   ``*.dist-info/METADATA`` member. The stdlib `zipfile` does the parsing over a file object whose reads
   become range requests (64 KiB blocks, cached), so a 900 MB torch wheel costs about 1.3 MB of reads.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass

from compat_service.index.client import IndexClient
from compat_service.index.errors import IndexResponseError

_BLOCK = 64 * 1024


@dataclass(frozen=True)
class WheelRef:
    """What the metadata reader needs to know about one file of a project page."""

    filename: str
    url: str
    sha256: str | None
    has_metadata: bool | None
    size: int | None


class RangeFile(io.RawIOBase):
    """A read-only, seekable view of a remote file; each read of uncached bytes is one range request."""

    def __init__(self, client: IndexClient, url: str) -> None:
        self.client = client
        self.url = url
        self._blocks: dict[int, bytes] = {}
        self._pos = 0
        # the first read is the tail (the zip's end record is there) and tells the size (Content-Range);
        # the size on the index page is not trusted over what the file host serves
        self.size = -1
        tail, self.size = client.read_range(url, None, _BLOCK)
        self._remember(self.size - len(tail), tail)

    def _remember(self, offset: int, data: bytes) -> None:
        # store whole blocks only; a partial first block is re-read if needed
        first = -(-offset // _BLOCK)
        for block in range(first, (offset + len(data)) // _BLOCK + 1):
            start = block * _BLOCK - offset
            chunk = data[start : start + _BLOCK]
            if len(chunk) == _BLOCK or block * _BLOCK + len(chunk) == self.size:
                self._blocks[block] = chunk

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self._pos + n)
        if self._pos >= end:
            return b""
        first, last = self._pos // _BLOCK, (end - 1) // _BLOCK
        missing = [b for b in range(first, last + 1) if b not in self._blocks]
        if missing:
            start = missing[0] * _BLOCK
            stop = min(self.size, (missing[-1] + 1) * _BLOCK) - 1
            data, _ = self.client.read_range(self.url, start, stop)
            self._remember(start, data)
            if any(b not in self._blocks for b in missing):
                raise IndexResponseError(f"{self.url}: the server sent fewer bytes than the range asked for")
        out = b"".join(self._blocks[b] for b in range(first, last + 1))
        out = out[self._pos - first * _BLOCK : end - first * _BLOCK]
        self._pos += len(out)
        return out

    def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def metadata_from_zip(fileobj: io.RawIOBase | io.BytesIO, filename: str, max_bytes: int = 8 * 1024 * 1024) -> bytes:
    """The ``METADATA`` member of a wheel (the one in the top-level ``*.dist-info`` directory), refused when
    it inflates past ``max_bytes`` (whatever size the zip's directory claims: reading stops there)."""
    return dist_info_member(fileobj, filename, "METADATA", max_bytes)


def dist_info_member(fileobj: io.RawIOBase | io.BytesIO, filename: str, member_name: str,
                     max_bytes: int = 8 * 1024 * 1024) -> bytes:
    """One member of a wheel's top-level ``*.dist-info`` directory (``METADATA``, PEP 825's ``variant.json``),
    refused when it inflates past ``max_bytes``."""
    try:
        with zipfile.ZipFile(fileobj) as wheel:
            suffix = f".dist-info/{member_name}"
            names = [n for n in wheel.namelist() if n.count("/") == 1 and n.endswith(suffix)]
            if len(names) != 1:
                raise IndexResponseError(
                    f"{filename}: expected one *{suffix} in the wheel, found {len(names)}"
                )
            info = wheel.getinfo(names[0])
            if info.file_size > max_bytes:
                raise IndexResponseError(
                    f"{filename}: its {member_name} inflates to {info.file_size} bytes; at most {max_bytes} are read",
                    hint=f"a wheel's {member_name} is a few KB; this file is not trusted",
                )
            with wheel.open(info) as member:
                data = member.read(max_bytes + 1)
            if len(data) > max_bytes:
                raise IndexResponseError(
                    f"{filename}: its {member_name} inflates past {max_bytes} bytes; the rest was not read",
                    hint=f"a wheel's {member_name} is a few KB; this file is not trusted",
                )
            return data
    except zipfile.BadZipFile as exc:
        raise IndexResponseError(f"{filename} is not a readable zip: {exc}") from exc


def read_metadata(client: IndexClient, wheel: WheelRef) -> tuple[bytes, str]:
    """The raw ``METADATA`` and how it was read: ``cache``, ``pep658`` or ``range``."""
    cached = client.cache.metadata(wheel.sha256)
    if cached is not None:
        return cached, "cache"
    raw: bytes | None = None
    how = "pep658"
    if wheel.has_metadata:
        raw = client.get_optional(wheel.url.split("#", 1)[0] + ".metadata")
    if raw is None:
        how = "range"
        raw = metadata_from_zip(
            RangeFile(client, wheel.url.split("#", 1)[0]), wheel.filename, client.limits.metadata_bytes
        )
    client.cache.store_metadata(wheel.sha256, raw)
    return raw, how


#: malformed entries named one by one per file; the rest are counted
MAX_NAMED = 5


def metadata_notices(raw: bytes, filename: str) -> list[str]:
    """What of a METADATA file's ``Requires-Dist`` lines the refresh cannot use, said out loud: lines the
    header parser did not return, and entries that are not valid requirements (both are skipped)."""
    from packaging.markers import InvalidMarker
    from packaging.metadata import parse_email
    from packaging.requirements import InvalidRequirement, Requirement

    headers = raw.split(b"\n\n", 1)[0].split(b"\r\n\r\n", 1)[0]
    lines = sum(1 for line in headers.splitlines() if line[:14].lower() == b"requires-dist:")
    fields, _unparsed = parse_email(headers)
    entries = fields.get("requires_dist", [])
    notices = []
    if len(entries) != lines:
        notices.append(f"{filename}: METADATA has {lines} Requires-Dist lines, {len(entries)} could be read")
    bad = []
    for text in entries:
        try:
            Requirement(text)
        except (InvalidRequirement, InvalidMarker):
            bad.append(text)
    for text in bad[:MAX_NAMED]:
        notices.append(f"{filename}: Requires-Dist {text[:120]!r} is not a valid requirement; skipped")
    if len(bad) > MAX_NAMED:
        notices.append(f"{filename}: {len(bad) - MAX_NAMED} more invalid Requires-Dist entries skipped")
    return notices
