"""`accelenv probe` (run the probe suite in a target interpreter) and `accelenv report submit`.

The probe runs as a subprocess: the single-file bundle is written to a temporary directory and started
with ``PYTHON -I bundle`` (default: this interpreter), so the target needs only torch. Progress lines and
the summary table go to stderr as they happen; the report is JSON in ``--output`` or on stdout (with
``--json``: a summary object on stdout, carrying the report when there is no ``--output``). ``--output``
is checked before the probe runs; if it cannot be written afterwards the report goes to the spool and the
error says where. Exit code: 0 all checks passed/skipped/unsupported, 1 any failed/timeout/crashed/error,
3 with ``--strict`` when some check is unsupported and none went wrong, else the error's code.

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
from typing import Any

import typer

from cli.terminal_text import say
from probes.checks.registry import DEFAULT as _DEFAULT_GROUPS  # stdlib only: the one group registry

ALL_GROUPS = ",".join(_DEFAULT_GROUPS)
PROBE_EXIT_UNSUPPORTED = 3  # the probe's --strict answer: nothing failed, something is unsupported
REFDEV_FAULTS_ENV = "ACCELENV_REFDEV_FAULTS"
_INJECT = re.compile(r"^[a-z][a-z0-9_]*(?::[A-Za-z0-9_.:*\-\[\]]+)?$")


def register(app: typer.Typer) -> None:
    """Attach this module's commands to the root app."""
    app.command("probe", help="Run the probe suite on this host (or another interpreter) and write a report.")(
        probe_command
    )
    report_app = typer.Typer(help="Probe reports kept locally.", no_args_is_help=True)
    report_app.command(
        "submit", help="Send saved reports (or the spool) to the service; move refused ones aside."
    )(report_submit_command)
    app.add_typer(report_app, name="report")


def probe_command(
    device: str = typer.Option(
        "auto", "--device", help="auto, cpu, cuda[:N], mps, xpu or a PrivateUse1 name (npu, refdev)"
    ),
    checks: str = typer.Option(ALL_GROUPS, "--checks", help="comma-separated groups"),
    output: Path | None = typer.Option(None, "--output", help="write the report here (default: stdout)"),
    submit_url: str | None = typer.Option(None, "--submit", help="post the report to this service URL"),
    token: str | None = typer.Option(None, "--token", envvar="ACCELENV_TOKEN", help="API token for --submit"),
    timeout: float = typer.Option(120.0, "--timeout", help="seconds each check may take"),
    python: str | None = typer.Option(None, "--python", help="interpreter to probe (default: this one)"),
    inject: list[str] | None = typer.Option(None, "--inject", help="refdev fault KIND[:TARGET] (repeatable)"),
    bundle: Path | None = typer.Option(None, "--bundle", help="only write the single-file probe here (a file, "
                                          "or a directory to hold accelenv_probe.py)"),
    quiet: bool = typer.Option(False, "--quiet", help="no progress lines"),
    deep: bool = typer.Option(False, "--deep", help="opinfo: every reference input, not the first sample only"),
    strict: bool = typer.Option(False, "--strict", help="exit 3 when a check is unsupported (and nothing failed)"),
    certify: bool = typer.Option(False, "--certify", help="score the run on the measurable rows of the PyTorch "
                                 "Compute Platform Quality Levels rubric (report.certification)"),
    as_json: bool = typer.Option(False, "--json", help="print a JSON summary on stdout (with the report when "
                                 "there is no --output); errors as JSON too"),
) -> None:
    from cli.error_render import guarded

    with guarded(as_json=as_json):
        if bundle is not None:
            target = write_bundle_file(bundle)
            if as_json:
                from cli.error_render import dump_json

                dump_json({"bundle": str(target)})
            say(f"wrote {target}: run it with `python -I {target.name}` where torch is installed")
            return
        code = run_probe(device=device, checks=checks, output=output, submit_url=submit_url, token=token,
                         timeout=timeout, python=python, inject=inject or [], quiet=quiet, as_json=as_json,
                         deep=deep, strict=strict, certify=certify)
    raise typer.Exit(code)


