"""The GitHub Action (action.yml, its scripts in action/) and docs/ci.md's workflow.

The Action's steps run as a runner runs them (tests/ci/action_runner.py) on a clean machine image: the
Action's checkout copied to a fresh folder, nothing of accelenv on PATH, a fresh virtual environment for the
Action made from a bare interpreter, the job's Python a fresh virtual environment of Python 3.8 / 3.12
(pyenv's), a live service on loopback. The tested interpreter must end with torch and no accelenv package.
Nothing leaves loopback: pip reads only the local package indexes pip is configured with, and the cell's
torch comes from a local wheel folder (its index options are ignored with PIP_NO_INDEX, as on an offline
runner). action.yml and the workflow are checked by the tools made for them: check-jsonschema's bundled
GitHub schemas and actionlint.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.ci.action_runner import checkout_copy, local_index_env, run_action, stand_in_torch
from tests.conftest import REPO_ROOT
from tests.evidence.live_server import LiveServer, live_server
from tests.probes.conftest import old_python

BIN = Path(sys.executable).parent
PY = f"{sys.version_info[0]}.{sys.version_info[1]}"
SHA = re.compile(r"^[^@\s]+@[0-9a-f]{40}$")


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(BIN)) or shutil.which(name)
    if not path:
        pytest.skip(f"{name} is not installed (pip install -e '.[test]' installs it from the package index)")
    return path


def workflow_text() -> str:
    text = (REPO_ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.DOTALL)
    workflows = [b for b in blocks if b.startswith("name:") and "jobs:" in b]
    assert len(workflows) == 1, "docs/ci.md shows one complete workflow"
    return workflows[0]


def _action() -> dict[str, Any]:
    return yaml.safe_load((REPO_ROOT / "action.yml").read_text(encoding="utf-8"))


# ------------------------------------------------------------------------------ the files themselves


def test_action_yml_passes_the_github_actions_schema() -> None:
    done = subprocess.run([_tool("check-jsonschema"), "--builtin-schema", "vendor.github-actions",
                           str(REPO_ROOT / "action.yml")], capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_inputs_and_outputs_are_kebab_case_and_documented() -> None:
    action = _action()
    for kind in ("inputs", "outputs"):
        for name, spec in action[kind].items():
            assert re.fullmatch(r"[a-z]+(-[a-z]+)*", name), f"{kind} {name} is not kebab-case"
            assert len(spec.get("description", "")) > 20, f"{kind} {name} is not documented"
            assert f"`{name}`" in (REPO_ROOT / "docs" / "ci.md").read_text(encoding="utf-8"), \
                f"docs/ci.md does not list the {kind[:-1]} `{name}`"


def test_every_action_used_is_pinned_to_a_commit() -> None:
    uses = [s["uses"] for s in _action()["runs"]["steps"] if "uses" in s]
    uses += re.findall(r"uses:\s*(\S+)", workflow_text())
    assert uses
    for ref in uses:
        if ref.startswith("./") or ref.startswith("accelenv/accelenv@"):
            continue  # this Action itself (docs/ci.md says to pin it to a release's commit)
        assert SHA.match(ref), f"{ref} is not pinned to a commit SHA"


def test_the_action_never_installs_accelenv_by_name_nor_evaluates_server_text() -> None:
    scripts = {p.name: p.read_text(encoding="utf-8") for p in (REPO_ROOT / "action").glob("*.sh")}
    assert set(scripts) == {"install.sh", "run.sh"}
    install = scripts["install.sh"]
    assert re.search(r'pip install [^\n]*"\$source_dir"', install) and "GITHUB_ACTION_PATH" in install
    for name, text in scripts.items():
        code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        assert "eval" not in code.split() and "curl" not in code, name
        assert "pip install accelenv" not in code and "ACCELENV_SPEC" not in code, name


def test_the_documented_workflow_passes_its_schema_and_actionlint(tmp_path: Path) -> None:
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    # the published reference, and the same workflow using this checkout's action.yml (actionlint then checks
    # every `with:` against the action's declared inputs)
    (workflows / "torch-matrix.yml").write_text(workflow_text(), encoding="utf-8")
    local = re.sub(r"accelenv/accelenv@\S+", "./", workflow_text())
    (workflows / "local.yml").write_text(local, encoding="utf-8")
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
    (workflows / "local.yml").write_text(local.replace("command: check", "comand: check"), encoding="utf-8")
    bad = subprocess.run([_tool("actionlint"), "-no-color", str(workflows / "local.yml")], cwd=tmp_path,
                         capture_output=True, text=True, check=False, timeout=120)
    assert bad.returncode != 0 and "comand" in bad.stdout


def test_the_documented_workflow_keeps_the_cells_torch_and_follows_releases() -> None:
    text = workflow_text()
    assert "matrix refresh --check" in text and "schedule:" in text
    install = text.index("pip install")
    assert "--constraint" in text[install:install + 400] or "--no-deps" in text[install:install + 400]
    # verification after the project's install, then the tests
    assert text.index("pip install -e .") < text.index("command: check") < text.index("python -m pytest")


# ------------------------------------------------------------------------------ a clean machine


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    url = f"sqlite:///{tmp_path_factory.mktemp('action') / 'svc.sqlite3'}"
    with live_server(url, workers=1, load_matrix=True) as live:
        yield live


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A runner image: the Action's checkout, a PATH with nothing of accelenv, a temp folder, pip limited to
    the local package indexes."""
    index = local_index_env()
    if index is None:
        pytest.skip("pip has no local (file://) package index configured: the Action's install would need the "
                    "network, which the tests never use")
    root = tmp_path_factory.mktemp("runner")
    checkout = checkout_copy(REPO_ROOT, root / "action-checkout")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ACCELENV_", "GITHUB_", "VIRTUAL_ENV", "PYTHON", "PIP_"))}
    env |= {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", str(root)), **index}
    for key in ("PIP_FIND_LINKS", "PIP_CERT", "PIP_DEFAULT_TIMEOUT"):
        if key in os.environ:
            env[key] = os.environ[key]
    assert shutil.which("accelenv", path=env["PATH"]) is None, "accelenv must not be on the runner's PATH"
    tool_python = getattr(sys, "_base_executable", sys.executable)
    temp = root / "runner-temp"
    _offline_dependencies(tool_python, temp / "accelenv-tool")
    return {"checkout": checkout, "env": env, "temp": temp, "root": root, "tool_python": tool_python}


def _offline_dependencies(tool_python: str, venv: Path) -> None:
    """The package index's part for the Action's own dependencies. The local indexes here lack some of them
    (a fresh install would download them, which a test never does), so the Action's environment, created
    where install.sh creates it, sees this test environment's installed distributions through a ``.pth``
    line: pip then finds every dependency satisfied and builds and installs accelenv itself from the
    Action's checkout, as on a runner. (A ``.pth`` path line adds the folder, not its own ``.pth`` files:
    the editable accelenv of this venv does not come along; `test_..._clean_runner` checks where the
    Action's accelenv was imported from.)"""
    import sysconfig

    subprocess.run([tool_python, "-m", "venv", str(venv)], check=True, timeout=300)
    site = subprocess.run([str(venv / "bin" / "python"), "-c",
                           "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "zz-test-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n", encoding="utf-8")


def _run(machine: dict[str, Any], inputs: dict[str, str], work: Path,
         step_env: dict[str, dict[str, str]] | None = None) -> Any:
    return run_action(machine["checkout"], inputs, tool_python=machine["tool_python"], env=machine["env"],
                      temp=machine["temp"], workdir=work, step_env=step_env)


def _job_python(version: str, where: Path) -> Path:
    """A fresh virtual environment of Python ``version`` (setup-python's stand-in), or skip."""
    base = old_python(version)
    if base is None:
        pytest.skip(f"no Python {version} on this machine")
    subprocess.run([base, "-m", "venv", str(where)], check=True, timeout=300)
    return where / "bin" / "python"


def _distributions(python: Path) -> set[str]:
    code = ("import importlib.metadata as m, json; "
            "print(json.dumps(sorted({d.metadata['Name'].lower() for d in m.distributions()})))")
    return set(json.loads(subprocess.run([str(python), "-I", "-c", code], capture_output=True, text=True,
                                         check=True).stdout))


@pytest.mark.slow
@pytest.mark.timeout(1500)
@pytest.mark.parametrize("python", ["3.8", "3.12"])
def test_the_action_runs_a_cell_on_a_clean_runner(server: LiveServer, machine: dict[str, Any], python: str,
                                                  tmp_path: Path) -> None:
    """Install (the Action from its checkout into its own venv), matrix, then check one cell of Python 3.8 /
    3.12: its install steps, verify-env, the probe and the report; the tested interpreter gets torch (the
    cell's, from a local wheel folder) and nothing of accelenv."""
    torch_minor = {"3.8": "2.4", "3.12": "2.13"}[python]
    matrix = _run(machine, {"command": "matrix", "server": server.base_url, "torch": torch_minor,
                            "family": "cpu", "python": python, "with": "none"}, tmp_path)
    assert matrix.returncode == 0, matrix.stdout + matrix.stderr
    assert matrix.steps == ["tool-python", "install", "run"]
    tool = machine["temp"] / "accelenv-tool" / "bin"
    where = subprocess.run([str(tool / "python"), "-c", "import cli, compat_service; print(cli.__file__)"],
                           capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert where.startswith(str(tool.parent)), f"the Action's accelenv is not its own install: {where}"
    include = json.loads(matrix.outputs["matrix"])["include"]
    (cell,) = include
    assert (cell["python"], cell["build"], matrix.outputs["total"]) == (python, "cpu", "1")
    assert cell["install_argv"][0][:3] == ["pip", "install", f"torch=={cell['torch']}"]

    job_python = _job_python(python, tmp_path / "job-venv")
    wheels = tmp_path / "wheels"
    stand_in_torch(wheels, f"{cell['torch']}+cpu")
    offline = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)}  # the job's pip: the local wheel folder only
    check = _run(machine, {"command": "check", "server": server.base_url, "token": server.token,
                           "cell": json.dumps(cell), "python-exe": str(job_python), "checks": "detect",
                           "device": "cpu"}, tmp_path, step_env={"run": offline})
    out = check.stdout + check.stderr
    assert "verify-env: ok, the environment is the cell's" in out, out
    # the stand-in torch has no tensors: the probe ran in the job's Python and reported what it found there,
    # which is the step's exit code (1); the report was stored all the same
    assert check.returncode == 1, out
    report_path = Path(check.outputs["report-path"])
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["environment"]["python_version"].startswith(python + ".")
    assert check.outputs["report-id"] == report["report_id"] and check.outputs["submitted"] == "true"
    stored = json.loads((report_path.parent / "submitted.json").read_text(encoding="utf-8"))
    assert stored["report_id"] == report["report_id"] and check.outputs["evidence-status"]
    key = {k: v for k, v in stored["cell"].items() if v is not None}
    names = {"torch_version": "torch", "torch_build": "build", "runtime_version": "runtime",
             "driver_version": "driver"}
    evidence = httpx.get(f"{server.base_url}/v1/evidence", params={names.get(k, k): v for k, v in key.items()},
                         timeout=30).json()
    assert evidence["reports"] >= 1 and evidence["status"] == check.outputs["evidence-status"]
    installed = _distributions(job_python)
    assert "torch" in installed and not {d for d in installed if "accelenv" in d}, installed


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_the_action_checks_a_real_torch_cell_and_a_refused_report_is_a_warning(
    server: LiveServer, machine: dict[str, Any], tmp_path: Path
) -> None:
    """This venv's real torch, its Python's cell (install: false): verify, detect + smoke pass, the report is
    stored; with a refused token the step still passes, warning with the saved report's path, unless
    fail-on-submit."""
    import torch

    version = torch.__version__.split("+")[0]
    matrix = _run(machine, {"command": "matrix", "server": server.base_url, "torch": version, "family": "cpu",
                            "python": PY, "with": "none"}, tmp_path)
    assert matrix.returncode == 0, matrix.stderr
    (cell,) = json.loads(matrix.outputs["matrix"])["include"]
    inputs = {"command": "check", "server": server.base_url, "cell": json.dumps(cell), "install": "false",
              "python-exe": sys.executable, "device": "cpu"}
    good = _run(machine, {**inputs, "token": server.token}, tmp_path / "good")
    assert good.returncode == 0, good.stdout + good.stderr
    assert good.outputs["submitted"] == "true" and good.outputs["evidence-status"]
    refused = _run(machine, {**inputs, "token": "not-a-token"}, tmp_path / "refused")
    assert refused.returncode == 0, refused.stdout + refused.stderr
    assert "::warning title=accelenv report not sent::" in refused.stdout
    saved = refused.outputs["report-path"]
    assert Path(saved).is_file() and f"accelenv report submit --server {server.base_url} {saved}" in refused.stdout
    assert refused.outputs["submitted"] == "false"
    strict = _run(machine, {**inputs, "token": "not-a-token", "fail-on-submit": "true"}, tmp_path / "strict")
    assert strict.returncode != 0 and "refused" in (strict.stdout + strict.stderr)


# ------------------------------------------------------------------------------ a hostile service


class _Hostile(BaseHTTPRequestHandler):
    cells: list[dict[str, Any]] = []

    def do_GET(self) -> None:
        body = json.dumps({"include": self.cells, "excluded": [], "unknown": [], "total": len(self.cells),
                           "limits": {"shards_needed": 1}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture()
def hostile(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    marker = tmp_path / "PWNED"
    cell = {"name": "hostile", "torch": "2.4.1", "build": "cpu", "python": "3.8", "pins": {"torch": "2.4.1"},
            "install": f"pip install torch; touch {marker}\n"}
    _Hostile.cells = [
        {**cell, "install_argv": [["pip", "install", f"torch==2.4.1; touch {marker}"]]},
        {**cell, "install_argv": [["sh", "-c", f"touch {marker}"]]},
        {**cell, "install_argv": f"pip install torch && touch {marker}"},
        # passes the plan's check (a URL, a requirement) but holds shell syntax: run without a shell, it is
        # only a string pip is given
        {**cell, "install_argv": [["pip", "install", "torch==2.4.1", "--index-url",
                                   f"http://127.0.0.1:9/$(touch%20{marker})`touch%20{marker}`"]]},
    ]
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", marker
    finally:
        httpd.shutdown()


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_a_hostile_install_text_runs_nothing(hostile: tuple[str, Path], machine: dict[str, Any],
                                             tmp_path: Path) -> None:
    url, marker = hostile
    matrix = _run(machine, {"command": "matrix", "server": url}, tmp_path)
    assert matrix.returncode == 0, matrix.stderr
    cells = json.loads(matrix.outputs["matrix"])["include"]
    assert len(cells) == 4
    for index, cell in enumerate(cells):
        done = _run(machine, {"command": "check", "server": url, "cell": json.dumps(cell),
                              "python-exe": sys.executable}, tmp_path / f"cell{index}",
                    step_env={"run": {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(tmp_path / "no-wheels")}})
        out = done.stdout + done.stderr
        assert done.returncode != 0, out
        if index < 3:
            assert "install-plan-refused" in out or "is not" in out, out
        assert not marker.exists(), f"cell {index} ran a command: {out}"
