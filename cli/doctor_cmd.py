"""`accelenv doctor`: is the torch installed here right for this host? Each problem comes with its fix.

Facts gathered here (the I/O): the host by accelenv's one host detection, ``probes.host.facts.detect_host``
(its docstring lists the order and the override variables; a backend resolve does not know is refused), the
glibc through ``probes.host.facts``, installed versions and torch's build constants (``torch/version.py``, the
wheel's manylinux tags, cuDNN and the other packages collect_env lists) from package metadata (this
environment, or ``--site-packages DIR``; torch itself is not imported), the bundled matrix, and evidence from
``--database``. The checks are ``compat_service.domain.diagnosis`` and
``compat_service.domain.install_environment``. When no build of the installed release can work here, the
fix is what `accelenv resolve` gives for this host instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from compat_service.domain.host import HostFacts
    from compat_service.domain.install_environment import InstalledEnvironment

PACKAGES = ("torch", "torchvision", "torchaudio")


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the root app."""
    app.command("doctor", help="Check the installed torch against this host, the matrix and the evidence.")(
        doctor_command
    )


def doctor_command(
    site_packages: Path | None = typer.Option(
        None, "--site-packages", help="read installed packages from this directory (default: this environment)"
    ),
    database: str | None = typer.Option(
        None,
        "--database",
        envvar="ACCELENV_EVIDENCE_DATABASE",
        help="evidence database (probe reports), e.g. the service's ACCELENV_DATABASE_URL",
    ),
    matrix_path: Path | None = typer.Option(None, "--matrix", envvar="ACCELENV_MATRIX_PATH", help="a matrix_data dir"),
    as_json: bool = typer.Option(False, "--json", help="print JSON (findings, host, environment)"),
    fmt: str | None = typer.Option(None, "--format", help="text or json (older spelling of --json)", hidden=True),
) -> None:
    from cli.error_render import guarded

    with guarded(as_json=as_json or fmt == "json"):
        if fmt is not None and fmt not in ("text", "json"):
            from compat_service.domain.errors import InvalidRequestError

            raise InvalidRequestError(f"--format {fmt!r} is not an output format", hint="use --json (or --format json)")
        diagnosis = run_doctor(site_packages=site_packages, database=database, matrix_path=matrix_path,
                               fmt="json" if as_json or fmt == "json" else "text")
    raise typer.Exit(0 if diagnosis else 1)


def installed_versions(site_packages: Path | None) -> tuple[dict[str, str | None], InstalledEnvironment]:
    """torch and its companions' versions, and the environment facts collect_env reports (no torch import)."""
    from compat_service.domain.install_environment import (
        InstalledEnvironment,
        is_relevant,
        normalise_name,
        torch_build_constants,
        wheel_tags,
    )
    from probes.host.facts import glibc_version

    found: dict[str, str | None] = dict.fromkeys(PACKAGES)
    relevant: dict[str, str] = {}
    tags: tuple[str, ...] = ()
    build: dict[str, object] = {}
    for dist in _distributions(site_packages):
        name = normalise_name(dist.metadata["Name"] or "")
        if is_relevant(name):
            relevant.setdefault(name, dist.version)
        if name in found and found[name] is None:
            found[name] = dist.version
            if name == "torch":
                tags = wheel_tags(_read(dist, "WHEEL"))
                build = torch_build_constants(_read_located(dist, "torch/version.py"))
    return found, InstalledEnvironment(glibc=glibc_version(), wheel_tags=tags, torch_build=build, packages=relevant)


def _distributions(site_packages: Path | None) -> Iterable[Any]:
    """The installed distributions of ``site_packages`` (this environment's when None)."""
    from importlib import metadata

    from compat_service.domain.errors import InvalidRequestError

    if site_packages is None:
        return metadata.distributions()
    if not site_packages.is_dir():
        raise InvalidRequestError(
            f"--site-packages {site_packages} is not a directory",
            hint="give the site-packages directory of the environment to check",
        )
    return metadata.distributions(path=[str(site_packages)])


def _read(dist, name: str) -> str | None:
    try:
        return dist.read_text(name)
    except OSError:
        return None


