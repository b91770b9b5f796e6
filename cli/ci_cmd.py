"""`accelenv ci matrix` (the CI test matrix, the same JSON as ``GET /v1/ci-matrix``) and `accelenv ci check`
(one cell's job: install, verify, probe, report).

`ci matrix` is offline by default (the bundled matrix; `compat_service.domain.ci.job_matrix` builds it), or
`--server URL` / ACCELENV_SERVER asks a service, whose answer also carries the stored evidence.
``--include-only`` prints just ``{"include": [...]}`` compact, ready for ``strategy.matrix`` (``fromJSON``);
``--output FILE`` writes to a file; ``--github-output FILE`` appends ``matrix=``, ``total=``,
``shards-needed=`` and ``unknown=`` lines (the Action's outputs). ``--max-cells`` / ``--shard I/N`` keep the
answer within GitHub's limits (`compat_service.domain.ci.github_limits`).

`ci install` runs a cell's install steps and writes ``constraints.txt`` (its pins) for the project's own
install; `ci check` runs in the Action's own environment and touches the job's interpreter (``--python-exe``) only
through subprocesses: the cell's ``install_argv`` steps as ``python -m pip ...`` without a shell (checked by
`compat_service.domain.ci.install_plan` first), ``probes/host/installed.py`` for `verify-env`'s facts, and
the single-file probe bundle; nothing of accelenv is installed there. A report the service does not take is
a warning naming the saved file (``accelenv report submit`` sends it later) unless ``--fail-on-submit``; a
failed install or verification fails the command (exit 1) and sends nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer

ci_app = typer.Typer(help="What CI pipelines ask: a test matrix of the combinations that exist.",
                     no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the root app."""
    app.add_typer(ci_app, name="ci")


@ci_app.command("matrix", help="Every (torch, build, Python, OS/arch) that exists, as GitHub Actions' include JSON.")
def matrix_command(
    torch: str | None = typer.Option(None, "--torch", help="latest (default), 2.3, 2.3.1 or a range '>=2.3'"),
    python: str | None = typer.Option(None, "--python", help="supported (default) or a list: 3.10,3.12"),
    family: str | None = typer.Option(None, "--family", help="cpu,cuda,rocm,xpu (default: all)"),
    build: str | None = typer.Option(None, "--build", help="build labels instead of families: cu121,cu124"),
    os_name: str | None = typer.Option(None, "--os", help="linux (default), windows, macos; a list"),
    arch: str | None = typer.Option(None, "--arch", help="x86_64 (default), aarch64, arm64; a list"),
    with_: str | None = typer.Option(None, "--with", help="companions: torchvision,torchaudio (default) or none"),
    mode: str | None = typer.Option(None, "--mode", help="full (default) or pr: the extremes plus one per family"),
    fmt: str | None = typer.Option(
        None, "--format", help="install text: pip (default), requirements, uv, conda, docker"
    ),
    max_cells: int | None = typer.Option(None, "--max-cells", help="the most cells one matrix may hold, 1-256 "
                                         "(default 256, GitHub's jobs per matrix)"),
    shard: str | None = typer.Option(None, "--shard", help="I/N: the I-th of N balanced parts of the matrix"),
    include_only: bool = typer.Option(False, "--include-only", help="print only {\"include\": [...]}, compact"),
    require_cells: bool = typer.Option(False, "--require-cells", help="an empty matrix is an error naming why "
                                       "(what the Action's matrix step uses)"),
    output: Path | None = typer.Option(None, "--output", help="write the JSON here instead of stdout"),
    github_output: Path | None = typer.Option(None, "--github-output", help="append matrix=, total=, "
                                              "shards-needed= and unknown= lines to this file ($GITHUB_OUTPUT)"),
    server: str | None = typer.Option(None, "--server", envvar="ACCELENV_SERVER", help="ask this accelenv service"),
    matrix_path: Path | None = typer.Option(None, "--matrix", envvar="ACCELENV_MATRIX_PATH", help="a matrix_data dir"),
) -> None:
    from cli.error_render import guarded

    with guarded(as_json=True):
        query = {
            key: value
            for key, value in (
                ("torch", torch), ("python", python), ("family", family), ("build", build), ("os", os_name),
                ("arch", arch), ("with", with_), ("mode", mode), ("format", fmt),
                ("max_cells", None if max_cells is None else str(max_cells)), ("shard", shard),
            )
            if value is not None
        }
        body = build_matrix(query, server=server, matrix_path=matrix_path)
        if require_cells and not body["include"]:
            raise _empty(body)
        from compat_service.domain.ci.github_limits import include_json

        if github_output is not None:
            with github_output.open("a", encoding="utf-8") as out:
                out.write(f"matrix={include_json(body['include'])}\ntotal={len(body['include'])}\n"
                          f"shards-needed={(body.get('limits') or {}).get('shards_needed', 1)}\n"
                          f"unknown={len(body.get('unknown') or [])}\n")
        text = (include_json(body["include"]) if include_only else json.dumps(body, indent=2)) + "\n"
        if output is not None:
            output.write_text(text, encoding="utf-8")
        else:
            typer.echo(text, nl=False)


