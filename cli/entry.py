"""The `accelenv` console script: `accelenv resolve` straight to its module, everything else to the Typer app.

`resolve` is the command people (and scripts) run often; skipping the Typer app saves ~80 ms of start-up
(Typer builds pydantic adapters for every option of every command). Both paths run the same code:
`cli.resolve_cmd.main`.
"""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["resolve"]:
        from cli.resolve_cmd import main as resolve_main

        sys.exit(resolve_main(argv[1:]))
    from cli.main import main as app_main

    app_main()