def _read_located(dist, relpath: str) -> str | None:
    try:
        return Path(str(dist.locate_file(relpath))).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _checked_host(host: HostFacts) -> HostFacts:
    """Refuse an ACCELENV_BACKEND that resolve would not take (say so, naming the variable), and read a
    build label there (cu126) as its family, as host detection reports it."""
    import dataclasses
    import os

    from compat_service.domain.backends import REQUEST_FAMILIES as FAMILIES
    from compat_service.domain.errors import AccelenvError, Cause, InvalidRequestError
    from compat_service.domain.resolver.request import parse_backend
    from probes.host import facts as host_facts

    name = host_facts.BACKEND_OVERRIDE_ENV
    forced = os.environ.get(name)
    if not forced:
        return host
    try:
        family = parse_backend(forced).family  # None for "auto": detection, which the variable replaces
    except AccelenvError:
        family = None
    if family is None:
        raise InvalidRequestError(
            f"{name}={forced!r} is not a backend",
            hint=f"set it to cpu, a build label (cu126, rocm6.4, xpu) or a family ({', '.join(FAMILIES)}), "
            f"or unset {name} to detect this host",
            causes=[Cause(constraint="a backend `accelenv resolve --backend` takes", origin=f"environment: {name}")],
        )
    return dataclasses.replace(host, backend=family)


def detect_host_facts() -> HostFacts:
    """This host, detected by probes.host.facts, as the description the domain's diagnosis takes."""
    from compat_service.domain.host import HostFacts
    from probes.host import facts as host_facts

    return HostFacts.from_detected(host_facts.detect_host())


def run_doctor(*, site_packages: Path | None, database: str | None, matrix_path: Path | None, fmt: str) -> bool:
    from compat_service.domain.diagnosis import Installed, diagnose
    from compat_service.domain.install_environment import environment_findings
    from compat_service.domain.matrix.loading.snapshot import load_matrix_cached

    host = _checked_host(detect_host_facts())
    versions, environment = installed_versions(site_packages)
    matrix = load_matrix_cached(matrix_path)
    evidence = None
    if database:
        from compat_service.db.evidence.lookup import open_database_evidence

        evidence = open_database_evidence(database, gpu_arch=host.gpu_arch)

    def resolved(torch_version: str) -> str:
        """`accelenv resolve` for this host, as a pip command (raises its AccelenvError)."""
        from compat_service.domain.resolver.install_formats import render
        from compat_service.domain.resolver.request import ResolveRequest
        from compat_service.domain.resolver.stages import resolve

        request = ResolveRequest.for_host(host, torch=torch_version)
        # the commands alone: the finding says why, and resolve's `# warning:` lines would split the fix
        text = render(resolve(request, matrix, evidence), "pip")
        return "\n".join(line for line in text.splitlines() if not line.startswith("#")).strip()

    def fix_command(torch_version: str | None) -> str | None:
        """What to install on this host: a build of the installed release, else (none works here) what
        `accelenv resolve` picks for this host instead."""
        from compat_service.domain.errors import AccelenvError

        def no_install(err: AccelenvError) -> str:
            return err.message + (f" ({err.hint})" if err.hint else "")

        prefix = ""
        try:
            command = resolved(torch_version or "latest")
        except AccelenvError as err:
            if torch_version is None:
                return f"`accelenv resolve` finds no install for this host: {no_install(err)}"
            try:
                command = resolved("latest")
            except AccelenvError as newest:
                return (f"no build of torch {torch_version} works here: {no_install(err)}; and "
                        f"`accelenv resolve` finds no install for this host either: {no_install(newest)}")
            prefix = f"no build of torch {torch_version} works here ({err.message}); install instead:\n"
        # pip counts an installed 2.13.0+cpu as satisfying torch==2.13.0: remove the wrong build first
        installed = [name for name in PACKAGES if versions[name] is not None]
        return prefix + (f"pip uninstall -y {' '.join(installed)}\n" if installed else "") + command

    result = diagnose(
        Installed(torch=versions["torch"], companions={k: versions[k] for k in PACKAGES[1:]}),
        host, matrix, evidence=evidence, fix_command=fix_command,
    )
    if versions["torch"] is not None:
        result.findings.extend(environment_findings(environment, os_name=host.os, build=result.build))
        result.findings.extend(_stack_findings(site_packages, versions, host, matrix, matrix_path))
    _render(result, host, environment, fmt)
    return result.ok


