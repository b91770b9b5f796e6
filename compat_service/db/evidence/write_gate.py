"""One SQLite writer at a time, handed over without the busy handler's sleeps.

SQLite allows one writer. Left to ``busy_timeout``, waiting writers poll with growing sleeps (1, 2, 5, 10,
... ms), which under many concurrent submitters wastes most of the time asleep. Ingest instead queues
writers on a lock that wakes the next one as soon as the previous commits: a thread lock inside a process
and, where the OS has it, an ``flock`` on a file beside the database across processes (server workers).
``BEGIN IMMEDIATE`` and ``busy_timeout`` still protect against writers that do not take this gate
(`accelenv db load`, another tool).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

from sqlalchemy.engine import Engine

try:  # POSIX only; elsewhere threads are still serialized and processes fall back to busy_timeout
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

_gates: dict[str, _Gate] = {}
_gates_lock = threading.Lock()


class _Gate:
    def __init__(self, database: str | None) -> None:
        self._lock = threading.Lock()
        self._lock_path = f"{database}.ingest-lock" if database and database != ":memory:" else None
        self._fd: int | None = None

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        with self._lock:
            if fcntl is None or self._lock_path is None:
                yield
                return
            if self._fd is None:
                try:
                    self._fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
                except OSError:
                    # no lock file beside the database (its folder is missing or read-only): busy_timeout
                    # still orders the writers, and opening the database reports the real problem
                    yield
                    return
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)


@contextlib.contextmanager
def sqlite_write_gate(engine: Engine) -> Iterator[None]:
    """Hold the write gate of ``engine``'s SQLite file; does nothing for other databases."""
    if engine.dialect.name != "sqlite":
        yield
        return
    database = engine.url.database
    with _gates_lock:
        gate = _gates.setdefault(str(database), _Gate(database))
    with gate.held():
        yield
