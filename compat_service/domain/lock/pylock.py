"""A resolved closure as a PEP 751 ``pylock.toml``, checked with ``packaging.pylock``.

Every wheel carries the sha256 the index states for it. PEP 751 makes ``hashes`` required, so a file whose
index states none is either hashed from the bytes accelenv downloaded (recorded per file under
``[packages.tool.accelenv] hash-source``: ``index`` or ``downloaded``, never presented as the index's) or the
lock is refused (`HashUnstatedError`, with ``--require-index-hashes``). Nothing is invented.

Where the index serves a PEP 825 ``{name}-{version}-variants.json`` for a locked release, the package carries
``[packages.variants-json]`` (its URL and hash). ``packaging.pylock`` (26.x) does not model that PEP 825 key
yet, so the round trip it checks is the PEP 751 part (`validate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from compat_service.domain.errors import Cause, InvalidRequestError
from compat_service.domain.json_types import JsonMapping, JsonObject

#: where a file's hash came from
HASH_FROM_INDEX = "index"
HASH_FROM_DOWNLOAD = "downloaded"


@dataclass(frozen=True)
class LockedFile:
    filename: str
    url: str
    #: the sha256 (hex); None = the index states none and it was not downloaded
    sha256: str | None
    hash_source: str | None = None
    size: int | None = None
    upload_time: datetime | None = None


@dataclass(frozen=True)
class LockedPackage:
    name: str
    version: str
    index: str | None
    wheels: tuple[LockedFile, ...]
    #: the PEP 825 variants JSON of the release, when the index serves one
    variants_json: LockedFile | None = None


@dataclass(frozen=True)
class LockSummary:
    files: int
    index_hashes: int
    downloaded_hashes: int

    def sentence(self) -> str:
        return (f"{self.files} files: {self.index_hashes} with the hash the index states, "
                f"{self.downloaded_hashes} hashed by accelenv from the downloaded bytes (the index states none)")


def summary(packages: Sequence[LockedPackage]) -> LockSummary:
    files = [f for p in packages for f in p.wheels]
    return LockSummary(
        len(files),
        sum(f.hash_source == HASH_FROM_INDEX for f in files),
        sum(f.hash_source == HASH_FROM_DOWNLOAD for f in files),
    )


def _file_entry(f: LockedFile) -> JsonObject:
    entry: JsonObject = {"name": f.filename, "url": f.url}
    if f.size is not None:
        entry["size"] = f.size
    if f.upload_time is not None:
        entry["upload-time"] = f.upload_time
    entry["hashes"] = {"sha256": f.sha256}
    return entry


def pylock_document(
    packages: Sequence[LockedPackage],
    *,
    python: str,
    environment: str,
    tool: JsonMapping,
) -> JsonObject:
    """The ``pylock.toml`` as a dict: ``python`` (3.11) and ``environment`` (a PEP 508 marker) say where it
    installs; ``tool`` goes under ``[tool.accelenv]``. Raises InvalidRequestError for a file without a hash."""
    unhashed = [f"{p.name} {p.version}: {f.filename}" for p in packages for f in p.wheels if not f.sha256]
    if unhashed:
        raise InvalidRequestError(
            "files without a hash cannot be locked (PEP 751 requires one per file)",
            causes=[Cause(constraint=u, origin="lock") for u in unhashed],
            hint="let accelenv hash them from the download, or use an index that states hashes",
        )
    out_packages = [_package_entry(p) for p in sorted(packages, key=lambda p: p.name)]
    return {
        "lock-version": "1.0",
        "environments": [environment],
        "requires-python": f"=={python}.*",
        "created-by": "accelenv",
        "packages": out_packages,
        "tool": {"accelenv": dict(tool)},
    }


def _package_entry(p: LockedPackage) -> JsonObject:
    """One ``[[packages]]`` entry: its wheels with their hashes, its variants JSON, where each hash came from."""
    entry: JsonObject = {"name": p.name, "version": p.version}
    if p.index:
        entry["index"] = p.index
    entry["wheels"] = [_file_entry(f) for f in p.wheels]
    if p.variants_json is not None and p.variants_json.sha256:
        entry["variants-json"] = {"url": p.variants_json.url, "hashes": {"sha256": p.variants_json.sha256}}
    entry["tool"] = {"accelenv": {"hash-source": {f.filename: f.hash_source for f in p.wheels}}}
    return entry


def pep751_part(document: JsonMapping) -> JsonObject:
    """``document`` without the PEP 825 keys ``packaging.pylock`` does not model (``packages.variants-json``)."""
    out = dict(document)
    out["packages"] = [{k: v for k, v in p.items() if k != "variants-json"} for p in document["packages"]]
    return out


def validate(document: JsonMapping) -> None:
    """Check ``document`` with ``packaging.pylock``: it parses, and writing it back gives the same PEP 751 dict
    (the tests read the written TOML back the same way)."""
    from packaging.pylock import Pylock, PylockValidationError

    part = pep751_part(document)
    try:
        again = Pylock.from_dict(part).to_dict()
    except PylockValidationError as exc:
        raise InvalidRequestError(f"the lock is not a valid pylock.toml: {exc}",
                                  hint="this is a bug in accelenv lock; please report it") from exc
    if again != part:
        differing = [key for key in part if part[key] != again.get(key)]
        raise InvalidRequestError(f"packaging.pylock does not round-trip the lock (keys {', '.join(differing)})",
                                  hint="this is a bug in accelenv lock; please report it")


def dumps(document: JsonMapping) -> str:
    import tomli_w

    return tomli_w.dumps(dict(document))


@dataclass(frozen=True)
class HostClassLock:
    """One entry of a lock directory's index: a lock file and the host classes that take it."""

    lock: str
    #: what the lock is for: torch version, build label, platform, Python
    answer: dict[str, str]
    host_classes: list[JsonObject] = field(default_factory=list)
