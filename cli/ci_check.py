"""`accelenv ci check`'s steps for one CI cell: install -> verify-env -> probe -> report (see cli/ci_cmd.py).

Every step that touches the job's interpreter is a subprocess of it with an argument list: the install steps
(`compat_service.domain.ci.install_plan` checks them first), ``probes/host/installed.py`` (verify-env's
facts) and the probe bundle. Nothing goes through a shell and nothing of accelenv is installed there.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import typer


def _say(line: str) -> None:
    typer.echo(line)


def _group(title: str) -> None:
    _say(f"::group::accelenv: {title}")


def _end_group() -> None:
    _say("::endgroup::")


def _cell_and_python(cell_text: str, python_exe: Path, workdir: Path) -> dict[str, Any]:
    from cli.verify_env_cmd import _cell
    from compat_service.domain.errors import InvalidRequestError

    cell = _cell(cell_text)
    if not isinstance(cell, dict):
        raise InvalidRequestError("--cell is not a JSON object", hint="pass one cell: toJSON(matrix)")
    if not (python_exe.is_file() and os.access(python_exe, os.X_OK)):
        raise InvalidRequestError(f"--python-exe {python_exe} is not an executable file",
                                  hint="pass the job's interpreter, e.g. --python-exe \"$(command -v python)\"")
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "cell.json").write_text(json.dumps(cell, indent=2), encoding="utf-8")
    return cell


def run_install(*, cell_text: str, python_exe: Path, workdir: Path, run: bool = True) -> dict[str, str]:
    """The cell's install steps in the job's Python (checked first, no shell), then ``constraints.txt``: the
    cell's pins, for the project's own install (``pip install -e . --constraint ...``) to keep them."""
    from compat_service.domain.ci.install_plan import checked_install_argv

    cell = _cell_and_python(cell_text, python_exe, workdir)
    steps = checked_install_argv(cell)  # refused before anything runs
    _group(f"install ({cell.get('name', 'the cell')})")
    for step in steps:
        argv = [str(python_exe), "-m", *step]
        _say("+ " + " ".join(argv))
        if run:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, check=False)
            if done.returncode != 0:
                _end_group()
                raise _failed(f"the install step `{' '.join(step)}` ended with exit code {done.returncode}",
                              "its output above says why; the cell's index and versions are in cell.json")
    _end_group()
    constraints = workdir / "constraints.txt"
    pins = dict(cell.get("pins") or {})
    constraints.write_text(
        "# the cell's pins (accelenv ci install): pip install ... --constraint this file keeps them\n"
        + "".join(f"{name}=={str(version).split('+', 1)[0]}\n" for name, version in pins.items()),
        encoding="utf-8",
    )
    return {"constraints": str(constraints.resolve())}


def run_check(*, cell_text: str, python_exe: Path, install: bool, checks: str, device: str, server: str | None,
              token: str | None, fail_on_submit: bool, workdir: Path, github_output: Path | None) -> int:
    """The whole check; returns the exit code (0, or the probe's 1/3), raises an AccelenvError for a refused
    plan, a failed install or verification (exit 1 via its class), or, with ``fail_on_submit``, a report the
    service did not take."""
    cell = _cell_and_python(cell_text, python_exe, workdir)
    outputs: dict[str, str] = {}
    if install:
        outputs |= run_install(cell_text=cell_text, python_exe=python_exe, workdir=workdir)

    _group("verify-env")
    _verify(cell, python_exe)
    _end_group()

    _group(f"probe ({checks})")
    from cli.probe_cmd import run_probe

    report_path = workdir / "report.json"
    code = run_probe(device=device, checks=checks, output=report_path, submit_url=None, token=None,
                     timeout=120.0, python=str(python_exe), inject=[], quiet=True)
    _end_group()
    report = json.loads(report_path.read_text(encoding="utf-8"))
    outputs |= {"report-id": str(report["report_id"]), "report-path": str(report_path.resolve()),
                "submitted": "false"}

    if server and token:
        outputs |= _submit(server, token, report_path, workdir, fail_on_submit)
    else:
        _say(f"accelenv: no server or token: the report stays in {report_path}")
    write_github_output(github_output, outputs)
    return code


def write_github_output(github_output: Path | None, outputs: dict[str, str]) -> None:
    if github_output is not None:
        with github_output.open("a", encoding="utf-8") as out:
            out.writelines(f"{k}={v}\n" for k, v in outputs.items())


def _failed(message: str, hint: str) -> Exception:
    from compat_service.domain.errors import AccelenvError

    return AccelenvError(message, hint=hint)


def _verify(cell: dict[str, Any], python_exe: Path) -> None:
    from cli.verify_env_cmd import gather
    from compat_service.domain.ci.verify import compare, expectations

    expected = expectations([], cell=cell)
    facts = gather(python_exe, sorted(expected.packages))
    torch = facts.get("torch") or {}
    _say(f"environment: Python {facts.get('python')}, torch {torch.get('version', 'not installed')}")
    differences = compare(expected, facts)
    for d in differences:
        _say(f"  ✗ {d.message}")
    if differences:
        _end_group()
        raise _failed(f"verify-env: {len(differences)} difference(s) from the cell; nothing was reported",
                      "install exactly the cell's plan (its index and pins), and nothing after it that "
                      "replaces torch")
    _say("verify-env: ok, the environment is the cell's")


def _submit(server: str, token: str, report_path: Path, workdir: Path, fail_on_submit: bool) -> dict[str, str]:
    """Send the report; the outputs it adds. A refusal or an outage is a warning naming the saved report
    (``accelenv report submit`` sends it later) unless ``fail_on_submit``."""
    from cli.service_client import ServiceClient
    from compat_service.domain.errors import AccelenvError

    service = ServiceClient(server, token=token)
    try:
        response = service.request(
            "POST", "/v1/reports", content=report_path.read_bytes(), headers={"Content-Type": "application/json"},
            timeout_s=60.0, unreachable_hint="the report is kept; `accelenv report submit` sends it later")
        if response.status_code not in (200, 201):
            raise service.report_refusal(response)
        stored = response.json()
        (workdir / "submitted.json").write_text(json.dumps(stored, indent=2), encoding="utf-8")
        status = _evidence_status(service, stored.get("cell") or {})
    except AccelenvError as err:
        if fail_on_submit:
            raise
        saved = report_path.resolve()
        _say(f"::warning title=accelenv report not sent::{err.message}. The report is saved at {saved}; "
             f"send it later with: accelenv report submit --server {server} {saved}")
        return {}
    _say(f"accelenv: report {stored.get('report_id')} stored; the cell's evidence: {status}")
    return {"submitted": "true", "evidence-status": status or ""}


def _evidence_status(service: Any, key: dict[str, Any]) -> str | None:
    """The cell's evidence status as the service now has it (GET /v1/evidence with the stored report's key)."""
    names = {"torch_version": "torch", "torch_build": "build", "runtime_version": "runtime",
             "driver_version": "driver", "device_arch": "device_arch"}
    params = {names.get(k, k): v for k, v in key.items() if v is not None}
    response = service.request("GET", "/v1/evidence", params=params, timeout_s=30.0,
                               unreachable_hint="the report was stored; only its evidence could not be read")
    if response.status_code != 200:
        return None
    status = response.json().get("status")
    return str(status) if status is not None else None