def _empty(body: dict) -> Exception:
    from compat_service.domain.errors import AccelenvError

    reasons = sorted({e["reason"] for e in [*body.get("unknown", []), *body.get("excluded", [])]})
    return AccelenvError(
        "the matrix is empty: " + ("; ".join(reasons[:5]) or "nothing selected"),
        hint="widen the request (a torch range, another family or Python); `unknown` combinations are ones the "
             "matrix cannot confirm yet (`accelenv matrix refresh` learns them)",
    )


def build_matrix(query: dict[str, str], *, server: str | None, matrix_path: Path | None) -> dict:
    """The matrix for ``query`` (API parameter names), from ``server`` or the bundled matrix."""
    if server:
        from cli.service_client import ServiceClient

        return ServiceClient(server, token=os.environ.get("ACCELENV_TOKEN") or None).ci_matrix(query)
    from compat_service.domain.ci.job_matrix import CiMatrixRequest, ci_matrix
    from compat_service.domain.matrix.loading.snapshot import load_matrix_cached

    request = CiMatrixRequest.from_strings(**{("with_" if k == "with" else k): v for k, v in query.items()})
    return ci_matrix(request, load_matrix_cached(matrix_path))


@ci_app.command("check", help="One cell's job: install its plan (no shell), verify the environment, probe it, "
                "report; the job's Python gets no accelenv package.")
def check_command(
    cell: str = typer.Option(..., "--cell", help="the job's cell: JSON (toJSON(matrix)) or a file holding it"),
    python_exe: Path = typer.Option(..., "--python-exe", help="the job's interpreter (the Python under test)"),
    install: bool = typer.Option(True, "--install/--no-install", help="run the cell's install_argv first"),
    checks: str = typer.Option("detect,smoke", "--checks", help="probe groups"),
    device: str = typer.Option("auto", "--device", help="the device the probe tests"),
    server: str | None = typer.Option(None, "--server", envvar="ACCELENV_SERVER", help="where the report goes"),
    token: str | None = typer.Option(None, "--token", envvar="ACCELENV_TOKEN", help="a report token"),
    fail_on_submit: bool = typer.Option(False, "--fail-on-submit", help="a report the service does not take "
                                        "fails the command (default: a warning naming the saved report)"),
    workdir: Path = typer.Option(Path("accelenv-check"), "--workdir", help="where the plan, report and "
                                 "evidence land"),
    github_output: Path | None = typer.Option(None, "--github-output", help="append report-id=, report-path=, "
                                              "submitted= and evidence-status= lines ($GITHUB_OUTPUT)"),
) -> None:
    from cli.error_render import guarded

    with guarded():
        from cli.ci_check import run_check

        code = run_check(cell_text=cell, python_exe=python_exe, install=install, checks=checks, device=device,
                         server=server or None, token=token or None, fail_on_submit=fail_on_submit,
                         workdir=workdir, github_output=github_output)
    raise typer.Exit(code)


@ci_app.command("install", help="Install a cell's plan in the job's Python (argument lists, no shell) and write "
                "constraints.txt with its pins, for the project's own install to keep them.")
def install_command(
    cell: str = typer.Option(..., "--cell", help="the job's cell: JSON (toJSON(matrix)) or a file holding it"),
    python_exe: Path = typer.Option(..., "--python-exe", help="the job's interpreter (the Python under test)"),
    workdir: Path = typer.Option(Path("accelenv-check"), "--workdir", help="where cell.json and constraints.txt "
                                 "land"),
    github_output: Path | None = typer.Option(None, "--github-output", help="append constraints= "
                                              "($GITHUB_OUTPUT)"),
) -> None:
    from cli.error_render import guarded

    with guarded():
        from cli.ci_check import run_install, write_github_output

        write_github_output(github_output, run_install(cell_text=cell, python_exe=python_exe, workdir=workdir))
