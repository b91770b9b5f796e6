"""`accelenv verify-env`: does this job's environment hold what its CI cell says? Exit 0 when it does, 1
naming each difference (the CPU wheel that slipped in, the torch a later install replaced, another Python or
runtime), 2 for a malformed expectation.

The facts come from ``probes/host/installed.py`` run in the job's interpreter (``--python-exe``, default
this one: accelenv installed beside the job's torch); the comparison is
``compat_service.domain.ci.verify``. The expectation is ``--expect NAME==VERSION`` (repeatable; a local tag
on torch names the build: ``torch==2.3.1+cu121``) and ``--python``, or ``--cell`` with a cell of
``GET /v1/ci-matrix`` (a JSON object, or a file holding one) — each cell's ``check`` field is this command.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import typer

from cli.terminal_text import say


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the root app."""
    app.command("verify-env", help="Check that this environment holds what a CI cell says (exit 1 naming each "
                "difference).")(verify_env_command)


def verify_env_command(
    expect: list[str] = typer.Option([], "--expect", help="NAME==VERSION, repeatable; torch==2.3.1+cu121 names "
                                     "the build too"),
    python: str | None = typer.Option(None, "--python", help="the Python the cell is for: 3.11, 3.13t"),
    cell: str | None = typer.Option(None, "--cell", help="a cell of GET /v1/ci-matrix: JSON, or a file"),
    python_exe: Path | None = typer.Option(None, "--python-exe", help="the job's interpreter (default: this one)"),
    as_json: bool = typer.Option(False, "--json", help="print JSON: ok, expected, found, differences"),
) -> None:
    from cli.error_render import guarded

    with guarded(as_json=as_json):
        from compat_service.domain.ci.verify import compare, expectations

        expected = expectations(list(expect), python=python, cell=_cell(cell) if cell else None)
        if not expected.packages and expected.python is None:
            from compat_service.domain.errors import InvalidRequestError

            raise InvalidRequestError("nothing to verify", hint="give --expect NAME==VERSION, --python or --cell")
        facts = gather(python_exe or Path(sys.executable), sorted(expected.packages))
        differences = compare(expected, facts)
    if as_json:
        typer.echo(json.dumps({
            "ok": not differences,
            "expected": {"packages": expected.packages, "build": expected.build, "python": expected.python},
            "found": facts,
            "differences": [d.to_json() for d in differences],
        }, indent=2))
    else:
        _say_differences(facts, differences)
    raise typer.Exit(1 if differences else 0)


def _say_differences(facts: dict[str, Any], differences: list[Any]) -> None:
    """The environment in one line, each difference, and the verdict."""
    torch = facts.get("torch") or {}
    say(f"environment: Python {facts.get('python')}, torch {torch.get('version', 'not installed')}", sys.stdout)
    for d in differences:
        say(f"  ✗ {d.message}", sys.stdout)
    typer.echo("verify-env: ok, the environment is the cell's" if not differences
               else f"verify-env: {len(differences)} difference(s) from the cell")


def _cell(text: str) -> Any:
    from compat_service.domain.resolver.request import invalid_request

    path = Path(text)
    raw = path.read_text(encoding="utf-8") if not text.lstrip().startswith("{") and path.is_file() else text
    try:
        return json.loads(raw)
    except ValueError:
        raise invalid_request("--cell is neither JSON nor a file holding JSON",
                              "pass a cell of GET /v1/ci-matrix, e.g. --cell '${{ toJSON(matrix) }}'",
                              "--cell", text[:60]) from None


def gather(python_exe: Path, names: list[str]) -> dict[str, Any]:
    """probes/host/installed.py's facts from ``python_exe`` (isolated mode: the job's own site-packages)."""
    import probes.host.installed as script
    from compat_service.domain.errors import InvalidRequestError

    try:
        done = subprocess.run([str(python_exe), "-I", script.__file__, *names], capture_output=True, text=True,
                              timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InvalidRequestError(f"could not run {python_exe}: {exc}",
                                  hint="give --python-exe the job's Python interpreter") from None
    if done.returncode != 0:
        raise InvalidRequestError(f"{python_exe} could not report its packages: {done.stderr.strip()[-300:]}",
                                  hint="give --python-exe a Python 3.8+ interpreter")
    return json.loads(done.stdout)
