"""Entry point of the `accelenv` console script.

Each command group lives in its own module and registers itself here. Command modules import nothing
heavy at module level (no FastAPI, SQLModel, torch, rich tables): `accelenv resolve` must start fast.
"""

from __future__ import annotations

import typer

from cli import (
    ci_cmd,
    db_cmd,
    doctor_cmd,
    install_cmd,
    lock_cmd,
    matrix_cmd,
    probe_cmd,
    resolve_cmd,
    serve_cmd,
    token_cmd,
    variants_cmd,
    verify_env_cmd,
)

app = typer.Typer(
    name="accelenv",
    help="Which PyTorch install works on this accelerator host — with evidence.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for module in (resolve_cmd, matrix_cmd, db_cmd, token_cmd, serve_cmd, probe_cmd, doctor_cmd, ci_cmd,
               verify_env_cmd, variants_cmd, lock_cmd, install_cmd):
    module.register(app)


def main() -> None:
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
