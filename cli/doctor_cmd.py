"""`accelenv doctor`: is the torch installed here right for this host? Each problem comes with its fix.

Facts gathered here (the I/O): the host by the resolver's host detection (override variables
ACCELENV_BACKEND / ACCELENV_DRIVER_VERSION / ACCELENV_GPU_ARCH honoured), installed versions from package
metadata (this environment, or ``--site-packages DIR``; torch itself is not imported), the bundled matrix,
and evidence from ``--database``. The checks are ``compat_service.domain.diagnosis``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

PACKAGES = ("torch", "torchvision", "torchaudio")
#: host detection backend -> what `--backend` the resolver takes for it
_RESOLVER_BACKEND = {"cuda": "cuda", "rocm": "rocm", "xpu": "xpu", "mps": "mps", "npu": "npu", "mlu": "mlu"}


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the root app."""
    app.command("doctor", help="Check the installed torch against this host, the matrix and the evidence.")(
        doctor_command
    )


def doctor_command(
    site_packages: Optional[Path] = typer.Option(
        None, "--site-packages", help="read installed packages from this directory (default: this environment)"
    ),
    database: Optional[str] = typer.Option(
        None,
        "--database",
        envvar="ACCELENV_EVIDENCE_DATABASE",
        help="evidence database (probe reports), e.g. the service's ACCELENV_DATABASE_URL",
    ),
    matrix_path: Optional[Path] = typer.Option(None, "--matrix", envvar="ACCELENV_MATRIX_PATH", help="a matrix_data dir"),
    fmt: str = typer.Option("text", "--format", help="text or json"),
) -> None:
    from cli.error_render import guarded

    with guarded(as_json=fmt == "json"):
        diagnosis = run_doctor(site_packages=site_packages, database=database, matrix_path=matrix_path, fmt=fmt)
    raise typer.Exit(0 if diagnosis else 1)


def installed_versions(site_packages: Path | None) -> dict[str, str | None]:
    from importlib import metadata

    from compat_service.domain.errors import InvalidRequestError

    if site_packages is not None and not site_packages.is_dir():
        raise InvalidRequestError(
            f"--site-packages {site_packages} is not a directory",
            hint="give the site-packages directory of the environment to check",
        )
    paths = [str(site_packages)] if site_packages is not None else None
    found: dict[str, str | None] = dict.fromkeys(PACKAGES)
    for dist in metadata.distributions(**({"path": paths} if paths else {})):
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name in found and found[name] is None:
            found[name] = dist.version
    return found


def run_doctor(*, site_packages: Path | None, database: str | None, matrix_path: Path | None, fmt: str) -> bool:
    from compat_service.domain import host_detection
    from compat_service.domain.diagnosis import Installed, diagnose
    from compat_service.domain.errors import InvalidRequestError
    from compat_service.domain.matrix.snapshot import load_matrix_cached

    if fmt not in ("text", "json"):
        raise InvalidRequestError(f"--format {fmt!r} is not an output format", hint="use text or json")
    host = host_detection.detect_host()
    versions = installed_versions(site_packages)
    matrix = load_matrix_cached(matrix_path)
    evidence = None
    if database:
        from compat_service.db.evidence_repository import open_database_evidence

        evidence = open_database_evidence(database, gpu_arch=host.gpu_arch)

    def fix_command(torch_version: str | None) -> str | None:
        """What `accelenv resolve` would install on this host, as a pip command."""
        from compat_service.domain.errors import AccelenvError
        from compat_service.domain.resolver.install_formats import render
        from compat_service.domain.resolver.request import ResolveRequest
        from compat_service.domain.resolver.stages import resolve

        try:
            request = ResolveRequest.from_strings(
                torch=torch_version or "latest", python=host.python, os=host.os, arch=host.arch,
                backend=_RESOLVER_BACKEND.get(host.backend, "cpu"), driver=host.driver,
                gpu_arch=host.gpu_arch if host.backend in ("cuda", "rocm") else None,
            )
            command = render(resolve(request, matrix, evidence), "pip").strip()
        except AccelenvError as err:
            return f"`accelenv resolve` finds no install for this host: {err.message}" + (
                f" ({err.hint})" if err.hint else ""
            )
        # pip counts an installed 2.13.0+cpu as satisfying torch==2.13.0: remove the wrong build first
        installed = [name for name in PACKAGES if versions[name] is not None]
        return (f"pip uninstall -y {' '.join(installed)}\n" if installed else "") + command

    result = diagnose(
        Installed(torch=versions["torch"], companions={k: versions[k] for k in PACKAGES[1:]}),
        host, matrix, evidence=evidence, fix_command=fix_command,
    )
    _render(result, host, fmt)
    return result.ok


def _render(result, host, fmt: str) -> None:  # noqa: ANN001
    import json
    import sys

    if fmt == "json":
        payload = {
            "ok": result.ok,
            "torch": result.torch_version,
            "build": result.build,
            "host": {"os": host.os, "arch": host.arch, "python": host.python, "backend": host.backend,
                     "driver": host.driver, "gpu_arch": host.gpu_arch},
            "findings": [f.__dict__ for f in result.findings],
        }
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return
    marks = {"ok": "ok  ", "warning": "warn", "error": "FAIL"}
    out = sys.stdout
    out.write(f"host: {host.os}-{host.arch}, Python {host.python}, {host.backend}"
              + (f", driver {host.driver}" if host.driver else "") + (f", {host.gpu_arch}" if host.gpu_arch else "")
              + "\n")
    for f in result.findings:
        out.write(f"[{marks[f.severity]}] {f.check}: {f.message}\n")
        if f.fix and f.severity != "ok":
            out.write("       fix: " + f.fix.replace("\n", "\n            ") + "\n")
    out.write("\nall good\n" if result.ok else "\nproblems found\n")
