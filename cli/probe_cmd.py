"""`accelenv probe` (run the probe suite in a target interpreter) and `accelenv report submit`.

The probe runs as a subprocess: the single-file bundle is written to a temporary directory and started
with ``PYTHON -I bundle`` (default: this interpreter), so the target needs only torch. Progress lines and
the summary table go to stderr as they happen; the report is JSON in ``--output`` or on stdout. Exit
code: 0 all checks passed/skipped/unsupported, 1 any failed/timeout/crashed/error, 3 with ``--strict`` when
some check is unsupported and none went wrong, else the error's code.

`--submit URL --token T` posts the report; when the server cannot be reached the report goes to the
spool (see cli/report_spool.py) and `accelenv report submit` sends it later.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, List, Optional

import typer

ALL_GROUPS = "detect,smoke,ops,opinfo,compile,runtime,allocator,amp,distributed"
PROBE_EXIT_UNSUPPORTED = 3  # the probe's --strict answer: nothing failed, something is unsupported
REFDEV_FAULTS_ENV = "ACCELENV_REFDEV_FAULTS"
_INJECT = re.compile(r"^[a-z][a-z0-9_]*(?::[A-Za-z0-9_.:*\-\[\]]+)?$")


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the root app."""
    app.command("probe", help="Run the probe suite on this host (or another interpreter) and write a report.")(
        probe_command
    )
    report_app = typer.Typer(help="Probe reports kept locally.", no_args_is_help=True)
    report_app.command("submit", help="Send spooled reports to the service; keep what fails.")(report_submit_command)
    app.add_typer(report_app, name="report")


def probe_command(
    device: str = typer.Option("auto", "--device", help="auto, cpu, cuda[:N], mps, xpu or a PrivateUse1 name (npu, refdev)"),
    checks: str = typer.Option(ALL_GROUPS, "--checks", help="comma-separated groups"),
    output: Optional[Path] = typer.Option(None, "--output", help="write the report here (default: stdout)"),
    submit_url: Optional[str] = typer.Option(None, "--submit", help="post the report to this service URL"),
    token: Optional[str] = typer.Option(None, "--token", envvar="ACCELENV_TOKEN", help="API token for --submit"),
    timeout: float = typer.Option(120.0, "--timeout", help="seconds each check may take"),
    python: Optional[str] = typer.Option(None, "--python", help="interpreter to probe (default: this one)"),
    inject: Optional[List[str]] = typer.Option(None, "--inject", help="refdev fault KIND[:TARGET] (repeatable)"),
    bundle: Optional[Path] = typer.Option(None, "--bundle", help="only write the single-file probe here"),
    quiet: bool = typer.Option(False, "--quiet", help="no progress lines"),
    deep: bool = typer.Option(False, "--deep", help="opinfo: every sample input, not only the first per op and dtype"),
    strict: bool = typer.Option(False, "--strict", help="exit 3 when a check is unsupported (and nothing failed)"),
) -> None:
    from cli.error_render import guarded

    with guarded():
        if bundle is not None:
            from probes.bundle import write_bundle

            write_bundle(str(bundle))
            sys.stderr.write(f"wrote {bundle}: run it with `python -I {bundle.name}` where torch is installed\n")
            return
        code = run_probe(device=device, checks=checks, output=output, submit_url=submit_url, token=token,
                         timeout=timeout, python=python, inject=inject or [], quiet=quiet, deep=deep, strict=strict)
    raise typer.Exit(code)


def _invalid(message: str, hint: str, flag: str, value: object) -> Exception:
    from compat_service.domain.errors import Cause, InvalidRequestError

    return InvalidRequestError(message, hint=hint, causes=[Cause(constraint=f"{flag} {value}", origin=f"request: {flag}")])


def _validate(device: str, checks: str, timeout: float, python: str, inject: list[str], submit_url: str | None,
              token: str | None) -> None:
    from probes.checks import GROUPS
    from probes.device_activation import DeviceError, parse_device

    try:
        parse_device(device)
    except DeviceError as exc:
        raise _invalid(str(exc), "e.g. --device cuda:0", "--device", device) from None
    groups = [g.strip() for g in checks.split(",") if g.strip()]
    unknown = [g for g in groups if g not in GROUPS]
    if unknown or not groups:
        raise _invalid(f"unknown check group(s): {', '.join(unknown) or '(none given)'}",
                       f"choose from {','.join(GROUPS)}", "--checks", checks)
    if not timeout > 0:
        raise _invalid(f"--timeout must be a positive number of seconds, got {timeout}", "e.g. --timeout 60",
                       "--timeout", timeout)
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise _invalid(f"--python {python} is not an executable file", "pass the interpreter that has torch, "
                       "e.g. --python /opt/venv/bin/python", "--python", python)
    for item in inject:
        if not _INJECT.match(item):
            raise _invalid(f"--inject {item!r} is not KIND[:TARGET]", "e.g. --inject missing:aten::mm",
                           "--inject", item)
    if inject:
        from probes.refdev.faults import parse_faults  # stdlib only: kinds and syntax, not op existence

        try:
            parse_faults(",".join(inject))
        except ValueError as exc:
            raise _invalid(str(exc), "e.g. --inject missing:aten::mm --inject leak", "--inject",
                           ",".join(inject)) from None
    if submit_url and not token:
        raise _invalid("--submit needs an API token", "pass --token T or set ACCELENV_TOKEN", "--submit", submit_url)


