"""`accelenv ci matrix`: the CI test matrix, the same JSON as ``GET /v1/ci-matrix``.

Offline by default (the bundled matrix; `compat_service.domain.ci.job_matrix` builds it), or `--server URL` /
ACCELENV_SERVER asks a service, whose answer also carries the stored evidence. ``--include-only`` prints just
the ``include`` list, ready for a workflow's ``strategy.matrix`` (``fromJSON``); ``--output FILE`` writes it
to a file. `accelenv verify-env` (cli/verify_env_cmd.py) is the check each cell's job runs.
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
    include_only: bool = typer.Option(False, "--include-only", help="print only {\"include\": [...]}"),
    output: Path | None = typer.Option(None, "--output", help="write the JSON here instead of stdout"),
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
            )
            if value is not None
        }
        body = build_matrix(query, server=server, matrix_path=matrix_path)
        if include_only:
            body = {"include": body["include"]}
        text = json.dumps(body, indent=None if include_only else 2) + "\n"
        if output is not None:
            output.write_text(text, encoding="utf-8")
        else:
            typer.echo(text, nl=False)


def build_matrix(query: dict[str, str], *, server: str | None, matrix_path: Path | None) -> dict:
    """The matrix for ``query`` (API parameter names), from ``server`` or the bundled matrix."""
    if server:
        from cli.service_client import ServiceClient

        return ServiceClient(server, token=os.environ.get("ACCELENV_TOKEN") or None).ci_matrix(query)
    from compat_service.domain.ci.job_matrix import CiMatrixRequest, ci_matrix
    from compat_service.domain.matrix.snapshot import load_matrix_cached

    request = CiMatrixRequest.from_strings(**{("with_" if k == "with" else k): v for k, v in query.items()})
    return ci_matrix(request, load_matrix_cached(matrix_path))
