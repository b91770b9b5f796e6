"""`accelenv resolve --with` (the console script in a subprocess), `matrix show --with`, and `matrix validate`
over ecosystem.yaml."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import typer
from typer.testing import CliRunner

from cli import matrix_cmd
from compat_service.domain.stacks.catalog import load_catalog
from tests.domain.test_matrix_validation import copy_matrix

ACCELENV = Path(sys.executable).parent / "accelenv"
TARGET = ["--os", "linux", "--arch", "x86_64"]
runner = CliRunner()
app = typer.Typer()
matrix_cmd.register(app)


def _resolve(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "ACCELENV_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    return subprocess.run([str(ACCELENV), "resolve", *args], capture_output=True, text=True, env=env, timeout=120,
                          check=False)


def test_with_a_pinned_vllm_prints_its_torch_pins_in_one_command(tmp_path: Path) -> None:
    # 0.10.2's wheels go with the default-index build of its torch pin (0.11.1-0.19.x take torch from /whl/cu129)
    done = _resolve(["--with", "vllm==0.10.2", "--backend", "cuda", "--python", "3.12", *TARGET, "--format", "json"],
                    tmp_path)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    release = load_catalog().get("vllm").release("0.10.2")  # type: ignore[union-attr]
    assert release is not None
    pins = release.pins("linux-x86_64", "3.12")
    assert body["pins"]["torch"] == pins["torch"] and body["pins"]["torchvision"] == pins["torchvision"]
    assert [(p["name"], p["version"], p["origin"]) for p in body["stack"]] == [("vllm", "0.10.2", "index")]
    pip = _resolve(["--with", "vllm==0.10.2", "--backend", "cuda", "--python", "3.12", *TARGET, "--format", "pip"],
                   tmp_path)
    commands = [line for line in pip.stdout.splitlines() if not line.startswith("#")]
    expected = (f"pip install torch=={pins['torch']} torchvision=={pins['torchvision']} "
                f"torchaudio=={pins['torchaudio']} vllm==0.10.2")
    assert commands == [expected]


def test_with_is_repeatable_and_a_conflict_exits_5_with_alternatives(tmp_path: Path) -> None:
    done = _resolve(["--with", "vllm", "--with", "flash-attn", "--backend", "cuda", "--python", "3.12", *TARGET,
                     "--format", "json"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert [p["name"] for p in json.loads(done.stdout)["stack"]] == ["vllm", "flash-attn"]
    refused = _resolve(["--with", "vllm", "--torch", "2.15", "--backend", "cuda", "--python", "3.12", *TARGET,
                        "--format", "json"], tmp_path)
    assert refused.returncode == 5, refused.stderr
    body = json.loads(refused.stdout or refused.stderr)
    assert body["code"] == "stack-conflict" and "pins torch==" in body["message"]
    assert any("without vllm" in a["description"] for a in body["alternatives"])
    unknown = _resolve(["--with", "no-such-package", *TARGET], tmp_path)
    assert unknown.returncode == 2 and "invalid-request" in unknown.stderr and "Traceback" not in unknown.stderr


def test_matrix_show_with_lists_releases_and_their_torch() -> None:
    result = runner.invoke(app, ["matrix", "show", "--with", "vllm", "--json"])
    assert result.exit_code == 0, result.output
    view = json.loads(result.stdout)
    vllm = load_catalog().get("vllm")
    assert vllm is not None
    assert [r["version"] for r in view["releases"]] == [r.version for r in vllm.releases if not r.prerelease]
    narrowed_out = runner.invoke(app, ["matrix", "show", "--with", "vllm", "--torch", "2.14.0", "--json"]).stdout
    narrowed = json.loads(narrowed_out)
    assert narrowed["releases"] and all(
        any(p["torch"] and "2.14" in p["torch"] or p["torch"] and p["torch"].startswith(">=") for p in r["platforms"])
        for r in narrowed["releases"]
    )
    table = runner.invoke(app, ["matrix", "show", "--with", "vllm"])
    assert table.exit_code == 0 and "vllm releases" in table.stdout


def test_matrix_show_with_a_wheel_page_package_lists_its_pages_and_narrows_by_torch() -> None:
    view = json.loads(runner.invoke(app, ["matrix", "show", "--with", "mmcv", "--json"]).stdout)
    assert view["torch_build"] == "wheel-pages"
    newest = view["releases"][0]
    assert newest["version"] == "2.2.0" and "2.4" in [m for p in newest["wheel_pages"] for m in p["torch"]]
    narrowed = json.loads(runner.invoke(app, ["matrix", "show", "--with", "mmcv", "--torch", "2.1", "--json"]).stdout)
    assert [r["version"] for r in narrowed["releases"]] == ["2.2.0", "2.1.0"]  # the torch 2.1 pages carry both
    table = runner.invoke(app, ["matrix", "show", "--with", "torch-scatter"])
    assert table.exit_code == 0 and "--find-links" in table.stdout


def test_validate_reports_an_ecosystem_row_citing_an_unknown_source(tmp_path: Path) -> None:
    matrix = copy_matrix(tmp_path)
    file = matrix / "ecosystem.yaml"
    file.write_text(file.read_text().replace("source: [vllm_install_binaries]", "source: [no_such_source]"))
    result = runner.invoke(app, ["matrix", "validate", str(matrix)])
    assert result.exit_code == 4
    assert "no_such_source" in result.stdout and "ecosystem.yaml" in result.stdout
