"""A real `uvicorn` with several workers on loopback, over a migrated database (tests and the benchmark).

The matrix is loaded only when asked (ingest does not read it), so workers start fast; the schema is migrated and a
`report` token created in this process before the server starts, as an operator would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx

from tests.server_process import free_port, stop

REPO_ROOT = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT_S = 60


@dataclass
class LiveServer:
    base_url: str
    token: str
    database_url: str
    log: IO[bytes] | None = None
    process: subprocess.Popen[bytes] | None = None

    def kill(self) -> None:
        """SIGKILL the server and all its workers at once (its own process group), as a crash would."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def output(self) -> str:
        """What the server printed so far (warnings and errors: the access log is off)."""
        if self.log is None:
            return ""
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


def prepare_database(database_url: str) -> str:
    """Migrate ``database_url`` and return a new `report` token."""
    from compat_service.db import migrate
    from compat_service.db.engine import make_engine
    from compat_service.db.matrix.tables import ApiTokenCreate
    from compat_service.db.tokens import create_token

    engine = make_engine(database_url)
    try:
        migrate.upgrade(engine)
        _public, secret = create_token(engine, ApiTokenCreate(scope="report", note="live server"))
    finally:
        engine.dispose()
    return secret


@contextmanager
def live_server(
    database_url: str, *, workers: int = 3, load_matrix: bool = False, env: dict[str, str] | None = None,
    http: str | None = None,
) -> Iterator[LiveServer]:
    """``http``: uvicorn's ``--http`` (default: what `accelenv serve` uses)."""
    from compat_service.api.server.http_protocol import HTTP_PROTOCOL

    token = prepare_database(database_url)
    port = free_port()
    env = os.environ | (env or {}) | {
        "ACCELENV_DATABASE_URL": database_url,
        "ACCELENV_LOAD_MATRIX_ON_START": str(load_matrix).lower(),
        "ACCELENV_AUTO_MIGRATE": "false",
        "PYTHONPATH": str(REPO_ROOT),
    }
    cmd = [
        sys.executable, "-m", "uvicorn", "--factory", "compat_service.api.app:app_from_env",
        "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers),
        "--log-level", "warning", "--no-access-log", "--http", http or HTTP_PROTOCOL,
    ]
    # A file, not a pipe: a full pipe would block the workers.
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        cmd, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(proc, base_url, log)
        yield LiveServer(base_url=base_url, token=token, database_url=database_url, log=log, process=proc)
    finally:
        stop(proc)
        log.close()


def _wait_ready(proc: subprocess.Popen[bytes], base_url: str, log: IO[bytes]) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            output = log.read().decode(errors="replace")
            raise RuntimeError(f"uvicorn exited with {proc.returncode}:\n{output[-3000:]}")
        try:
            if httpx.get(base_url + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"uvicorn did not answer on {base_url} within {STARTUP_TIMEOUT_S}s")
