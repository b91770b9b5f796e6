"""`accelenv matrix validate [PATH]` and `accelenv matrix show --torch 2.3 [--json]`.

validate prints every problem as ``file: key: message`` and exits 4 (MatrixDataError.exit_code) when there
is any; show renders what the matrix says about one release. rich is imported inside `show` only.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli import matrix_refresh_cmd
from cli.error_render import dump_json, guarded

if TYPE_CHECKING:
    from compat_service.domain.matrix_models import MatrixData

matrix_app = typer.Typer(name="matrix", help="Check and read the compatibility matrix.", no_args_is_help=True)

MatrixPath = Annotated[
    Path | None,
    typer.Option("--path", help="a matrix_data directory; default: the bundled copy", show_default=False),
]


@matrix_app.command("validate")
def validate(
    path: Annotated[
        Path | None,
        typer.Argument(help="a matrix_data directory; default: the bundled copy", show_default=False),
    ] = None,
) -> None:
    """Check every file and cross-file rule; print each problem with its file and key."""
    from compat_service.domain.errors import MatrixDataError
    from compat_service.domain.matrix_loader import default_path, load_matrix_data, matrix_data_problems

    where = path if path is not None else default_path()
    problems = matrix_data_problems(path)
    if problems:
        for problem in problems:
            sys.stdout.write(f"{problem}\n")
        sys.stderr.write(f"error: {MatrixDataError.code}: {len(problems)} problem(s) in {where}\n")
        raise typer.Exit(MatrixDataError.exit_code)
    data = load_matrix_data(path)
    sys.stdout.write(f"matrix_data OK: {_summary(data)} ({where})\n")


def _summary(data: MatrixData) -> str:
    minors = data.torch_releases.minors
    patches = sum(len(m.patches) for m in minors)
    return (
        f"{len(minors)} torch minors, {patches} patches, {len(data.build_variants.variants)} build variants, "
        f"{len(data.cuda.toolkits)} CUDA toolkits, {len(data.gpu_archs.arch_lists)} arch lists, "
        f"{len(data.sources.sources)} sources"
    )


@matrix_app.command("show")
def show(
    torch: Annotated[str, typer.Option("--torch", help="a torch minor (2.3) or patch (2.3.1)")],
    as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of tables")] = False,
    path: MatrixPath = None,
    server: Annotated[
        str | None, typer.Option("--server", envvar="ACCELENV_SERVER", help="add evidence from this service")
    ] = None,
    database: Annotated[
        str | None, typer.Option("--database", help="add evidence from this database (probe reports)")
    ] = None,
) -> None:
    """What the matrix says about one torch release: Python, variants, default index, companions, sources."""
    with guarded(as_json=as_json):
        from compat_service.domain.matrix_loader import load_matrix_data
        from compat_service.domain.matrix_release_view import release_view

        view = release_view(load_matrix_data(path), torch)
        evidence = None
        if server or database:
            from cli.evidence_rows import fetch_evidence_rows

            evidence = fetch_evidence_rows(torch, server=server, database=database, path=path)
        if as_json:
            dump_json(view if evidence is None else {**view, "evidence": evidence})
        else:
            _render(view)
            if evidence is not None:
                from cli.evidence_rows import render_evidence

                render_evidence(evidence)


def _companion(name: str, value: dict[str, Any]) -> str:
    text = f"{name} {value['version'] or 'unknown'}"
    return text + (f" ({value['note']})" if value["note"] and not value["version"] else "")


def _render(view: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    head = f"torch {view['minor']} ({view['status']}); index option: {view['index_option'] or 'unknown'}"
    console.print(head, style="bold", highlight=False)
    if view["note"]:
        console.print(view["note"], highlight=False)
    for patch in view["patches"]:
        table = Table(title=f"torch {patch['version']}, released {patch['release_date'] or 'date unknown'}")
        for column in ("platform", "Python", "build variants", "default index"):
            table.add_column(column)
        for row in patch["platforms"]:
            variants = ", ".join(row["variants"]) or "-"
            if not row["variants_complete"]:
                variants += " (list not sourced)"
            table.add_row(
                row["platform"],
                ", ".join(row["python"]) or "unknown",
                variants,
                row["default_index"] or "unknown",
            )
        table.caption = " · ".join(
            _companion(name, patch[name]) for name in ("torchvision", "torchaudio", "triton")
        )
        console.print(table)
        if patch["note"]:
            console.print(f"note: {patch['note']}", highlight=False)
    console.print("sources:", style="bold")
    for key, title in view["sources"].items():
        console.print(f"  {key}: {title}", highlight=False)


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the root app."""
    matrix_refresh_cmd.register(matrix_app)
    app.add_typer(matrix_app, name="matrix")