def run_probe(*, device: str, checks: str, output: Path | None, submit_url: str | None, token: str | None,
              timeout: float, python: str | None, inject: list[str], quiet: bool, deep: bool = False,
              strict: bool = False) -> int:
    """Run the probe in the target interpreter; returns the probe's exit code (0 ok, 1 something failed,
    3 under ``strict`` when something is unsupported)."""
    from compat_service.domain.errors import AccelenvError

    python = python or sys.executable
    _validate(device, checks, timeout, python, inject, submit_url, token)
    from probes.bundle import BUNDLE_NAME, write_bundle

    with tempfile.TemporaryDirectory(prefix="accelenv-probe-") as workdir:
        bundle_path = os.path.join(workdir, BUNDLE_NAME)
        write_bundle(bundle_path)
        report_path = os.path.join(workdir, "report.json")
        argv = [python, "-I", bundle_path, "--device", device, "--checks", checks, "--timeout", str(timeout),
                "--output", report_path] + (["--quiet"] if quiet else []) + (["--deep"] if deep else []) + \
            (["--strict"] if strict else [])
        env = dict(os.environ)
        if inject:
            env[REFDEV_FAULTS_ENV] = ",".join(inject)
        try:
            proc = subprocess.run(argv, env=env, cwd=workdir, stdin=subprocess.DEVNULL)
        except OSError as exc:
            raise _invalid(f"cannot start {python}: {exc.strerror or exc}", "check --python", "--python", python) from None
        if proc.returncode == 2:  # the probe rejected its device settings (e.g. an --inject op); it said why
            raise _invalid(f"the probe in {python} rejected its settings (its message above says which)",
                           "fix the --inject faults (or ACCELENV_REFDEV_* variables) it names", "--inject",
                           ",".join(inject) or os.environ.get(REFDEV_FAULTS_ENV, "(none)"))
        if proc.returncode not in (0, 1, PROBE_EXIT_UNSUPPORTED) or not os.path.exists(report_path):
            raise AccelenvError(
                f"the probe in {python} ended with exit code {proc.returncode} and wrote no report",
                hint="run it by hand to see why: accelenv probe --bundle accelenv_probe.py, then "
                     f"{python} -I accelenv_probe.py",
            )
        text = Path(report_path).read_text(encoding="utf-8")
    report = _validated(text)
    if output is not None:
        output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    if submit_url:
        _submit_or_spool(report, submit_url, token or "")
    return proc.returncode


def _validated(text: str) -> dict[str, Any]:
    from compat_service.domain.errors import Cause, ReportInvalidError
    from compat_service.domain.report import ProbeReport
    from pydantic import ValidationError

    try:
        ProbeReport.model_validate_json(text)
    except ValidationError as exc:
        causes = [Cause(constraint=str(e["msg"]), origin="report " + ".".join(str(p) for p in e["loc"]))
                  for e in exc.errors(include_url=False)[:20]]
        raise ReportInvalidError("the probe wrote a report that does not match schema v1", causes=causes,
                                 hint="this is a probe bug: please report it with the probe's output") from None
    return json.loads(text)


def _submit_or_spool(report: dict[str, Any], server: str, token: str) -> None:
    from cli import report_spool
    from compat_service.domain.errors import ServerUnreachableError

    body = json.dumps(report).encode("utf-8")
    try:
        status = report_spool.submit(server, token, body)
    except ServerUnreachableError as err:
        path = report_spool.spool(report)
        sys.stderr.write(f"warning: {err.message}\nthe report is kept at {path}; send it later with "
                         "`accelenv report submit --server URL`\n")
        return
    except Exception:
        report_spool.spool(report)
        raise
    word = "stored" if status == 201 else "already stored"
    sys.stderr.write(f"submitted report {report['report_id']} to {server} ({word})\n")


def report_submit_command(
    server: Optional[str] = typer.Option(None, "--server", envvar="ACCELENV_SERVER", help="the service URL"),
    token: Optional[str] = typer.Option(None, "--token", envvar="ACCELENV_TOKEN", help="API token (scope 'report')"),
) -> None:
    from cli import report_spool
    from cli.error_render import guarded

    with guarded():
        if not server:
            raise _invalid("no server to send to", "pass --server URL or set ACCELENV_SERVER", "--server", "(unset)")
        if not token:
            raise _invalid("no API token", "pass --token T or set ACCELENV_TOKEN", "--token", "(unset)")
        directory = report_spool.spool_dir()
        if not report_spool.spooled(directory):
            sys.stderr.write(f"nothing spooled in {directory}\n")
            return
        result = report_spool.submit_spooled(server, token, directory)
        sys.stderr.write(f"sent {len(result.sent)} report(s), kept {len(result.kept)} in {directory}\n")
        for path, err in result.kept:
            sys.stderr.write(f"  kept {path.name}: {err.code}: {err.message}\n")
        if result.kept:
            raise result.kept[0][1]
