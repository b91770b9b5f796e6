"""`accelenv serve --port 0` in a subprocess, its output read line by line (the start-up line names its URL)."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.server_process import stop

START = re.compile(
    r"accelenv worker (?P<pid>\d+) listening on (?P<url>http://\S+) database=(?P<db>\S+) "
    r"matrix=(?P<version>[0-9a-f]{16}) cells=(?P<cells>\d+)"
)


@dataclass
class Served:
    proc: subprocess.Popen[str]
    lines: queue.Queue[str]
    seen: list[str] = field(default_factory=list)

    def wait_for(self, pattern: str, timeout_s: float = 60) -> str:
        regex = re.compile(pattern)
        for line in self.seen:
            if regex.search(line):
                return line
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                if self.proc.poll() is not None and self.lines.empty():
                    break
                continue
            self.seen.append(line)
            if regex.search(line):
                return line
        pytest.fail(f"no line matching {pattern!r}; the server wrote:\n" + "\n".join(self.seen[-30:]))

    def drain(self, settle_s: float = 0.5) -> list[str]:
        time.sleep(settle_s)
        while True:
            try:
                self.seen.append(self.lines.get_nowait())
            except queue.Empty:
                return self.seen


@contextmanager
def serve_port_zero(
    tmp_path: Path, extra_env: dict[str, str] | None = None, workers: int = 1, database_url: str | None = None
) -> Iterator[Served]:
    env = os.environ | {
        "ACCELENV_DATABASE_URL": database_url or f"sqlite:///{tmp_path / 'svc.sqlite3'}",
        "ACCELENV_SERVER": "",
        "PYTHONPATH": str(REPO_ROOT),
        **(extra_env or {}),
    }
    if "ACCELENV_LOG_FORMAT" not in (extra_env or {}):
        env.pop("ACCELENV_LOG_FORMAT", None)
    cmd = [sys.executable, "-m", "cli.main", "serve", "--host", "127.0.0.1", "--port", "0", "--workers", str(workers)]
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))

    threading.Thread(target=pump, daemon=True).start()
    served = Served(proc, lines)
    try:
        yield served
    finally:
        stop(proc, timeout_s=30)
        if proc.stdout is not None:
            proc.stdout.close()


def started_url(served: Served) -> str:
    match = START.search(served.wait_for(START.pattern))
    assert match is not None
    return match["url"]