def write_bundle_file(bundle: Path) -> Path:
    """Write the single-file probe to ``bundle`` (or into it, when it is a directory); a path that cannot
    be written is an invalid request naming it, and nothing is left behind."""
    from probes.harness.bundle import BUNDLE_NAME, write_bundle

    target = bundle / BUNDLE_NAME if bundle.is_dir() else bundle
    _require_writable(target, "--bundle")
    try:
        write_bundle(str(target))
    except OSError as exc:
        raise _invalid(f"cannot write the probe bundle to {target}: {exc.strerror or exc}",
                       "choose a writable file or directory for --bundle", "--bundle", bundle) from None
    return target


def _require_writable(path: Path, flag: str) -> None:
    """Refuse, before any work, a path that cannot be written as a new regular file: a directory, a missing
    or read-only folder, and anything that exists there but a regular file (a symbolic link, a FIFO, a
    device): the report is never written through a link (probes often run as root) or into a special file."""
    reason = _not_a_report_file(path)
    if reason is not None:
        raise _invalid(f"{flag} {path} {reason}", f"give a path to a regular file (or a new one), e.g. "
                       f"{flag} {path.parent / 'report.json'}", flag, path)
    folder = path.parent
    if not folder.is_dir():
        raise _invalid(f"{flag} {path}: the folder {folder} does not exist",
                       f"create it first (mkdir -p {folder}) or choose another {flag}", flag, path)
    writable = os.access(path, os.W_OK) if path.exists() else os.access(folder, os.W_OK | os.X_OK)
    if not writable:
        raise _invalid(f"{flag} {path} is not writable", f"choose a file in a folder you can write to for {flag}",
                       flag, path)


def _not_a_report_file(path: Path) -> str | None:
    """Why ``path`` cannot be replaced by a report (None when it is absent or a regular file)."""
    import stat

    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be examined ({exc.strerror or exc})"
    if stat.S_ISLNK(mode):
        return "is a symbolic link (the report is never written through one)"
    if stat.S_ISDIR(mode):
        return "is a directory"
    if not stat.S_ISREG(mode):
        return "is not a regular file (a FIFO, a device or a socket)"
    return None


def _invalid(message: str, hint: str, flag: str, value: object) -> Exception:
    from compat_service.domain.errors import Cause, InvalidRequestError

    cause = Cause(constraint=f"{flag} {value}", origin=f"request: {flag}")
    return InvalidRequestError(message, hint=hint, causes=[cause])


def _validate(device: str, checks: str, timeout: float, python: str, inject: list[str], submit_url: str | None,
              token: str | None, output: Path | None) -> None:
    from probes.checks.device_activation import DeviceError, parse_device
    from probes.checks.registry import NAMES as GROUPS

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
    if inject and device.split(":")[0] != "refdev":
        raise _invalid(f"--inject works only with --device refdev (the reference backend), not {device}",
                       "add --device refdev, or drop --inject", "--inject", ",".join(inject))
    if inject:
        from probes.refdev.faults import parse_faults  # stdlib only: kinds and syntax, not op existence

        try:
            parse_faults(",".join(inject))
        except ValueError as exc:
            raise _invalid(str(exc), "e.g. --inject missing:aten::mm --inject leak", "--inject",
                           ",".join(inject)) from None
    if submit_url and not token:
        raise _invalid("--submit needs an API token", "pass --token T or set ACCELENV_TOKEN", "--submit", submit_url)
    if output is not None:
        _require_writable(output, "--output")


