"""A compiled cache of the validated matrix, so `accelenv resolve` starts without YAML or pydantic.

Loading matrix_data means parsing YAML and validating it with pydantic: ~0.3 s, most of it building the
models. The first load validates, converts the models to the matrix's rows (``rows.MatrixTables``, frozen
classes generated from the schema) and writes the rows in the schema's JSON form, marshalled (plain lists,
dicts and strings: the standard library's fastest loader of them), into the user cache directory, keyed by the
interpreter (marshal's format is its own) and by the stats of the data files *and* of the modules that shape
them (the schema, the rows, the index layer; ``data_key``), so any edit to one misses the cache. The key is the
file's first line, and a checksum of it names the file (``cache_file``, ``read_cached``, ``write_cached``, which
the ecosystem catalog's compiled file uses too): a file whose first line is another key is a miss. Later loads
build the same row classes from that form (``MatrixTables.from_json``, no pydantic imported): both paths hand
`InMemoryMatrix` one row family, through one constructor. A snapshot that does not load or lacks a field is
rebuilt from the YAML.

Override the directory with ACCELENV_CACHE_DIR; ACCELENV_NO_MATRIX_CACHE=1 turns the cache off.
"""

from __future__ import annotations

import marshal
import os
import sys
import zlib
from collections.abc import Iterable
from pathlib import Path

from compat_service.domain.matrix.interface import InMemoryMatrix
from compat_service.domain.matrix.model.row_base import row_json
from compat_service.domain.matrix.model.rows import MatrixTables

#: bump when the snapshot layout changes
SNAPSHOT_FORMAT = "3"
#: snapshots kept in the cache directory (the newest; one per checkout or install of matrix_data in use)
KEEP_SNAPSHOTS = 8
#: the modules that shape the data (schema and rows, and the merge of the generated layer): an edit to one
#: must miss the cache
_MATRIX_PACKAGE = Path(__file__).resolve().parent.parent
_SHAPING_FILES = tuple(
    _MATRIX_PACKAGE / name
    for name in (
        "model/schema.py",
        "model/rows.py",
        "model/row_base.py",
        "index/index_layer.py",
        "index/index_facts.py",
        "markers.py",
    )
)


def bundled_data_dir() -> Path:
    from matrix_data import DATA_DIR

    return DATA_DIR


def cache_dir() -> Path:
    override = os.environ.get("ACCELENV_CACHE_DIR")
    if override:
        return Path(override)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("accelenv", appauthor=False))


def data_key(data_dir: Path) -> str:
    """The snapshot's key: the format, and the path, size, mtime and ctime of each shaping module and data file.

    File stats, as Python's own bytecode cache uses, not the files' bytes (hashing the YAML would cost more of
    the start-up than the answer). On POSIX writing a file changes its ctime, which no tool sets back, so an
    edit always misses (on Windows ctime is the creation time: size and mtime decide); a fresh checkout or
    install misses once, with the same content, and writes the snapshot again."""
    files = [*_SHAPING_FILES, *sorted([*data_dir.glob("*.yaml"), *data_dir.glob("index/*.yaml")])]
    return stat_key(f"{SNAPSHOT_FORMAT} {sys.implementation.cache_tag} marshal {marshal.version}", files)


def stat_key(tag: str, files: Iterable[Path]) -> str:
    """``tag``, then the path, size, mtime and ctime of each file that exists, in the order given."""
    parts = [tag]
    for path in files:
        try:
            stat = path.stat()
        except OSError:
            continue
        parts.append(f"{os.path.abspath(path)}\0{stat.st_size}\0{stat.st_mtime_ns}\0{stat.st_ctime_ns}")
    return "\0".join(parts)


def cache_file(kind: str, key: str, suffix: str = ".json") -> Path | None:
    """Where the compiled file of ``kind`` for ``key`` lives; None when ACCELENV_NO_MATRIX_CACHE turns caching off.

    The name holds a checksum of the key, which keeps the files of different checkouts apart; the key itself,
    on the file's first line, decides whether the file is current (`read_cached`)."""
    if os.environ.get("ACCELENV_NO_MATRIX_CACHE", "") not in ("", "0"):
        return None
    return cache_dir() / f"{kind}-{zlib.crc32(_key_line(key)):08x}{suffix}"


def read_cached(file: Path | None, key: str) -> bytes | None:
    """What `write_cached` wrote to ``file`` for ``key``; None when it is missing, unreadable or of another key."""
    if file is None:
        return None
    try:
        data = file.read_bytes()
    except OSError:
        return None
    line, _, content = data.partition(b"\n")
    return content if line == _key_line(key) else None


def write_cached(file: Path | None, key: str, content: bytes) -> None:
    """Write ``content`` to ``file`` under ``key`` (atomically; a cache that cannot be written only costs speed)."""
    if file is not None:
        _write_atomically(file, _key_line(key) + b"\n" + content)


def _key_line(key: str) -> bytes:
    # a newline in a path would split the key line: that file then never matches and is rebuilt each time
    return key.encode("utf-8", "surrogateescape")


def load_matrix_cached(path: Path | None = None) -> InMemoryMatrix:
    """The matrix in `path` (default: the bundled matrix_data), from the snapshot when it is current."""
    data_dir = Path(path) if path is not None else bundled_data_dir()
    key = data_key(data_dir)
    snapshot = cache_file("matrix", key, ".marshal")
    content = read_cached(snapshot, key)
    if content is not None:
        try:
            return InMemoryMatrix(MatrixTables.from_json(marshal.loads(content)))
        except (ValueError, EOFError, KeyError, TypeError, AttributeError):
            pass  # a damaged snapshot is rebuilt from the YAML below
    from compat_service.domain.matrix.loading.loader import load_matrix_rows

    rows = load_matrix_rows(data_dir)
    if snapshot is not None:
        write_cached(snapshot, key, marshal.dumps(row_json(rows)))
        _prune(snapshot.parent)
    return InMemoryMatrix(rows)


def _prune(directory: Path) -> None:
    """Keep the KEEP_SNAPSHOTS newest snapshots: keyed by file stats, each checkout or install writes its own."""
    try:
        found = sorted(directory.glob("matrix-*"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in found[KEEP_SNAPSHOTS:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass  # another process pruned or wrote at the same time: the next write prunes again


def _write_atomically(target: Path, content: bytes) -> None:
    import tempfile  # only when writing: a current snapshot is read without it

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".matrix-", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        os.replace(tmp, target)
    except OSError:
        # A read-only or full cache directory only costs speed, never correctness.
        pass
