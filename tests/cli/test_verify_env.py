"""`accelenv verify-env` on the test venv (real torch 2.13.0+cpu): passing for the cell it holds, failing and
naming each difference for a mismatched one; the comparison's rules on facts of other builds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from compat_service.domain.ci.verify import compare, expectations, installed_build

ACCELENV = Path(sys.executable).parent / "accelenv"
TORCH = torch.__version__.split("+")[0]
PY = f"{sys.version_info[0]}.{sys.version_info[1]}"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ACCELENV), "verify-env", *args], capture_output=True, text=True, check=False, timeout=300
    )


def test_passes_for_what_the_venv_holds() -> None:
    done = run("--expect", f"torch=={TORCH}+cpu", "--python", PY)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok" in done.stdout


def test_fails_naming_each_difference() -> None:
    done = run("--expect", f"torch=={TORCH}+cu128", "--expect", "torchvision==0.0.1", "--python", "3.9", "--json")
    assert done.returncode == 1
    body = json.loads(done.stdout)
    assert body["ok"] is False
    found = {d["what"]: d for d in body["differences"]}
    assert found["torch build"]["found"] == "cpu" and found["torch build"]["expected"] == "cu128"
    assert "CPU build" in found["torch build"]["message"]
    assert found["torchvision"]["found"] == "not installed"
    assert found["python"]["found"] == PY
    assert body["found"]["torch"]["version"] == torch.__version__


def test_a_replaced_torch_is_named() -> None:
    done = run("--expect", "torch==2.3.1+cpu")
    assert done.returncode == 1
    assert f"torch {torch.__version__} is installed, the cell expects 2.3.1" in done.stdout


def test_a_ci_matrix_cell_is_an_expectation(tmp_path: Path) -> None:
    cell = {"torch": TORCH, "build": "cpu", "python": PY, "runtime": None, "pins": {"torch": TORCH}}
    path = tmp_path / "cell.json"
    path.write_text(json.dumps(cell))
    assert run("--cell", str(path)).returncode == 0
    other = dict(cell, build="rocm6.4", runtime="6.4")
    assert run("--cell", json.dumps(other)).returncode == 1


@pytest.mark.parametrize("args", [["--expect", "torch>=2"], ["--expect", "torch==2.3.1+cu12x"], []],
                         ids=["not-pinned", "bad-label", "nothing"])
def test_malformed_expectations_exit_2(args: list[str]) -> None:
    done = run(*args)
    assert done.returncode == 2 and "invalid-request" in done.stderr


def _facts(version: str, cuda: str | None = None, hip: str | None = None, loaded: list[str] | None = None) -> dict:
    return {"python": "3.11", "packages": {"torch": version.split("+")[0]},
            "torch": {"version": version, "cuda": cuda, "hip": hip, "xpu": None}, "loaded": loaded or []}


def test_build_from_constants_when_the_wheel_has_no_local_tag() -> None:
    assert installed_build({"version": "2.3.1", "cuda": "12.1"}) == "cu121"
    assert installed_build({"version": "2.3.1", "hip": "6.0.32830-d62f6a171"}) == "rocm6.0"
    assert installed_build({"version": "2.3.1"}) == "cpu"


def test_runtime_and_loaded_library_mismatches() -> None:
    want = expectations(["torch==2.3.1+cu121"])
    assert compare(want, _facts("2.3.1+cu121", cuda="12.1", loaded=["libcudart.so.12"])) == []
    wrong_runtime = compare(expectations([], cell={"torch": "2.3.1", "build": "cu121", "runtime": "12.4",
                                                   "python": "3.11", "pins": {"torch": "2.3.1"}}),
                            _facts("2.3.1+cu121", cuda="12.1"))
    assert [d.what for d in wrong_runtime] == ["cuda runtime"]
    cpu_with_cuda = compare(expectations(["torch==2.3.1+cpu"]), _facts("2.3.1+cpu", loaded=["libcudart.so.12"]))
    assert [d.what for d in cpu_with_cuda] == ["loaded runtime"]
