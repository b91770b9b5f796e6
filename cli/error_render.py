"""The one place that turns an AccelenvError into terminal output and an exit code.

Rendered like pip does: ``error: <code>``, the message, each cause, the hint. With ``ACCELENV_VERBOSE=1``
in the environment the error is raised instead, with its traceback.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    # errors.py builds pydantic models: `guarded` imports it only when something fails, so the start-up of
    # `accelenv resolve` (benchmarks/bench_resolve.py times it) never pays for it.
    from compat_service.domain.errors import AccelenvError


def render_error(err: AccelenvError, *, as_json: bool = False) -> None:
    if as_json:
        # ASCII JSON: a server's control and bidi characters travel as \u escapes, never raw
        sys.stdout.write(json.dumps(err.to_body().model_dump(mode="json"), indent=2) + "\n")
        return
    from cli.terminal_text import visible as v

    # an error may come from the service (a report's text inside): control characters are shown, not sent
    out = sys.stderr
    out.write(f"error: {v(err.code)}\n\n")
    out.write(f"× {v(err.message)}\n")
    for cause in err.causes:
        line = f"  ╰─> {v(cause.constraint)}  (from {v(cause.origin)})"
        if cause.detail:
            line += f": {v(cause.detail)}"
        out.write(line + "\n")
    if err.alternatives:
        out.write("\nWhat would work:\n")
        for alt in err.alternatives:
            # the changes to the request as flags; None drops a flag (the CPU build has no --driver)
            req = " ".join(
                f"--{k.replace('_', '-')} {v(val)}" if val is not None else f"(no --{k.replace('_', '-')})"
                for k, val in alt.request.items()
            )
            out.write(f"  • {v(alt.description)}" + (f"   [{req}]" if req else "") + "\n")
    if err.hint:
        out.write(f"\nhint: {v(err.hint)}\n")


@contextlib.contextmanager
def guarded(*, as_json: bool = False) -> Iterator[None]:
    """Run a command body; map AccelenvError to rendered output and its exit code."""
    try:
        yield
    except Exception as err:
        from compat_service.domain.errors import AccelenvError

        if not isinstance(err, AccelenvError) or os.environ.get("ACCELENV_VERBOSE"):
            raise
        render_error(err, as_json=as_json)
        raise typer.Exit(err.exit_code) from None


def dump_json(payload: object) -> None:
    sys.stdout.write(json.dumps(payload, indent=2, sort_keys=False) + "\n")
