"""`accelenv resolve` end to end: the installed console script in a subprocess, a loopback server for --server."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from compat_service.domain.matrix.interface import InMemoryMatrix
from compat_service.domain.matrix.loading.loader import load_matrix_rows
from compat_service.domain.resolver.request import ResolveRequest
from compat_service.domain.resolver.resolution import resolution_to_json
from compat_service.domain.resolver.stages import resolve

ACCELENV = Path(sys.executable).parent / "accelenv"
TARGET = ["--os", "linux", "--arch", "x86_64"]


def _run(args: list[str], tmp_path: Path, *prefix: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "ACCELENV_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    cmd = [*prefix, "resolve", *args] if prefix else [str(ACCELENV), "resolve", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, check=False)


def test_json_output_has_the_pins(tmp_path: Path) -> None:
    done = _run(
        ["--torch", "2.3", "--backend", "cu121", "--python", "3.10", *TARGET, "--format", "json"], tmp_path
    )
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["pins"] == {"torch": "2.3.1", "torchvision": "0.18.1", "torchaudio": "2.3.1"}
    assert body["index_url"] is None and body["backend"] == "cu121"


@pytest.mark.parametrize(
    ("args", "code", "exit_code"),
    [
        (["--torch", "2.3", "--backend", "cuda", "--python", "3.13"], "python-unsupported", 5),
        (
            ["--torch", "2.3", "--backend", "cuda", "--python", "3.10", "--driver", "440.33"],
            "driver-too-old",
            5,
        ),
        (["--torch", "two", "--backend", "cpu"], "invalid-request", 2),
        (["--torch", "2.3", "--backend", "cpu", "--format", "xml"], "invalid-request", 2),
    ],
    ids=["python-unsupported", "driver-too-old", "bad-torch", "bad-format"],
)
def test_errors_exit_with_their_code_and_no_traceback(
    tmp_path: Path, args: list[str], code: str, exit_code: int
) -> None:
    done = _run([*args, *TARGET], tmp_path)
    assert done.returncode == exit_code
    assert f"error: {code}" in done.stderr and "Traceback" not in done.stderr
    as_json = _run([*args, *TARGET, "--format", "json"], tmp_path)
    if "--format" not in args:
        assert json.loads(as_json.stdout)["code"] == code


def test_typer_app_and_console_script_print_the_same(tmp_path: Path) -> None:
    args = ["--torch", "2.3", "--backend", "cu118", "--python", "3.10", *TARGET, "--format", "uv"]
    via_app = _run(args, tmp_path, sys.executable, "-m", "cli.main")
    via_script = _run(args, tmp_path)
    assert via_app.returncode == via_script.returncode == 0, via_app.stderr
    assert via_app.stdout == via_script.stdout
    failing = ["--torch", "2.3", "--backend", "cuda", "--python", "3.13", *TARGET]
    assert _run(failing, tmp_path, sys.executable, "-m", "cli.main").returncode == 5


def test_resolve_imports_no_web_or_database_stack(tmp_path: Path) -> None:
    done = _run(
        ["--torch", "2.3", "--backend", "cu121", "--python", "3.10", *TARGET, "--format", "json"],
        tmp_path,
        sys.executable,
        "-X",
        "importtime",
        "-m",
        "cli.main",
    )
    assert done.returncode == 0, done.stderr
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines() if "|" in line}
    assert "compat_service" in imported
    assert not imported & {"fastapi", "sqlmodel", "sqlalchemy", "starlette", "uvicorn", "alembic"}


def test_console_script_resolve_path_skips_typer_and_pydantic(tmp_path: Path) -> None:
    """The start-up budget: `accelenv resolve` (cli/entry.py) never imports Typer or pydantic when it succeeds."""
    code = "import sys; from cli.entry import main; sys.argv = ['accelenv', *sys.argv[1:]]; main()"
    args = ["--torch", "2.3", "--backend", "cu121", "--python", "3.10", *TARGET, "--format", "json"]
    assert _run(args, tmp_path).returncode == 0  # the first run validates the YAML and writes the snapshot
    done = _run(args, tmp_path, sys.executable, "-X", "importtime", "-c", code)
    assert done.returncode == 0, done.stderr
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines() if "|" in line}
    assert "compat_service" in imported and not imported & {"typer", "pydantic", "yaml", "rich", "httpx"}


class _Server(HTTPServer):
    answer: tuple[int, dict[str, object]] | None = None
    seen: list[dict[str, list[str]]]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        self.server.seen.append(parse_qs(urlparse(self.path).query))
        if self.server.answer is not None:
            status, body = self.server.answer
        else:
            query: dict[str, Any] = {k: v[0] for k, v in parse_qs(urlparse(self.path).query).items()}
            query["with_"] = query.pop("with", None)
            request = ResolveRequest.from_strings(**query)
            status, body = 200, resolution_to_json(resolve(request, InMemoryMatrix(load_matrix_rows())))
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server(("127.0.0.1", 0), _Handler)
    srv.seen = []
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def test_server_answer_prints_the_same_output(tmp_path: Path, server: _Server) -> None:
    args = ["--torch", "2.3", "--backend", "cu118", "--python", "3.10", *TARGET, "--format", "requirements"]
    remote = _run([*args, "--server", f"http://127.0.0.1:{server.server_port}"], tmp_path)
    local = _run(args, tmp_path)
    assert remote.returncode == 0, remote.stderr
    assert remote.stdout == local.stdout
    assert server.seen[0]["backend"] == ["cu118"] and server.seen[0]["with"] == ["torchvision,torchaudio"]


def test_server_error_body_renders_like_a_local_error(tmp_path: Path, server: _Server) -> None:
    server.answer = (
        409,
        {
            "code": "driver-too-old",
            "message": "driver 470.82 runs CUDA <= 11.4",
            "hint": "install a newer driver",
            "causes": [{"constraint": "driver 470.82", "origin": "request: --driver", "detail": None}],
            "alternatives": [],
        },
    )
    done = _run(
        [
            "--torch",
            "2.3",
            "--backend",
            "cuda",
            "--driver",
            "470.82",
            *TARGET,
            "--server",
            f"http://127.0.0.1:{server.server_port}",
        ],
        tmp_path,
    )
    assert done.returncode == 5
    assert "error: driver-too-old" in done.stderr and "install a newer driver" in done.stderr


def test_invalid_matrix_directory_exits_4(tmp_path: Path) -> None:
    broken = tmp_path / "matrix"
    broken.mkdir()
    (broken / "cuda.yaml").write_text("schema: cuda/v9\n")
    done = _run(["--torch", "2.3", "--backend", "cpu", *TARGET, "--matrix", str(broken)], tmp_path)
    assert done.returncode == 4
    assert "error: matrix-invalid" in done.stderr and "Traceback" not in done.stderr


def test_unreachable_server_exits_6(tmp_path: Path) -> None:
    done = _run(["--torch", "2.3", "--backend", "cpu", *TARGET, "--server", "http://127.0.0.1:9"], tmp_path)
    assert done.returncode == 6
    assert "error: server-unreachable" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("where", ["missing.db", "no/such/dir/missing.db"], ids=["missing-file", "missing-folder"])
def test_a_missing_evidence_database_is_named_and_not_created(tmp_path: Path, where: str) -> None:
    done = subprocess.run(
        [str(ACCELENV), "resolve", "--database", f"sqlite:///{where}", "--backend", "cpu", *TARGET],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "ACCELENV_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path)},
    )
    assert done.returncode == 9, done.stderr
    assert f"the database file {tmp_path / where} does not exist" in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) in ([], ["cache"])


# ---- issue 12: answers a user can act on, through the real command


def test_answer_resting_on_unknown_says_so_and_strict_fails(tmp_path: Path) -> None:
    args = ["--torch", "2.11.0", "--backend", "cu129", "--gpu-arch", "sm_120", "--python", "3.12", *TARGET]
    done = _run([*args, "--format", "json"], tmp_path)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["status"] == "rests-on-unknown" and any("sm_120" in u for u in body["unknowns"])
    pip = _run([*args, "--format", "pip"], tmp_path)
    assert "# status: rests-on-unknown" in pip.stdout
    strict = _run([*args, "--strict", "--format", "json"], tmp_path)
    assert strict.returncode == 5, strict.stdout + strict.stderr
    assert json.loads(strict.stderr or strict.stdout)["code"] == "rests-on-unknown"


def test_sm_120_on_2_5_is_refused_not_stepped_back(tmp_path: Path) -> None:
    done = _run(["--torch", "2.5", "--backend", "cuda", "--gpu-arch", "sm_120", "--python", "3.12", *TARGET], tmp_path)
    assert done.returncode == 5 and "gpu-arch-unsupported" in done.stderr


def test_gpu_flags_without_backend_pick_the_cuda_family(tmp_path: Path) -> None:
    done = _run(
        ["--gpu-arch", "sm_86", "--driver", "535.104.05", "--torch", "2.3", "--python", "3.11", *TARGET,
         "--format", "json"],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["family"] == "cuda"


@pytest.mark.parametrize(
    "args",
    [["--torch", ""], ["--python", ""], ["--backend", ""], ["--backend", "cpu", "--gpu-arch", "sm_86"],
     ["--backend", "cuda", "--gpu-arch", "sm_999"]],
    ids=["empty-torch", "empty-python", "empty-backend", "cpu-with-gpu-arch", "unknown-arch"],
)
def test_invalid_requests_exit_2(args: list[str], tmp_path: Path) -> None:
    done = _run([*args, *TARGET], tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "invalid-request" in done.stderr and "Traceback" not in done.stderr


def test_bogus_backend_variable_is_named(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "ACCELENV_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path),
           "ACCELENV_BACKEND": "bogus"}
    done = subprocess.run([str(ACCELENV), "resolve"], capture_output=True, text=True, env=env, timeout=60,
                          check=False)
    assert done.returncode == 2 and "ACCELENV_BACKEND='bogus'" in done.stderr


@pytest.mark.parametrize(
    ("target", "family"),
    [(["--os", "windows", "--arch", "x86_64"], "cpu"), (["--os", "macos", "--arch", "arm64"], "mps")],
    ids=["windows", "macos-arm64"],
)
def test_foreign_target_without_backend_gets_its_default_build(
    target: list[str], family: str, tmp_path: Path
) -> None:
    done = _run([*target, "--python", "3.12", "--format", "json"], tmp_path)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["family"] == family and body["default_index_has_variant"]
    assert any("default-index build" in w for w in body["warnings"])


def test_pip_output_keeps_the_warnings_and_mlu_no_deps(tmp_path: Path) -> None:
    done = _run(["--torch", "2.4", "--backend", "mlu", "--python", "3.10", *TARGET, "--format", "pip"], tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(ln.startswith("# warning: ") for ln in lines)
    assert any(ln.startswith("pip install --no-deps torchvision==0.19.0 torchaudio==2.4.0") for ln in lines)


def test_help_is_rich_like_the_other_commands(tmp_path: Path) -> None:
    done = _run(["--help"], tmp_path)
    assert done.returncode == 0
    # rich-argparse's layout: usage, description, an Options group; the defaults said as the Typer ones say them
    assert "Usage: accelenv resolve" in done.stdout and "Options:" in done.stdout and "--strict" in done.stdout
    assert "[default: text]" in done.stdout


# ---- issue 20: the host rules through the real command


def test_a100_on_driver_535_gets_a_cu12x_build_and_the_text_names_the_rule(tmp_path: Path) -> None:
    done = _run(["--torch", "2.8", "--backend", "cu126", "--gpu-arch", "sm_80", "--driver", "535.104.05",
                 "--python", "3.12", *TARGET], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "torch 2.8.0 · cu126" in done.stdout
    assert "status: known" in done.stdout
    assert "rule minor-version-compat: sm_80 has SASS in cu126" in done.stdout
    assert "TRITON_PTXAS_PATH" in done.stdout  # what minor-version compatibility does not cover


def test_gpu_name_and_runtime_flags(tmp_path: Path) -> None:
    gpu = _run(["--gpu", "NVIDIA GeForce RTX 5090", "--torch", "2.7", "--driver", "570.86.15", "--python", "3.12",
                *TARGET, "--format", "json"], tmp_path)
    assert gpu.returncode == 0, gpu.stderr
    assert (json.loads(gpu.stdout)["torch"], json.loads(gpu.stdout)["backend"]) == ("2.7.1", "cu128")
    npu = _run(["--torch", "2.4", "--backend", "npu", "--runtime", "8.0.0", "--python", "3.10", *TARGET,
                "--format", "json"], tmp_path)
    assert npu.returncode == 0, npu.stderr
    assert {p["name"]: p["version"] for p in json.loads(npu.stdout)["packages"]}["torch-npu"] == "2.4.0.post2"
    refused = _run(["--torch", "2.4", "--backend", "npu", "--driver", "8.0", "--python", "3.10", *TARGET], tmp_path)
    assert refused.returncode == 2 and "--runtime" in refused.stdout + refused.stderr
