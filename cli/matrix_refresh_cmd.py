"""`accelenv matrix refresh [--index-url URL] [--check] [--cache-dir DIR]`: follow the package index.

Reads torch, torchvision, torchaudio, triton and torch-npu from the index pip is configured with (or
``--index-url``), derives the facts and rewrites the generated files under ``matrix_data/index/``.
``--check`` writes nothing: it prints the diff and exits 11 (``matrix-out-of-date``) when the index has
releases or wheels the generated layer lacks or contradicts, 0 when it is current. Other exit codes: 6 the
index could not be read, 4 a matrix file is invalid, 2 a bad flag, 12 (``refresh-removes-facts``) the answer
would remove more than 10 % of a project's facts and ``--allow-removals`` was not given (nothing written).
Progress goes to stderr; the diff and the summary to stdout. httpx and the index package are imported inside
the command only. ``--oracle`` then checks the stack answers of the ecosystem packages with a real resolver
(``uv pip compile``, the ``refresh`` extra) against the same index and writes ``index/stack-oracle.yaml``
(compat_service/index/stack_oracle.py); with ``--check`` it writes nothing and prints the counts.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.error_render import dump_json, guarded
from cli.terminal_text import say

CHECK_EXIT_CODE = 11


def _default_cache_dir() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("accelenv")) / "index"


def _variant_urls(values: list[str]) -> dict[str, str]:
    from compat_service.domain.errors import InvalidRequestError

    out = {}
    for value in values:
        label, sep, url = value.partition("=")
        if not sep or not label or not url.startswith(("http://", "https://")):
            raise InvalidRequestError(
                f"--variant-index {value!r} is not LABEL=URL",
                hint="e.g. --variant-index cu130=http://127.0.0.1:8080/whl/cu130",
            )
        out[label] = url
    return out


class _RichProgress:
    def __init__(self, progress: Any) -> None:
        self.progress = progress
        self.task: Any = None

    def stage(self, description: str, total: int) -> None:
        if self.task is not None:
            self.progress.update(self.task, completed=self.progress.tasks[-1].total)
        self.task = self.progress.add_task(description, total=total)

    def advance(self) -> None:
        self.progress.advance(self.task)


def refresh(
    index_url: Annotated[
        str | None,
        typer.Option("--index-url", help="a simple-API index; default: pip's configured index-url, else pip's default",
                     show_default=False),
    ] = None,
    check: Annotated[
        bool, typer.Option("--check", help=f"write nothing; exit {CHECK_EXIT_CODE} with a diff if the index has news")
    ] = False,
    cache_dir: Annotated[
        Path | None,
        typer.Option("--cache-dir", envvar="ACCELENV_INDEX_CACHE_DIR",
                     help="conditional-request cache; default: the user cache dir", show_default=False),
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="read everything again")] = False,
    path: Annotated[
        Path | None,
        typer.Option("--path", help="a matrix_data directory; default: the bundled copy", show_default=False),
    ] = None,
    package: Annotated[
        list[str] | None, typer.Option("--package", help="only this project (repeatable)", show_default=False)
    ] = None,
    variant_index: Annotated[
        list[str] | None,
        typer.Option("--variant-index", help="LABEL=URL: read only these build indexes, there (repeatable); "
                     "default: every index_url of build_variants.yaml", show_default=False),
    ] = None,
    no_variants: Annotated[bool, typer.Option("--no-variants", help="skip the /whl/<label> indexes")] = False,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, max=64, help="parallel requests")] = 8,
    as_json: Annotated[bool, typer.Option("--json", help="print the summary and diff as JSON")] = False,
    limit: Annotated[int, typer.Option("--limit", min=1, help="diff lines shown per package")] = 60,
    allow_removals: Annotated[
        bool, typer.Option("--allow-removals", help="write even when a project would lose more than 10% of its facts")
    ] = False,
    oracle: Annotated[
        bool, typer.Option("--oracle", help="also check each ecosystem stack answer with uv pip compile against the "
                           "index (index/stack-oracle.yaml)")
    ] = False,
) -> None:
    """Read the package index and update the generated layer of the matrix (matrix_data/index/)."""
    with guarded(as_json=as_json):
        import stamina.instrumentation
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        from compat_service.domain.matrix.loading.loader import default_path
        from compat_service.index.client import IndexClient
        from compat_service.index.errors import MatrixOutOfDateError
        from compat_service.index.location import resolve_index
        from compat_service.index.page_cache import IndexCache
        from compat_service.index.refresh import run_refresh

        # the summary counts retries; stamina's own log line per retry would drown the progress bar
        stamina.instrumentation.set_on_retry_hooks([])
        matrix_path = path if path is not None else default_path()
        index = resolve_index(index_url)
        variant_urls = _variant_urls(variant_index or [])
        cache = IndexCache(None if no_cache else (cache_dir or _default_cache_dir()))
        console = Console(stderr=True)
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
        with IndexClient(cache=cache) as client, Progress(*columns, console=console, transient=True) as bar:
            result = run_refresh(
                client, index, matrix_path, packages=package or None, write=not check,
                variants=not no_variants, variant_urls=variant_urls or None, concurrency=concurrency,
                progress=_RichProgress(bar), allow_removals=allow_removals,
            )
        lines = [line for diff in result.diffs.values() for line in diff.lines(limit)]
        counts = result.counts()
        from compat_service.domain.matrix.loading.loader import layer_conflicts

        # what the curated files would contradict in these facts (`matrix validate` reports the same once written)
        conflicts = [str(problem) for problem in layer_conflicts(matrix_path, result.facts)]
        if as_json:
            dump_json({
                "index": index.label, "index_origin": index.origin, "check": check, "counts": counts,
                "diff": lines, "conflicts": conflicts, "notices": result.notices,
                "written": [str(p) for p in result.written],
                "requests": result.stats, "metadata_reads": result.metadata_reads,
            })
        else:
            # an index's words: printed as data
            for line in lines:
                say(line, sys.stdout)
            for conflict in conflicts:
                say(f"! {conflict}", sys.stdout)
            for notice in result.notices:
                say(f"notice: {notice}")
            verb = "would change" if check else "changed"
            sys.stdout.write(
                f"index {index.label} ({index.origin}): {counts['added']} facts added, {counts['changed']} changed, "
                f"{counts['removed']} removed ({verb}); {len(result.written)} file(s) written; "
                f"{result.stats.get('requests', 0)} requests, {result.stats.get('not_modified', 0)} not modified"
                + (f"; {len(conflicts)} curated value(s) contradict the index" if conflicts else "") + "\n"
            )
        if oracle:
            from compat_service.index.stack_oracle import run_stack_oracle

            checked = run_stack_oracle(matrix_path, index, packages=package or None, write=not check)
            counts_text = ", ".join(f"{v} {k}" for k, v in checked.counts().items())
            sys.stderr.write(f"oracle (uv pip compile against {index.label}): {counts_text}\n")
            for found in checked.outcomes:
                if not found.resolvable:
                    why = found.failing or ", ".join(found.changed)
                    sys.stderr.write(f"notice: {found.package} {found.version} on {found.platform} Python "
                                     f"{found.python} does not install: {why}\n")
        if check and (result.changed or conflicts):
            raise MatrixOutOfDateError(
                "the package index has releases or wheels the matrix lacks or contradicts",
                hint="run `accelenv matrix refresh` and commit matrix_data/index/; fix each curated value marked "
                "'!' (or give it index_overrides with a reason and a source)",
            )


def register(matrix_app: typer.Typer) -> None:
    """Attach `refresh` to the `matrix` group (once, however often the group is registered)."""
    if not any(command.name == "refresh" for command in matrix_app.registered_commands):
        matrix_app.command("refresh")(refresh)
