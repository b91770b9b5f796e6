"""A loopback port to start a server on, and the one way tests stop the server processes they start."""

from __future__ import annotations

import socket
import subprocess
from typing import Any


def free_port() -> int:
    """A loopback port nothing listens on now (the OS picks it; free until someone binds it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop(proc: subprocess.Popen[Any], timeout_s: float = 20) -> None:
    """SIGTERM (the server's graceful shutdown), then SIGKILL when it has not exited within ``timeout_s``."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
