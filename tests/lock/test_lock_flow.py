"""`accelenv lock --for` on a loopback index of small real wheels: one valid, hashed pylock.toml per distinct
answer (checked with packaging.pylock), each installed with uv into a fresh venv by `accelenv install --locks`
(which picks the lock per described host) and checked with `accelenv verify-env`."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from packaging.pylock import Pylock, is_valid_pylock_path
from typer.testing import CliRunner

from cli.main import app
from compat_service.domain.lock.pylock import pep751_part
from tests.lock.lock_index import LockIndex

pytestmark = pytest.mark.slow
tomllib: Any = pytest.importorskip("tomllib")  # Python 3.11+; the project supports 3.10
runner = CliRunner()
BASE = {"torch": "2.13.0", "python": "3.11", "os": "linux", "arch": "x86_64", "with": "none"}
HOSTS: dict[str, dict[str, Any]] = {
    "cpu runner": {"backend": "cpu"},
    "A100, R560 driver": {"backend": "cuda", "driver": "560.35.05", "gpu_arch": "sm_80"},
    "RTX 3090, R560 driver": {"backend": "cuda", "driver": "560.35.05", "gpu_arch": "sm_86"},
    "MI300X, ROCm 7.2.1": {"backend": "rocm", "gpu_arch": "gfx942", "runtime": "7.2.1"},
}
#: the install flags that describe each host (what detection would find)
DESCRIBED = {name: [f"--{k.replace('_', '-')}={v}" for k, v in host.items()] for name, host in HOSTS.items()}


@pytest.fixture(scope="module")
def locked(index: LockIndex, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("locks")
    hosts = work / "hosts.json"
    hosts.write_text(json.dumps([{"name": name, **BASE, **host} for name, host in HOSTS.items()]))
    result = runner.invoke(app, ["lock", "--for", str(hosts), "--out", str(work / "locks"), "--index-url",
                                 index.simple, "--torch-index", index.torch_template, "--json"])
    assert result.exit_code == 0, result.output
    return {"dir": work / "locks", "out": json.loads(result.output)}


def _pylock(path: Path) -> dict[str, Any]:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def test_one_lock_per_distinct_answer_and_an_index_of_host_classes(locked: dict[str, Any]) -> None:
    index = json.loads((locked["dir"] / "locks.json").read_text())
    builds = {entry["answer"]["build"]: [h["name"] for h in entry["host_classes"]] for entry in index["locks"]}
    assert builds == {"cpu": ["cpu runner"], "cu126": ["A100, R560 driver", "RTX 3090, R560 driver"],
                      "rocm7.2": ["MI300X, ROCm 7.2.1"]}
    for entry in index["locks"]:
        assert is_valid_pylock_path(locked["dir"] / entry["lock"])


def test_each_lock_is_a_valid_pylock_that_packaging_round_trips(locked: dict[str, Any]) -> None:
    for path in sorted(locked["dir"].glob("pylock.*.toml")):
        document = _pylock(path)
        part = pep751_part(document)
        assert Pylock.from_dict(part).to_dict() == part, path.name
        names = {p["name"] for p in document["packages"]}
        assert {"torch", "filelock", "typing-extensions"} <= names
        assert ("nvidia-cuda-runtime-cu12" in names) == ("cu126" in path.name)


def test_every_hash_is_the_index_stated_one_or_recorded_as_downloaded(locked: dict[str, Any]) -> None:
    for path in sorted(locked["dir"].glob("pylock.*.toml")):
        document = _pylock(path)
        sources = {}
        for package in document["packages"]:
            for wheel in package["wheels"]:
                with urllib.request.urlopen(wheel["url"]) as response:
                    assert wheel["hashes"]["sha256"] == hashlib.sha256(response.read()).hexdigest()
                sources[package["name"]] = package["tool"]["accelenv"]["hash-source"][wheel["name"]]
        assert sources["typing-extensions"] == "downloaded"  # the index lists it without a sha256
        assert sources["torch"] == sources["filelock"] == "index"
        tool = document["tool"]["accelenv"]
        assert tool["files"] == tool["files-with-index-hash"] + tool["files-hashed-from-download"]
        assert tool["files-hashed-from-download"] == 1


def test_the_torch_package_carries_its_pep_825_variants_json(locked: dict[str, Any]) -> None:
    for path in sorted(locked["dir"].glob("pylock.*.toml")):
        torch = next(p for p in _pylock(path)["packages"] if p["name"] == "torch")
        url = torch["variants-json"]["url"]
        assert url.endswith("/torch-2.13.0-variants.json")
        with urllib.request.urlopen(url) as response:
            body = response.read()
        assert torch["variants-json"]["hashes"]["sha256"] == hashlib.sha256(body).hexdigest()
        assert "cu126" in json.loads(body)["variants"]


@pytest.mark.parametrize("host", list(HOSTS))
def test_install_picks_the_hosts_lock_installs_it_with_uv_and_verify_env_agrees(
    host: str, locked: dict[str, Any], tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    result = runner.invoke(app, ["install", "--locks", str(locked["dir"]), "--python-exe", str(python),
                                 "--os", "linux", "--arch", "x86_64", *DESCRIBED[host], "--json"])
    assert result.exit_code == 0, result.output
    chosen = json.loads(result.output)
    index = json.loads((locked["dir"] / "locks.json").read_text())
    entry = next(e for e in index["locks"] if host in [h["name"] for h in e["host_classes"]])
    assert Path(chosen["lock"]).name == entry["lock"]
    assert f"torch 2.13.0 ({entry['answer']['build']})" in chosen["why"]
    assert chosen["command"][1:3] == ["pip", "install"] and chosen["installed"]
    torch = next(p for p in _pylock(Path(chosen["lock"]))["packages"] if p["name"] == "torch")
    verify = runner.invoke(app, ["verify-env", "--python-exe", str(python), "--expect",
                                 f"torch=={torch['version']}", "--expect", "filelock==3.16.1", "--python", "3.11",
                                 "--json"])
    assert verify.exit_code == 0, verify.output
    assert json.loads(verify.output)["ok"] is True


def test_a_host_no_lock_is_for_is_refused_naming_the_locks(locked: dict[str, Any], tmp_path: Path) -> None:
    result = runner.invoke(app, ["install", "--locks", str(locked["dir"]), "--os", "linux", "--arch", "x86_64",
                                 "--backend", "cuda", "--driver", "580.65.06", "--gpu-arch", "sm_120", "--dry-run"])
    assert result.exit_code == 3
    assert "no-lock-for-host" in result.output and "(cu13" in result.output and "locks.json" in result.output
