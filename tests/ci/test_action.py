"""The GitHub Action (action.yml, its scripts in action/) and docs/ci.md's workflow.

The scripts run against a live service on loopback, as a pipeline runs them: matrix -> install plan ->
verify-env (passing on this venv's real torch, failing on a mismatched cell) -> probe (detect + smoke on CPU)
-> report stored and visible in GET /v1/evidence. action.yml and the workflow are checked by the tools made
for them: check-jsonschema's bundled GitHub schemas and actionlint.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO_ROOT
from tests.evidence.live_server import LiveServer, live_server

BIN = Path(sys.executable).parent
PY = f"{sys.version_info[0]}.{sys.version_info[1]}"


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(BIN)) or shutil.which(name)
    assert path, f"{name} is not installed (pip install -e '.[test]')"
    return path


def workflow_text() -> str:
    text = (REPO_ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.DOTALL)
    workflows = [b for b in blocks if b.startswith("name:") and "jobs:" in b]
    assert len(workflows) == 1, "docs/ci.md shows one complete workflow"
    return workflows[0]


def test_action_yml_passes_the_github_actions_schema() -> None:
    done = subprocess.run([_tool("check-jsonschema"), "--builtin-schema", "vendor.github-actions",
                           str(REPO_ROOT / "action.yml")], capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_documented_workflow_passes_its_schema_and_actionlint(tmp_path: Path) -> None:
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    # the published reference, and the same workflow using this checkout's action.yml (actionlint then checks
    # every `with:` against the action's declared inputs)
    (workflows / "torch-matrix.yml").write_text(workflow_text(), encoding="utf-8")
    (workflows / "local.yml").write_text(workflow_text().replace("accelenv/accelenv@v1", "./"), encoding="utf-8")
    shutil.copy(REPO_ROOT / "action.yml", tmp_path / "action.yml")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)  # actionlint reads local actions in a repo
    schema = subprocess.run([_tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
                             *map(str, sorted(workflows.iterdir()))],
                            capture_output=True, text=True, check=False, timeout=120)
    assert schema.returncode == 0, schema.stdout + schema.stderr
    lint = subprocess.run([_tool("actionlint"), "-no-color", *map(str, sorted(workflows.iterdir()))],
                          cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    # actionlint does catch a wrong input of the local action
    (workflows / "local.yml").write_text(
        workflow_text().replace("accelenv/accelenv@v1", "./").replace("command: check", "comand: check"),
        encoding="utf-8",
    )
    bad = subprocess.run([_tool("actionlint"), "-no-color", str(workflows / "local.yml")], cwd=tmp_path,
                         capture_output=True, text=True, check=False, timeout=120)
    assert bad.returncode != 0 and "comand" in bad.stdout


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    url = f"sqlite:///{tmp_path_factory.mktemp('action') / 'svc.sqlite3'}"
    with live_server(url, workers=1, load_matrix=True) as live:
        yield live


def _env(server: LiveServer, tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELENV_", "GITHUB_"))}
    env |= {"PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", "ACCELENV_SERVER": server.base_url,
            "GITHUB_OUTPUT": str(tmp / "github_output"), "PYTHONPATH": str(REPO_ROOT)}
    return env | extra


def _outputs(tmp: Path) -> dict[str, str]:
    path = tmp / "github_output"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return dict(line.split("=", 1) for line in lines)


def _run(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(REPO_ROOT / "action" / script)], env=env, capture_output=True, text=True,
                          check=False, timeout=600, cwd=Path(env["GITHUB_OUTPUT"]).parent)


def test_the_scripts_run_a_cell_end_to_end(server: LiveServer, tmp_path: Path) -> None:
    torch_minor = ".".join(__import__("torch").__version__.split(".")[:2])
    env = _env(server, tmp_path, ACCELENV_TORCH=torch_minor, ACCELENV_FAMILY="cpu", ACCELENV_PYTHON=PY,
               ACCELENV_WITH="none")
    matrix = _run("matrix.sh", env)
    assert matrix.returncode == 0, matrix.stderr
    include = json.loads(_outputs(tmp_path)["matrix"])["include"]
    assert json.loads(matrix.stdout.strip().splitlines()[-1]) == {"include": include}
    (cell,) = [c for c in include if c["os"] == "linux" and c["arch"] == "x86_64"]
    assert (cell["build"], cell["python"], cell["pins"]) == ("cpu", PY, {"torch": cell["torch"]})

    work = tmp_path / "check"
    check_env = _env(server, tmp_path, ACCELENV_CELL=json.dumps(cell), ACCELENV_TOKEN=server.token,
                     ACCELENV_INSTALL="false", ACCELENV_PYTHON_EXE=sys.executable, ACCELENV_DEVICE="cpu",
                     ACCELENV_WORKDIR=str(work))
    check = _run("check.sh", check_env)
    assert check.returncode == 0, check.stdout + check.stderr
    plan = (work / "install.txt").read_text()
    assert f"pip install torch=={cell['torch']}" in plan  # the install plan over REST (format=pip)
    assert "ok, the environment is the cell's" in check.stdout
    report = json.loads((work / "report.json").read_text())
    assert {c["group"] for c in report["checks"]} >= {"detect", "smoke"}
    outputs = _outputs(tmp_path)
    stored = json.loads((work / "submitted.json").read_text())
    assert outputs["report-id"] == stored["report_id"]
    key = stored["cell"]
    params = {"torch": key["torch_version"], "python": key["python"], "os": key["os"], "arch": key["arch"],
              "backend": key["backend"], "build": key["torch_build"]}
    params |= {n: key[k] for n, k in (("runtime", "runtime_version"), ("driver", "driver_version"),
                                       ("device_arch", "device_arch")) if key[k] is not None}
    evidence = httpx.get(server.base_url + "/v1/evidence", params=params, timeout=10).json()
    assert evidence["reports"] >= 1 and evidence["status"] == outputs["evidence-status"]


def test_check_fails_naming_the_difference_and_sends_nothing(server: LiveServer, tmp_path: Path) -> None:
    torch_version = __import__("torch").__version__.split("+")[0]
    # a CUDA cell of this very torch and Python: the venv holds its CPU build instead
    cells = httpx.get(server.base_url + "/v1/ci-matrix", timeout=30, params={
        "torch": torch_version, "family": "cuda", "python": PY, "with": "none"}).json()["include"]
    cell = cells[0]
    work = tmp_path / "check"
    env = _env(server, tmp_path, ACCELENV_CELL=json.dumps(cell), ACCELENV_TOKEN=server.token,
               ACCELENV_INSTALL="false", ACCELENV_PYTHON_EXE=sys.executable, ACCELENV_WORKDIR=str(work))
    check = _run("check.sh", env)
    assert check.returncode != 0
    assert f"is a CPU build; the cell expects {cell['build']}" in check.stdout
    assert not (work / "report.json").exists() and "report-id" not in _outputs(tmp_path)


def test_an_unknown_matrix_parameter_fails_the_step(server: LiveServer, tmp_path: Path) -> None:
    env = _env(server, tmp_path, ACCELENV_FAMILY="cuda-ish")
    done = _run("matrix.sh", env)
    assert done.returncode != 0 and "family" in done.stderr and "HTTP 422" in done.stderr