def run_probe(*, device: str, checks: str, output: Path | None, submit_url: str | None, token: str | None,
              timeout: float, python: str | None, inject: list[str], quiet: bool, as_json: bool = False,
              deep: bool = False, strict: bool = False, certify: bool = False) -> int:
    """Run the probe in the target interpreter; returns the probe's exit code (0 ok, 1 something failed,
    3 under ``strict`` when something is unsupported).

    The finished report is never lost: when ``output`` cannot be written after the run (the disk filled,
    the folder went away), it is kept in the spool and the error says where."""
    from compat_service.domain.errors import AccelenvError

    python = python or sys.executable
    _validate(device, checks, timeout, python, inject, submit_url, token, output)
    from probes.harness.bundle import BUNDLE_NAME, write_bundle

    with tempfile.TemporaryDirectory(prefix="accelenv-probe-") as workdir:
        bundle_path = os.path.join(workdir, BUNDLE_NAME)
        write_bundle(bundle_path)
        report_path = os.path.join(workdir, "report.json")
        argv = [python, "-I", bundle_path, "--device", device, "--checks", checks, "--timeout", str(timeout),
                "--output", report_path] + (["--quiet"] if quiet else []) + (["--deep"] if deep else []) + \
            (["--strict"] if strict else []) + (["--certify"] if certify else [])
        env = dict(os.environ)
        if inject:
            env[REFDEV_FAULTS_ENV] = ",".join(inject)
        try:
            proc = subprocess.run(argv, env=env, cwd=workdir, stdin=subprocess.DEVNULL)
        except OSError as exc:
            message = f"cannot start {python}: {exc.strerror or exc}"
            raise _invalid(message, "check --python", "--python", python) from None
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
    unwritten = _write_report(text, output) if output is not None else None
    if output is None and not as_json:
        sys.stdout.write(text)
    submitted = _submit_or_spool(report, submit_url, token or "") if submit_url else None
    if unwritten is not None:
        from cli import report_spool

        kept = report_spool.spool(report)
        raise _invalid(f"the probe finished but its report could not be written to {output}: {unwritten}; "
                       f"the report is kept at {kept}",
                       f"copy it from {kept}, or send it with `accelenv report submit --server URL`",
                       "--output", output)
    if as_json:
        from cli.error_render import dump_json

        dump_json(_summary(report, output, submitted, proc.returncode))
    return proc.returncode


def _write_report(text: str, output: Path) -> str | None:
    """Write the report to ``output``: a new temporary file in its folder (O_EXCL | O_NOFOLLOW), synced,
    then renamed over ``output``, which is checked again just before (it must still be absent or a regular
    file). The reason when that failed (the report is then spooled)."""
    reason = _not_a_report_file(output)
    if reason is not None:
        return f"it {reason}"
    try:
        fd, temporary = tempfile.mkstemp(dir=output.parent, prefix=f".{output.name}.", suffix=".tmp")
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # what a plain open() would have created
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        reason = _not_a_report_file(output)
        if reason is not None:
            return f"it {reason}"
        os.replace(temporary, output)
    except OSError as exc:
        return exc.strerror or str(exc)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return None


def _summary(report: dict[str, Any], output: Path | None, submitted: str | None, code: int) -> dict[str, Any]:
    """What `accelenv probe --json` prints: the outcome a script acts on, and the report when not in a file."""
    from probes.checks.registry import is_failing

    failing = [{"id": c["id"], "status": c["status"], "detail": c.get("detail")}
               for c in report["checks"] if is_failing(c["group"], c["status"])]
    payload: dict[str, Any] = {
        "report_id": report["report_id"],
        "exit_code": code,
        "ok": report["summary"]["ok"],
        "counts": report["summary"]["counts"],
        "failing": failing,
        "perf": report.get("perf"),
        "output": str(output) if output is not None else None,
        "submitted": submitted,
    }
    if output is None:
        payload["report"] = report
    return payload


