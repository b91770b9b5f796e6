"""`accelenv resolve`: a pinned install set for a target, with reasons.

Offline by default (the bundled matrix, through its compiled snapshot); `--server URL` or ACCELENV_SERVER
asks a service instead and prints the same output. Defaults (Python, OS, arch) are this host's;
`--backend auto` runs host detection (probes/host/facts.py: `detect_host`, whose docstring lists the order
and the override variables).

Start-up time is the point of this module's shape. Typer builds a pydantic adapter per option (~80 ms),
so the flags are defined once, with argparse, in `build_parser`; the Typer command only forwards its
arguments, and the console script (cli/entry.py) calls `main` directly for `accelenv resolve`. The resolve
path never imports pydantic: the error machinery is imported only when something fails.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from compat_service.domain.resolver.install_formats import FORMATS
from compat_service.domain.resolver.request import PARAMETERS

if TYPE_CHECKING:
    import typer

HELP = "Which torch install fits a target: pins, index, reasons."


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the root app."""
    import typer

    def resolve_command(ctx) -> None:
        raise typer.Exit(main(list(ctx.args)))

    # Typer reads annotations from this module's globals, where typer is not imported (start-up time).
    resolve_command.__annotations__ = {"ctx": typer.Context, "return": None}
    app.command(
        "resolve",
        help=HELP + " (see `accelenv resolve --help`)",
        add_help_option=False,
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )(resolve_command)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="accelenv resolve", description=HELP)
    add = parser.add_argument
    # the request's flags, from the domain's one parameter table (the API's query parameters are the same)
    for p in PARAMETERS:
        if p.switch:
            add(p.flag, dest=p.dest, action="store_true", help=p.cli_help or p.description)
        else:
            help_text = p.cli_help or p.description
            action = "append" if p.repeatable else "store"
            if p.bare_value is not None:  # --musl alone, or --musl 1.2
                add(p.flag, dest=p.dest, metavar=p.metavar, help=help_text, nargs="?", const=p.bare_value)
                continue
            add(p.flag, dest=p.dest, metavar=p.metavar, default=p.cli_default, help=help_text, action=action)
    add("--format", dest="fmt", metavar="FORMAT", default="text", help=f"one of: {', '.join(FORMATS)}")
    add(
        "--server",
        default=os.environ.get("ACCELENV_SERVER") or None,
        help="ask this accelenv service [env ACCELENV_SERVER]",
    )
    add(
        "--database",
        # Deliberately not ACCELENV_DATABASE_URL: that names the service's database, and an offline
        # resolve must not start depending on it (or fail on it) just because it is set.
        default=os.environ.get("ACCELENV_EVIDENCE_DATABASE") or None,
        help="read verification evidence from this database, e.g. the service's "
        "ACCELENV_DATABASE_URL [env ACCELENV_EVIDENCE_DATABASE]",
    )
    add(
        "--matrix",
        dest="matrix_path",
        metavar="DIR",
        default=os.environ.get("ACCELENV_MATRIX_PATH") or None,
        help="a matrix_data directory (default: the bundled one) [env ACCELENV_MATRIX_PATH]",
    )
    add(
        "--explain-variants",
        nargs="?",
        const="",
        default=None,
        metavar="VARIANTS_JSON",
        help="also say which wheel variant a PEP 817 installer would take for this target and which accelenv "
        "takes, and why they differ (of this variants JSON file; default: the matrix's export of the answer's "
        "torch)",
    )
    return parser


def print_help(parser: argparse.ArgumentParser) -> None:
    """The help in rich, like the Typer commands (rich-argparse's formatter; imported only when asked for)."""
    from rich_argparse import RichHelpFormatter

    class _Plain(RichHelpFormatter):
        # the help texts hold brackets ("[env ACCELENV_SERVER]") that are text, not rich markup
        help_markup = False
        text_markup = False

        def _get_help_string(self, action: argparse.Action) -> str | None:
            # a default worth saying (not None, not a switch's False), as the other commands show theirs
            text = action.help or ""
            if action.default in (None, False, argparse.SUPPRESS) or "%(default)" in text:
                return text
            return text + " [default: %(default)s]"

    parser.formatter_class = _Plain
    parser.print_help()


def main(argv: Sequence[str]) -> int:
    """Run `accelenv resolve` with `argv`; return the exit code."""
    parser = build_parser()
    if any(a in ("-h", "--help") for a in argv):
        print_help(parser)  # rich, like every Typer command; imported only when help is asked for
        return 0
    args = parser.parse_args(list(argv))
    try:
        text = run_resolve(**vars(args))
    except Exception as exc:
        # The shared renderer, imported on failure only (it pulls pydantic); exit codes come from the error.
        from cli.error_render import render_error
        from compat_service.domain.errors import AccelenvError

        if not isinstance(exc, AccelenvError) or os.environ.get("ACCELENV_VERBOSE"):
            raise
        render_error(exc, as_json=args.fmt == "json")
        return exc.exit_code
    sys.stdout.write(text)
    return 0