def _stack_findings(site_packages: Path | None, versions: dict[str, str | None], host: HostFacts, matrix: Any,
                    matrix_path: Path | None) -> list[Any]:
    """An installed ecosystem package (vllm, xformers, ...) whose torch requirement the installed torch breaks,
    with the command that repairs it: the package release that fits the installed torch, else the stack of the
    installed release (`accelenv resolve --with NAME==X`)."""
    from compat_service.domain.diagnosis import Finding
    from compat_service.domain.stacks.catalog import load_catalog
    from compat_service.domain.stacks.doctor import stack_issues

    catalog = load_catalog(matrix_path)
    installed = _installed_stack(site_packages, versions, set(catalog.names()))
    platform = f"{host.os}-{host.arch}"
    findings = []
    for issue in stack_issues(installed, catalog, platform, host.python):
        fix = None
        if issue.severity == "error":
            fix = _stack_fix(issue, (versions["torch"] or "").split("+")[0], host, matrix, catalog)
        severity = "error" if issue.severity == "error" else "warning"
        findings.append(Finding("stack", severity, issue.message, fix))  # type: ignore[arg-type]
    return findings


def _installed_stack(
    site_packages: Path | None, versions: dict[str, str | None], wanted: set[str]
) -> dict[str, str | None]:
    """torch and its companions' versions, and those of the installed ecosystem packages in ``wanted``."""
    from importlib import metadata

    from compat_service.domain.install_environment import normalise_name

    installed: dict[str, str | None] = dict(versions)
    paths = [str(site_packages)] if site_packages is not None else None
    for dist in metadata.distributions(path=paths) if paths else metadata.distributions():
        name = normalise_name(dist.metadata["Name"] or "")
        if name in wanted:
            installed.setdefault(name, dist.version)
    return installed


def _stack_fix(issue: Any, torch: str, host: HostFacts, matrix: Any, catalog: Any) -> str:
    """The command that repairs a broken package: its release that fits the installed torch, else the stack of
    the installed release."""
    from compat_service.domain.errors import AccelenvError

    try:
        return (f"keep torch {torch}: " + _stack_commands(host, matrix, catalog, torch, issue.package)).replace(
            ": pip", ":\npip", 1
        )
    except AccelenvError:
        pinned = f"{issue.package}=={issue.version}"
        try:
            return (f"no {issue.package} release fits torch {torch}; install the stack of "
                    f"{issue.package} {issue.version}:\n" + _stack_commands(host, matrix, catalog, "latest", pinned))
        except AccelenvError as err:
            return f"`accelenv resolve --with {pinned}` finds no stack here: {err.message}"


def _stack_commands(host: HostFacts, matrix: Any, catalog: Any, torch: str, package: str) -> str:
    """The pip commands of the stack resolve gives for ``package`` with ``torch`` on this host."""
    from compat_service.domain.resolver.install_formats import render
    from compat_service.domain.resolver.request import ResolveRequest
    from compat_service.domain.stacks.resolve import resolve_stack

    request = ResolveRequest.for_host(host, torch=torch, with_=[package])
    text = render(resolve_stack(request, matrix, None, catalog), "pip")
    return "\n".join(line for line in text.splitlines() if not line.startswith("#")).strip()


def _host_line(host: HostFacts, environment: InstalledEnvironment) -> str:
    return (f"host: {host.os}-{host.arch}, Python {host.python}, {host.backend}"
            + (f", driver {host.driver}" if host.driver else "") + (f", {host.gpu_arch}" if host.gpu_arch else "")
            + (f", glibc {environment.glibc}" if environment.glibc else ""))


def _render(result, host, environment: InstalledEnvironment, fmt: str) -> None:
    import json
    import sys

    if fmt == "json":
        payload = {
            "ok": result.ok,
            "torch": result.torch_version,
            "build": result.build,
            "host": {"os": host.os, "arch": host.arch, "python": host.python, "backend": host.backend,
                     "driver": host.driver, "gpu_arch": host.gpu_arch},
            "environment": environment.to_json(),
            "findings": [f.__dict__ for f in result.findings],
        }
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return
    marks = {"ok": "ok  ", "warning": "warn", "error": "FAIL"}
    out = sys.stdout
    out.write(_host_line(host, environment) + "\n")
    if environment.packages:
        out.write("packages: " + ", ".join(f"{k} {v}" for k, v in sorted(environment.packages.items())) + "\n")
    for f in result.findings:
        out.write(f"[{marks[f.severity]}] {f.check}: {f.message}\n")
        if f.fix and f.severity != "ok":
            out.write("       fix: " + f.fix.replace("\n", "\n            ") + "\n")
    out.write("\nall good\n" if result.ok else "\nproblems found\n")
