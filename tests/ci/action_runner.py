"""Run a composite action's steps (action.yml) the way a GitHub runner does, on this machine, for the tests.

`run_action(action_dir, inputs, ...)` reads ``action.yml`` and, step by step:

- a ``uses: actions/setup-python@...`` step is the one step not run: it must ask for
  ``update-environment: false`` (the job's PATH stays as it was) and its ``python-path`` output is the
  interpreter the test names (this machine's stand-in for the Python setup-python downloads);
- a ``run:`` step is written to a file and run as the runner runs ``shell: bash``
  (``bash --noprofile --norc -eo pipefail FILE``), with its ``env:`` evaluated: ``${{ inputs.X }}`` (the
  action's defaults filled in), ``${{ steps.ID.outputs.Y }}`` (from each step's ``$GITHUB_OUTPUT`` file) and
  ``${{ runner.temp }}``; ``GITHUB_ACTION_PATH`` is the action's folder;
- the action's ``outputs:`` are evaluated at the end.

Anything else in an expression is an error here (so the action cannot use what this runner would get wrong).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_EXPR = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")


@dataclass
class ActionRun:
    returncode: int
    stdout: str
    stderr: str
    outputs: dict[str, str] = field(default_factory=dict)
    #: the step ids that ran, in order
    steps: list[str] = field(default_factory=list)


def _read_outputs(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key] = value
    return out


def run_action(action_dir: Path, inputs: dict[str, str], *, tool_python: str, env: dict[str, str], temp: Path,
               workdir: Path, step_env: dict[str, dict[str, str]] | None = None, timeout: float = 900) -> ActionRun:
    """Run the action in ``action_dir`` with ``inputs``; ``env`` is the job's environment (PATH included),
    ``step_env`` extra variables for one step id (what a runner's job-level configuration would give it)."""
    action = yaml.safe_load((action_dir / "action.yml").read_text(encoding="utf-8"))
    declared = action["inputs"]
    unknown = set(inputs) - set(declared)
    assert not unknown, f"not inputs of the action: {unknown}"
    values = {name: str(spec.get("default", "")) for name, spec in declared.items()} | inputs
    missing = [n for n, spec in declared.items() if spec.get("required") and not values.get(n)]
    assert not missing, f"required inputs missing: {missing}"
    step_outputs: dict[str, dict[str, str]] = {}
    temp.mkdir(parents=True, exist_ok=True)
    workdir.mkdir(parents=True, exist_ok=True)

    def evaluate(text: str) -> str:
        def one(match: re.Match[str]) -> str:
            expr = match.group(1)
            parts = expr.split(".")
            if parts[0] == "inputs" and len(parts) == 2:
                return values[parts[1]]
            if parts[0] == "steps" and len(parts) == 4 and parts[2] == "outputs":
                return step_outputs.get(parts[1], {}).get(parts[3], "")
            if expr == "runner.temp":
                return str(temp)
            raise AssertionError(f"this runner does not evaluate ${{{{ {expr} }}}}")

        return _EXPR.sub(one, text)

    run = ActionRun(0, "", "")
    for index, step in enumerate(action["runs"]["steps"]):
        step_id = step.get("id", f"step{index}")
        assert "if" not in step, "steps run unconditionally (the scripts branch on the command)"
        if "uses" in step:
            assert step["uses"].startswith("actions/setup-python@"), step["uses"]
            assert str(step["with"]["update-environment"]).lower() == "false"
            step_outputs[step_id] = {"python-path": tool_python,
                                     "python-version": evaluate(str(step["with"]["python-version"]))}
            run.steps.append(step_id)
            continue
        assert step.get("shell") == "bash", "every run step says shell: bash"
        output_file = temp / f"github_output_{step_id}_{index}"
        output_file.write_text("", encoding="utf-8")
        script = temp / f"step_{step_id}.sh"
        script.write_text(evaluate(step["run"]), encoding="utf-8")
        step_vars = {k: evaluate(str(v)) for k, v in (step.get("env") or {}).items()}
        full_env = {**env, **(step_env or {}).get(step_id, {}), **step_vars,
                    "GITHUB_ACTION_PATH": str(action_dir), "GITHUB_OUTPUT": str(output_file),
                    "RUNNER_TEMP": str(temp)}
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], env=full_env,
                              cwd=workdir, capture_output=True, text=True, timeout=timeout, check=False)
        run.stdout += done.stdout
        run.stderr += done.stderr
        run.steps.append(step_id)
        step_outputs[step_id] = _read_outputs(output_file)
        if done.returncode != 0:
            run.returncode = done.returncode
            break
    for name, spec in (action.get("outputs") or {}).items():
        run.outputs[name] = _EXPR.sub(
            lambda m: step_outputs.get(m.group(1).split(".")[1], {}).get(m.group(1).split(".")[3], ""),
            str(spec["value"]),
        )
    return run


def checkout_copy(repo: Path, dest: Path) -> Path:
    """The action's checkout as a runner has it: the repository's tracked files (and the untracked ones not
    ignored), nothing built, no virtual environment."""
    listed = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        source = repo / rel
        if not source.is_file():
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read_bytes())
        target.chmod(source.stat().st_mode & 0o777)
    return dest


def stand_in_torch(folder: Path, version: str) -> Path:
    """A wheel named torch ``version`` (a local tag such as ``+cpu`` kept) holding only ``__version__`` and the
    build constants: what a package index serves for a Python that no real torch wheel on this machine fits
    (the package index is the test's boundary; the probe then reports what it finds in it)."""
    import base64
    import hashlib
    import zipfile

    files = {
        "torch/__init__.py": f'"""A stand-in torch (tests/ci/action_runner.py): no tensors."""\n'
                             f'__version__ = "{version}"\nfrom . import version\n',
        "torch/version.py": f'__version__ = "{version}"\ncuda = None\nhip = None\nxpu = None\n',
    }
    dist = f"torch-{version}.dist-info"
    files[f"{dist}/METADATA"] = f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n"
    files[f"{dist}/WHEEL"] = "Wheel-Version: 1.0\nGenerator: accelenv-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = []
    for name, text in files.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    files[f"{dist}/RECORD"] = "\n".join([*record, f"{dist}/RECORD,,"]) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"torch-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def local_index_env() -> dict[str, Any] | None:
    """pip's configured package indexes that are local folders (file:// URLs), as PIP_INDEX_URL /
    PIP_EXTRA_INDEX_URL, so an install in a test never reaches the network; None when pip has none."""
    import sys

    done = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                          check=False)
    urls: list[str] = []
    for line in done.stdout.splitlines():
        key, _, value = line.partition("=")
        if key.endswith(("index-url", "extra-index-url")):
            urls += [u for u in value.strip("'\"").split() if u.startswith("file://")]
    if not urls:
        return None
    return {"PIP_INDEX_URL": urls[0], "PIP_EXTRA_INDEX_URL": " ".join(urls[1:])}