def _validated(text: str) -> dict[str, Any]:
    from pydantic import ValidationError

    from compat_service.domain.errors import Cause, ReportInvalidError
    from compat_service.domain.evidence.report import ProbeReport

    try:
        data = json.loads(text)  # parsed once: validated from it, and returned
        ProbeReport.model_validate(data)
    except ValueError as exc:
        if not isinstance(exc, ValidationError):
            raise ReportInvalidError(f"the probe wrote a report that is not JSON: {exc}",
                                     hint="this is a probe bug: please report it with the probe's output") from None
        causes = [Cause(constraint=str(e["msg"]), origin="report " + ".".join(str(p) for p in e["loc"]))
                  for e in exc.errors(include_url=False)[:20]]
        raise ReportInvalidError("the probe wrote a report that does not match schema v1", causes=causes,
                                 hint="this is a probe bug: please report it with the probe's output") from None
    return data


def _submit_or_spool(report: dict[str, Any], server: str, token: str) -> str:
    """Post the report (or spool it when the server is unreachable); says which: stored, exists, spooled."""
    from cli import report_spool
    from cli.service_client import ServiceClient
    from compat_service.domain.errors import ServerUnreachableError

    body = json.dumps(report).encode("utf-8")
    try:
        status = ServiceClient(server, token=token).post_report(body)
    except ServerUnreachableError as err:
        path = report_spool.spool(report)
        say(f"warning: {err.message}")
        say(f"the report is kept at {path}; send it later with `accelenv report submit --server URL`")
        return "spooled"
    except Exception:
        report_spool.spool(report)
        raise
    word = "stored" if status == 201 else "already stored"
    say(f"submitted report {report['report_id']} to {server} ({word})")
    return "stored" if status == 201 else "exists"


def report_submit_command(
    files: list[Path] | None = typer.Argument(None, help="saved reports to send (default: the spool)",
                                                 show_default=False),
    server: str | None = typer.Option(None, "--server", envvar="ACCELENV_SERVER", help="the service URL"),
    token: str | None = typer.Option(None, "--token", envvar="ACCELENV_TOKEN", help="API token (scope 'report')"),
    as_json: bool = typer.Option(False, "--json", help="print the outcome as JSON (sent, kept, moved)"),
) -> None:
    from cli import report_spool
    from cli.error_render import dump_json, guarded

    with guarded(as_json=as_json):
        if not server:
            raise _invalid("no server to send to", "pass --server URL or set ACCELENV_SERVER", "--server", "(unset)")
        if not token:
            raise _invalid("no API token", "pass --token T or set ACCELENV_TOKEN", "--token", "(unset)")
        if files:
            missing = [f for f in files if not f.is_file()]
            if missing:
                raise _invalid(f"{missing[0]} is not a report file", "name files `accelenv probe --output` wrote",
                               "FILE", str(missing[0]))
            result = report_spool.submit_paths(server, token, list(files))
            where = "the named files (left in place)"
        else:
            directory = report_spool.spool_dir()
            if not report_spool.spooled(directory):
                if as_json:
                    dump_json({"sent": [], "kept": [], "moved": [], "spool": str(directory)})
                else:
                    say(f"nothing spooled in {directory}")
                return
            result = report_spool.submit_spooled(server, token, directory)
            where = str(directory)
        headline = result.headline()
        if as_json:
            def entry(path: Path, err: Any) -> dict[str, Any]:
                return {"file": str(path), "code": err.code, "message": err.message}

            dump_json({"sent": [str(p) for p in result.sent], "kept": [entry(p, e) for p, e in result.kept],
                       "moved": [entry(p, e) for p, e in result.moved],
                       "error": headline.code if headline else None})
            if headline is not None:
                raise typer.Exit(headline.exit_code)
            return
        say(f"sent {len(result.sent)} report(s), kept {len(result.kept)} in {where}"
            + (f", moved {len(result.moved)} aside" if result.moved else ""))
        for path, err in result.kept:
            say(f"  kept {path.name}: {err.code}: {err.message}")
        for path, err in result.moved:
            say(f"  moved {path.name} to {path.parent} (reason in {path.stem}.reason.json): {err.code}: {err.message}")
        if headline is not None:
            raise headline
