"""`accelenv resolve` for a Jetson (issue 29): NVIDIA's JetPack wheel by URL, never PyTorch's SBSA aarch64 wheels;
the installed console script in a subprocess, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ACCELENV = Path(sys.executable).parent / "accelenv"
JETSON = ["--os", "linux", "--arch", "aarch64"]
NVIDIA_JP61 = "https://developer.download.nvidia.com/compute/redist/jp/v61/pytorch/"


def _run(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "ACCELENV_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    return subprocess.run(
        [str(ACCELENV), "resolve", *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def test_orin_on_jetpack_6_driver_gets_nvidias_wheel_by_url(tmp_path: Path) -> None:
    done = _run(
        ["--gpu-arch", "sm_87", "--driver", "540.4.0", "--python", "3.10", *JETSON, "--format", "pip"], tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    command = done.stdout.strip().splitlines()[-1]
    assert command.startswith(f'pip install "torch @ {NVIDIA_JP61}torch-2.5.0a0'), command
    assert "download.pytorch.org" not in done.stdout  # not the SBSA cu12x wheels


def test_jetson_by_name_json_names_the_url_and_the_jetpack(tmp_path: Path) -> None:
    done = _run(["--gpu", "Jetson AGX Orin", "--python", "3.10", *JETSON, "--format", "json"], tmp_path)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert (body["backend"], body["family"], body["torch"]) == ("jetpack", "cuda", "2.5.0")
    assert body["packages"][0]["url"].startswith(NVIDIA_JP61)
    assert body["requirements"][0]["name"].startswith("JetPack")


def test_jetpack_runtime_picks_the_jetpack_5_wheel(tmp_path: Path) -> None:
    done = _run(
        ["--gpu", "Jetson AGX Orin", "--runtime", "5.1.2", "--python", "3.8", *JETSON, "--format", "json"], tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["pins"] == {"torch": "2.1.0a0+41361538.nv23.06"}


def test_torch_without_a_jetpack_wheel_exits_5_and_its_alternative_exits_0(tmp_path: Path) -> None:
    args = ["--gpu-arch", "sm_87", "--driver", "540.4.0", "--python", "3.10", *JETSON]
    refused = _run([*args, "--torch", "2.13", "--format", "json"], tmp_path)
    assert refused.returncode == 5
    body = json.loads(refused.stdout)
    assert body["code"] == "torch-not-found"
    alternative = body["alternatives"][0]["request"]
    argv = [*args]
    for name, value in alternative.items():
        argv += [f"--{name.replace('_', '-')}", str(value)]
    assert _run([*argv, "--format", "json"], tmp_path).returncode == 0


def test_jetson_gpu_on_x86_64_and_jetpack_on_a_server_gpu_exit_2(tmp_path: Path) -> None:
    x86 = _run(["--gpu", "Jetson AGX Orin", "--os", "linux", "--arch", "x86_64", "--python", "3.10"], tmp_path)
    assert x86.returncode == 2 and "--arch aarch64" in x86.stdout + x86.stderr
    server = _run(["--gpu", "GH200", "--runtime", "6.2", "--python", "3.12", *JETSON], tmp_path)
    assert server.returncode == 2 and "JetPack" in server.stdout + server.stderr
