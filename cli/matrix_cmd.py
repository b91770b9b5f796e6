"""`accelenv matrix validate [PATH] [--json]` and `accelenv matrix show [--torch 2.3|latest] [--json]`.

validate prints every problem as ``file: key: message`` and exits 4 (MatrixDataError.exit_code) when there
is any; show without ``--torch`` lists the releases, with it renders what the matrix says about one release.
rich is imported inside `show` only.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli import matrix_refresh_cmd
from cli.error_render import dump_json, guarded

if TYPE_CHECKING:
    from compat_service.domain.matrix.model.rows import MatrixTables

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
    as_json: Annotated[bool, typer.Option("--json", help="print {ok, path, counts, problems} as JSON")] = False,
    previous: Annotated[
        Path | None,
        typer.Option("--previous", help="an earlier matrix_data (e.g. main's): flag a generated file that lost "
                     "more than half of its facts since", show_default=False),
    ] = None,
) -> None:
    """Check every file and cross-file rule; print each problem with its file and key."""
    from compat_service.domain.errors import MatrixDataError
    from compat_service.domain.matrix.loading.loader import default_path, load_matrix_rows, matrix_data_problems
    from compat_service.domain.stacks.catalog import ecosystem_problems

    where = path if path is not None else default_path()
    problems: list[object] = list(matrix_data_problems(path))
    problems += ecosystem_problems(where)  # ecosystem.yaml and the ecosystem's generated files
    if previous is not None:
        from compat_service.index.generated import lost_facts

        problems += lost_facts(where, previous)
    if problems:
        if as_json:
            dump_json({"ok": False, "path": str(where), "code": MatrixDataError.code, "counts": None,
                       "problems": [str(problem) for problem in problems]})
        else:
            for problem in problems:
                sys.stdout.write(f"{problem}\n")
            sys.stderr.write(f"error: {MatrixDataError.code}: {len(problems)} problem(s) in {where}\n")
        raise typer.Exit(MatrixDataError.exit_code)
    from compat_service.domain.matrix.arch_coverage import arch_list_coverage

    data = load_matrix_rows(path)
    counts = _counts(data)
    unknown = [b for b in arch_list_coverage(data) if not b.known]
    if as_json:
        dump_json({"ok": True, "path": str(where), "counts": counts, "problems": [],
                   "unknown_arch_lists": [vars(b) for b in unknown]})
        return
    summary = ", ".join(f"{n} {name.replace('_', ' ').replace('cuda', 'CUDA')}" for name, n in counts.items())
    sys.stdout.write(f"matrix_data OK: {summary} ({where})\n")
    if unknown:
        sys.stdout.write(f"unknown arch lists ({len(unknown)} builds; no source states them):\n")
        for b in unknown:
            why = f"searched: {b.searched}" if b.searched else "no search recorded"
            sys.stdout.write(f"  torch {b.torch} {b.variant} {b.platform}: {why}\n")


def _counts(data: MatrixTables) -> dict[str, int]:
    minors = data.torch_releases.minors
    return {
        "torch_minors": len(minors),
        "patches": sum(len(m.patches) for m in minors),
        "build_variants": len(data.build_variants.variants),
        "cuda_toolkits": len(data.cuda.toolkits),
        "arch_lists": len(data.gpu_archs.arch_lists),
        "known_bad_rules": len(data.known_bad.rules),
        "sources": len(data.sources.sources),
    }


@matrix_app.command("show")
def show(
    torch: Annotated[
        str | None,
        typer.Option("--torch", help="latest, a torch minor (2.3) or patch (2.3.1); default: list every release"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of tables")] = False,
    path: MatrixPath = None,
    server: Annotated[
        str | None, typer.Option("--server", envvar="ACCELENV_SERVER", help="add evidence from this service")
    ] = None,
    database: Annotated[
        str | None, typer.Option("--database", help="add evidence from this database (probe reports)")
    ] = None,
    with_: Annotated[
        str | None,
        typer.Option("--with", help="an ecosystem package (vllm, xformers, ...): its releases and the torch each "
                     "pins; with --torch, only the releases that admit it", show_default=False),
    ] = None,
    variants: Annotated[
        bool,
        typer.Option("--variants", help="print the release's builds as a PEP 825 variants JSON (--platform's; "
                     "--json adds what each build lacks)"),
    ] = False,
    platform: Annotated[str, typer.Option("--platform", help="with --variants: the platform")] = "linux-x86_64",
) -> None:
    """The releases the matrix holds, or what it says about one: Python, variants, default index, companions."""
    with guarded(as_json=as_json):
        if variants:
            from compat_service.domain.matrix.loading.snapshot import load_matrix_cached
            from compat_service.domain.variants.export import release_variants

            exported = release_variants(load_matrix_cached(path), torch or "latest", platform)
            dump_json(exported if as_json else exported["document"])
            return
        if with_ is not None:
            _show_package(with_, torch, path, as_json)
            return
        from compat_service.domain.matrix.loading.snapshot import load_matrix_cached
        from compat_service.domain.matrix.release_view import release_view, releases_overview

        data = load_matrix_cached(path).data
        if torch is None:
            if server or database:
                raise _needs_torch("--server" if server else "--database")
            rows = releases_overview(data)
            dump_json(rows) if as_json else _render_overview(rows)
            return
        view = release_view(data, torch)
        torch = view["minor"] if torch.strip() == "latest" else torch
        evidence = None
        observed: list[dict] = []
        if server or database:
            from cli.evidence_rows import fetch_evidence_rows, fetch_observed_arch_lists

            evidence = fetch_evidence_rows(torch, server=server, database=database, path=path)
            observed = fetch_observed_arch_lists([p["version"] for p in view["patches"]], server=server,
                                                 database=database, path=path)
        if as_json:
            dump_json(view if evidence is None else {**view, "evidence": evidence, "observed_arch_lists": observed})
        else:
            _render(view)
            if evidence is not None:
                from cli.evidence_rows import render_evidence, render_observed_arch_lists

                render_evidence(evidence)
                render_observed_arch_lists(observed)


def _show_package(name: str, torch: str | None, path: Path | None, as_json: bool) -> None:
    """`matrix show --with vllm`: the package's releases <-> torch (newest first), from the ecosystem catalog."""
    from packaging.specifiers import SpecifierSet

    from compat_service.domain.errors import Cause, InvalidRequestError
    from compat_service.domain.stacks.catalog import load_catalog
    from compat_service.domain.stacks.package_view import package_view

    catalog = load_catalog(path)
    view = package_view(catalog, name.strip().lower().replace("_", "-"))
    if view is None:
        raise InvalidRequestError(f"--with {name!r} is not an ecosystem package",
                                  hint=f"one of: {', '.join(catalog.names())}",
                                  causes=[Cause(constraint=f"--with {name}", origin="request")])
    if torch is not None and torch.strip() != "latest":
        wanted = torch.strip()
        probe = wanted + ".0" if wanted.count(".") == 1 else wanted

        def admits(row: dict[str, Any]) -> bool:
            specs = [p["torch"] for p in row["platforms"] if p["torch"] is not None]
            curated = (row["curated_torch"] or {}).get("binaries") or []
            prebuilt = [m for w in (*row["prebuilt_wheels"], *row["wheel_pages"]) for m in w["torch"]]
            same_minor = ".".join(probe.split(".")[:2])
            return (any(SpecifierSet(s).contains(probe, prereleases=True) or _pins_minor(s, same_minor)
                        for s in specs)
                    or any(SpecifierSet(s).contains(probe) for s in curated) or same_minor in prebuilt)

        view = {**view, "releases": [r for r in view["releases"] if admits(r)]}
    if as_json:
        dump_json(view)
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{view['name']} releases and the torch each requires (index: {view['index']}, "
                  f"retrieved {view['retrieved']}; torch build: {view['torch_build'] or 'unknown'})",
                  caption="from the wheels' METADATA (matrix_data/index) and ecosystem.yaml; "
                  "`accelenv resolve --with NAME==X` resolves one")
    for column in ("release", "torch", "companions", "platforms", "Python", "note"):
        table.add_column(column)
    for row in view["releases"]:
        platforms = row["platforms"]
        torch_text = ", ".join(sorted({p["torch"] or "any" for p in platforms if p["torch"] is not None})) or (
            " or ".join((row["curated_torch"] or {}).get("binaries") or []) or
            ", ".join(f"{'/'.join(w['torch'])} cu{w['cuda_major']}" for w in row["prebuilt_wheels"]) or
            "; ".join(f"{'/'.join(w['torch'])} ({'/'.join(w['builds'])})" for w in row["wheel_pages"]) or "unknown")
        companions = ", ".join(sorted({f"{k}=={v}" for p in platforms for k, v in p["companions"].items()}))
        pythons = ", ".join(sorted({py for p in platforms for py in p["pythons"]}))
        note = "yanked" if row["yanked"] else ("sdist only" if row["sdist"] and not platforms else "")
        if row["wheel_pages"] and not row["yanked"]:
            note = "wheels on the project's own pages (--find-links)"
        if row["policy"]:
            note = f"vllm {row['policy'].get('vllm') or '?'}, CANN {row['policy'].get('cann') or '?'}"
        table.add_row(row["version"], torch_text, companions or "-",
                      ", ".join(p["platform"] for p in platforms) or "-", pythons or "-", note)
    Console().print(table)


