"""`accelenv serve` as a real uvicorn on loopback: embedded first start, PostgreSQL with workers, refusal."""

from __future__ import annotations

import concurrent.futures
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO_ROOT
from tests.server_process import free_port, stop

pytestmark = pytest.mark.slow


def accelenv_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "cli.main", *args]


def run_accelenv(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`accelenv ARGS` run to its end with ``env``, its output captured."""
    return subprocess.run(
        accelenv_cmd(*args), cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60, check=False
    )


@contextmanager
def served(args: list[str], env: dict[str, str], timeout_s: float = 60) -> Iterator[str]:
    """Run `accelenv serve` on a free loopback port until /readyz answers 200; stop it afterwards."""
    port = free_port()
    proc = subprocess.Popen(
        accelenv_cmd("serve", "--host", "127.0.0.1", "--port", str(port), *args),
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    f"accelenv serve exited with {proc.returncode}: "
                    f"{proc.stdout.read() if proc.stdout else ''}"
                )
            try:
                if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("accelenv serve did not become ready in time")
            time.sleep(0.2)
        yield base
    finally:
        stop(proc)


def raw_status(base: str, target: str) -> int:
    """The status of one raw HTTP/1.1 GET (httpx refuses URLs this long, which is the point)."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        status_line = sock.makefile("rb").readline().decode()
    return int(status_line.split()[1])


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELENV_")}
    env.update(extra)
    return env


def _hammer(base: str, n: int = 40) -> list[int]:
    paths = [
        "/v1/resolve?torch=2.3&backend=cu121",
        "/v1/torch?minor=2.4",
        "/v1/resolve?backend=cuda&driver=535.104.05",
    ]
    with httpx.Client(base_url=base, timeout=10) as client, concurrent.futures.ThreadPoolExecutor(8) as pool:
        return list(pool.map(lambda i: client.get(paths[i % len(paths)]).status_code, range(n)))


def test_first_start_on_the_embedded_default_needs_no_set_up(tmp_path: Path) -> None:
    env = _env(XDG_DATA_HOME=str(tmp_path / "data"), HOME=str(tmp_path))
    with served(["--workers", "2"], env) as base:
        statuses = _hammer(base)
        assert set(statuses) == {200}
        ready = httpx.get(f"{base}/readyz").json()
        assert ready["ready"] and ready["matrix_version"]
    assert (tmp_path / "data" / "accelenv" / "accelenv.sqlite3").exists()


def test_postgres_needs_upgrade_then_serves_with_workers(postgres_database: str) -> None:
    env = _env(ACCELENV_DATABASE_URL=postgres_database)
    refused = run_accelenv(env, "serve", "--port", str(free_port()))
    assert refused.returncode == 9
    assert "accelenv db upgrade" in refused.stderr and "Traceback" not in refused.stderr

    upgraded = run_accelenv(env, "db", "upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    with served(["--workers", "2"], env) as base:
        assert set(_hammer(base)) == {200}
        body = httpx.get(f"{base}/v1/resolve", params={"torch": "2.3", "python": "3.13"})
        assert 400 <= body.status_code < 500 and body.json()["code"]
        assert httpx.get(f"{base}/v1/nothing").json()["code"] == "not-found"
        # Past what the HTTP parser takes: still a 4xx from the server, never a 500 or a dropped worker.
        assert 400 <= raw_status(base, "/v1/resolve?torch=" + "9" * 100_000) < 500
        assert httpx.get(f"{base}/healthz").status_code == 200