def run_resolve(
    *,
    torch: str,
    python: str | None,
    os_name: str | None,
    arch: str | None,
    backend: str | None,
    driver: str | None,
    gpu_arch: str | None,
    with_: str | list[str] | None,
    fmt: str,
    server: str | None,
    matrix_path: str | None,
    database: str | None = None,
    require_verified: bool = False,
    strict: bool = False,
    runtime: str | None = None,
    gpu: str | None = None,
    glibc: str | None = None,
    musl: str | None = None,
    macos: str | None = None,
    explain_variants: str | None = None,
) -> str:
    from compat_service.domain.backends import normalise_arch
    from compat_service.domain.resolver.install_formats import render
    from compat_service.domain.resolver.request import ResolveRequest, invalid_request
    from probes.host import facts as host_facts

    if fmt not in FORMATS:
        raise invalid_request(
            f"--format {fmt!r} is not an output format", f"use one of: {', '.join(FORMATS)}", "--format", fmt
        )
    this_os, this_arch = host_facts.os_name(), host_facts.arch_name()
    if arch is None and os_name == "macos" and this_os != "macos":
        arch = ""  # another host's macOS: Apple silicon, said in the answer (ResolveRequest's default)
    same_arch = arch is None or normalise_arch(this_os, arch) == normalise_arch(this_os, this_arch)
    foreign = (os_name is not None and os_name != this_os) or not same_arch
    note = None
    host = None
    if backend == "auto":
        target_os = os_name or this_os
        if driver or gpu_arch or gpu:
            backend = None  # the family --gpu-arch/--driver/--gpu imply (ResolveRequest), never this host's
        elif foreign:
            # A foreign target's default: the build its default index serves (MPS is the macOS wheel).
            backend = "mps" if target_os == "macos" else "cpu"
            note = (
                f"no --backend given for another target ({target_os}): chose its default-index build "
                f"({backend}); name --backend for another"
            )
        else:
            from compat_service.domain.host import HostFacts

            _check_backend_override(host_facts)
            host = HostFacts.from_detected(host_facts.detect_host())
    if host is not None:
        request = ResolveRequest.for_host(
            host, torch=torch, python=python, os=os_name, arch=(arch or None) if arch is not None else None,
            with_=with_, require_verified=require_verified, strict=strict, runtime=runtime, gpu=gpu,
            **_platform_flags(glibc, musl, macos),
        )
    else:
        request = ResolveRequest.from_strings(
            torch=torch,
            python=python if python is not None else host_facts.python_minor(),
            os=os_name if os_name is not None else this_os,
            arch=(arch or None) if arch is not None else this_arch,
            backend=backend,
            driver=driver,
            gpu_arch=gpu_arch,
            with_=with_,
            require_verified=require_verified,
            strict=strict,
            runtime=runtime,
            gpu=gpu,
            glibc=glibc,
            musl=musl,
            macos=macos,
        )
    if require_verified and not (server or database):
        raise invalid_request(
            "--require-verified needs verification evidence, and none was given",
            "add --server URL (an accelenv service) or --database URL (a database holding probe reports)",
            "--require-verified",
            "true",
        )
    if server:
        from cli.service_client import ServiceClient

        resolution = ServiceClient(server).resolve(request.to_strings())
    else:
        from pathlib import Path

        from compat_service.domain.matrix.loading.snapshot import load_matrix_cached
        from compat_service.domain.resolver.stages import resolve


        evidence = None
        if database:
            # lazy: only `--database` pays for SQLAlchemy (docs/architecture.md allows it here)
            from compat_service.db.evidence.lookup import open_database_evidence
            from compat_service.domain.resolver.stages import name_the_gpu

            matrix = load_matrix_cached(Path(matrix_path) if matrix_path else None)
            evidence = open_database_evidence(database, gpu_arch=name_the_gpu(request, matrix)[0].gpu_arch)
        data_dir = Path(matrix_path) if matrix_path else None
        if request.stack:  # --with vllm: the stack's releases, then torch for them (compat_service/domain/stacks)
            from compat_service.domain.stacks.catalog import load_catalog
            from compat_service.domain.stacks.resolve import resolve_stack

            resolution = resolve_stack(request, load_matrix_cached(data_dir), evidence, load_catalog(data_dir))
        else:
            resolution = resolve(request, load_matrix_cached(data_dir), evidence)
    if note is not None:
        resolution = resolution.changed(warnings=(note, *resolution.warnings))
    text = render(resolution, fmt)
    if explain_variants is not None:
        from cli.variants_cmd import explain_for_resolution

        text = explain_for_resolution(text, fmt, resolution, request, explain_variants, matrix_path)
    return text


def _platform_flags(glibc: str | None, musl: str | None, macos: str | None) -> dict[str, str | None]:
    """--glibc/--musl/--macos as given; with none given, this host's, as pip reads them (resolving for this host:
    --backend auto; a request that names its target states the floor its wheels need instead)."""
    if glibc is not None or musl is not None or macos is not None:
        return {"glibc": glibc, "musl": musl, "macos": macos}
    from compat_service.domain.host import platform_versions
    from probes.host import facts as host_facts

    return platform_versions(host_facts.os_name())


def _check_backend_override(host_facts) -> None:  # host_facts: the probes module
    """A bad ACCELENV_BACKEND is refused naming the variable (as `doctor` does), before detection."""
    from compat_service.domain.resolver.request import invalid_request, parse_backend

    name = host_facts.BACKEND_OVERRIDE_ENV
    forced = os.environ.get(name)
    if forced:
        try:
            spec = parse_backend(forced)
        except Exception:
            spec = None
        if spec is None or spec.kind == "auto":
            raise invalid_request(
                f"{name}={forced!r} is not a backend",
                f"set {name} to cpu, a build label (cu126, rocm6.4, xpu) or a family (cuda, rocm, npu, "
                f"mlu, mps), or unset it to detect this host",
                name,
                forced,
            )