def _pins_minor(spec: str, minor: str) -> bool:
    """``==2.9.1`` names minor 2.9 (so `--torch 2.9` lists the releases pinned to any 2.9 patch)."""
    return spec.startswith("==") and "," not in spec and spec[2:].startswith(minor + ".")


def _needs_torch(flag: str) -> Exception:
    from compat_service.domain.errors import Cause, InvalidRequestError

    return InvalidRequestError(f"{flag} shows the evidence for one release, and no --torch was given",
                               hint="add --torch 2.3 (or latest)",
                               causes=[Cause(constraint="--torch RELEASE", origin=f"request: {flag}")])


def _python_range(versions: list[str]) -> str:
    """'3.10–3.14 (+3.13t, 3.14t)': the plain versions as a range, free-threaded builds named."""
    plain = [v for v in versions if not v.endswith("t")]
    threaded = [v for v in versions if v.endswith("t")]
    text = (f"{plain[0]}–{plain[-1]}" if len(plain) > 1 else "".join(plain)) or "unknown"
    return text + (f" (+{', '.join(threaded)})" if threaded else "")


def _render_overview(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    from cli.terminal_text import plain
    from probes.host.facts import arch_name as host_arch
    from probes.host.facts import os_name as host_os

    platform = f"{host_os()}-{host_arch()}"
    table = Table(title="torch releases in the matrix", caption="`accelenv matrix show --torch MINOR` for one release")
    for column in ("torch", "date", "Python", "builds", f"default build ({platform})", "status"):
        table.add_column(column)
    for row in rows:
        patches = row["patches"]
        name = row["minor"] + (f" ({patches[0]}–{patches[-1]})" if len(patches) > 1 else f" ({patches[0]})")
        cells = (name, row["release_date"] or "unknown", _python_range(row["python"]),
                 ", ".join(row["builds"]) or "-",
                 row["default_build"].get(platform) or ("unknown" if platform in row["default_build"] else "-"),
                 row["status"])
        table.add_row(*(plain(cell) for cell in cells))
    Console().print(table)


def _companion(name: str, value: dict[str, Any]) -> str:
    text = f"{name} {value['version'] or 'unknown'}"
    return text + (f" ({value['note']})" if value["note"] and not value["version"] else "")


def _render(view: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    from cli.terminal_text import plain

    # what the service (or a database) sends is data: printed literally, control characters made visible
    console = Console()
    head = f"torch {view['minor']} ({view['status']}); index option: {view['index_option'] or 'unknown'}"
    console.print(plain(head), style="bold", highlight=False)
    if view["note"]:
        console.print(plain(view["note"]), highlight=False)
    for patch in view["patches"]:
        table = Table(title=plain(f"torch {patch['version']}, released {patch['release_date'] or 'date unknown'}"))
        for column in ("platform", "Python", "build variants", "default index"):
            table.add_column(column)
        for row in patch["platforms"]:
            variants = ", ".join(row["variants"]) or "-"
            if not row["variants_complete"]:
                variants += " (list not sourced)"
            table.add_row(
                plain(row["platform"]),
                plain(", ".join(row["python"]) or "unknown"),
                plain(variants),
                plain(row["default_index"] or "unknown"),
            )
        table.caption = plain(" · ".join(
            _companion(name, patch[name]) for name in ("torchvision", "torchaudio", "triton")
        ))
        console.print(table)
        if patch["note"]:
            console.print(plain(f"note: {patch['note']}"), highlight=False)
    console.print("sources:", style="bold")
    for key, title in view["sources"].items():
        console.print(plain(f"  {key}: {title}"), highlight=False)


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the root app."""
    matrix_refresh_cmd.register(matrix_app)
    app.add_typer(matrix_app, name="matrix")
