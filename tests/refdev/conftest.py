"""Run refdev code in fresh interpreters: installing refdev is irreversible and changes torch.accelerator.

``refdev_python(code, ...)`` runs a snippet with the repository on ``sys.path`` and returns the finished
process; a snippet reports results by printing one JSON object as its last stdout line (``result()``).
Tests that need a working refdev skip with ``probes.refdev.availability()``'s reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
# A venv without numpy makes `import torch` warn; the snippets' stderr is theirs, not pytest's.
_BASE_ENV = {"PYTHONWARNINGS": "ignore::UserWarning", "OMP_NUM_THREADS": "1"}


def snippet_env(env: dict[str, str] | None = None, extra_path: list[Path] | None = None) -> dict[str, str]:
    """This environment without refdev settings, the repository on sys.path, plus ``env``."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELENV_REFDEV_")}
    full_env.update(_BASE_ENV)
    full_env["PYTHONPATH"] = os.pathsep.join(str(p) for p in [*(extra_path or []), REPO_ROOT])
    full_env.update(env or {})
    return full_env


def run_python(
    code: str,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    extra_path: list[Path] | None = None,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO_ROOT,
        env=snippet_env(env, extra_path),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_probe(
    args: list[str], output: Path, faults: str | None = None, timeout: float = 300
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run the real probe suite (`python -m probes`) on refdev; returns (process, report)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ACCELENV_") or k == "ACCELENV_PROBE_OPINFO_OPS"}  # the bounded OpInfo list stays
    env.update(_BASE_ENV)
    env["PYTHONPATH"] = str(REPO_ROOT)
    if faults is not None:
        env["ACCELENV_REFDEV_FAULTS"] = faults  # what `accelenv probe --inject` sets for the worker
    proc = subprocess.run(
        [sys.executable, "-m", "probes", "--device", "refdev", "--quiet", "--output", str(output), *args],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout,
    )
    assert output.exists(), f"no report (rc={proc.returncode}):\n{proc.stderr[-3000:]}"
    return proc, json.loads(output.read_text())


def result(proc: subprocess.CompletedProcess[str]) -> Any:
    """The JSON object the snippet printed last; fails the test with the snippet's stderr otherwise."""
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and lines, f"snippet failed (rc={proc.returncode}):\n{proc.stderr[-3000:]}"
    return json.loads(lines[-1])


@pytest.fixture(scope="session")
def refdev_available() -> None:
    """Skip (with the backend's own reason) where this torch cannot host refdev."""
    proc = run_python(
        "import json, probes.refdev as r; ok, why = r.availability(); print(json.dumps([ok, why]))"
    )
    ok, why = result(proc)
    if not ok:
        pytest.skip(f"refdev unavailable: {why}")


@pytest.fixture
def refdev_python(refdev_available: None) -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_python
