"""`accelenv resolve --with ... --server URL` against a live `accelenv serve` on loopback: the same stack as
the offline answer, and the same error code and exit code for a conflict."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.served import serve_port_zero, started_url

ACCELENV = Path(sys.executable).parent / "accelenv"
ARGS = ["--backend", "cuda", "--python", "3.12", "--os", "linux", "--arch", "x86_64", "--format", "json"]


def _resolve(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "ACCELENV_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    return subprocess.run([str(ACCELENV), "resolve", *args], capture_output=True, text=True, env=env, timeout=120,
                          check=False)


def test_a_stack_through_the_service_is_the_offline_stack(tmp_path: Path) -> None:
    with serve_port_zero(tmp_path) as served:
        url = started_url(served)
        for stack in (["--with", "vllm==0.15.1"], ["--with", "vllm", "--with", "flash-attn"]):
            local = _resolve([*stack, *ARGS], tmp_path)
            remote = _resolve([*stack, *ARGS, "--server", url], tmp_path)
            assert local.returncode == remote.returncode == 0, remote.stderr
            assert json.loads(remote.stdout)["stack"] == json.loads(local.stdout)["stack"]
            assert json.loads(remote.stdout)["pins"] == json.loads(local.stdout)["pins"]
        refused = _resolve(["--with", "vllm", "--torch", "2.15", *ARGS, "--server", url], tmp_path)
        assert refused.returncode == 5
        assert json.loads(refused.stdout or refused.stderr)["code"] == "stack-conflict"
