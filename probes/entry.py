"""Command line of the probe itself: ``python -m probes`` or ``python -I accelenv_probe.py``.

Exit codes: 0 every check passed, skipped or unsupported; 1 any check failed, timed out, crashed or
errored; 2 bad arguments or device settings (a bad ``ACCELENV_REFDEV_FAULTS``), with no report written.
Progress goes to stderr, one line per check; the report is JSON on stdout or in ``--output``.
"""

import argparse
import json
import os
import sys

from probes import checks, device_activation, fingerprint, report_assembly, runner

DEFAULT_TIMEOUT_S = 120.0


def _groups(text):
    groups = [g.strip() for g in text.split(",") if g.strip()]
    unknown = [g for g in groups if g not in checks.GROUPS]
    if unknown or not groups:
        raise argparse.ArgumentTypeError("unknown check group(s) %s; choose from %s"
                                         % (", ".join(unknown) or "(none)", ",".join(checks.GROUPS)))
    return groups


def _device(text):
    try:
        device_activation.parse_device(text)
    except device_activation.DeviceError as exc:
        raise argparse.ArgumentTypeError(str(exc))
    return text


def _timeout(text):
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise argparse.ArgumentTypeError("timeout must be a positive number of seconds, got %r" % text)
    return value


def parser():
    p = argparse.ArgumentParser(prog="accelenv-probe", description="Probe which PyTorch works on this host.")
    p.add_argument("--device", type=_device, default="auto", help="auto|cpu|cuda[:N]|mps|xpu|<PrivateUse1 name>")
    p.add_argument("--checks", type=_groups, default=list(checks.GROUPS), help=",".join(checks.GROUPS))
    p.add_argument("--output", help="write the report here instead of stdout")
    p.add_argument("--timeout", type=_timeout, default=DEFAULT_TIMEOUT_S, help="seconds per check")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--only-file", help=argparse.SUPPRESS)
    p.add_argument("--no-environment", action="store_true", help=argparse.SUPPRESS)
    return p


def _progress(quiet):
    def show(entry, done, total):
        if not quiet:
            width = len(str(total))
            sys.stderr.write("[%*d/%d] %-11s %s (%.2fs)\n" % (width, done, total, entry["status"], entry["id"],
                                                               entry["duration_s"]))
            sys.stderr.flush()

    return show


def _run_worker(args):
    from probes import worker

    only = None
    if args.only_file:
        with open(args.only_file) as handle:
            only = set(json.load(handle))
    return worker.main(args.device, args.checks, only=only, send_environment=not args.no_environment)


def main(argv=None):
    args = parser().parse_args(argv)
    if args.worker:
        return _run_worker(args)
    groups = [g for g in checks.GROUPS if g in args.checks]
    probe = runner.Runner(runner.default_launch(), args.device, groups, args.timeout, _progress(args.quiet))
    hello, entries = probe.run()
    if probe.usage_error:
        sys.stderr.write("accelenv-probe: error: %s\n" % probe.usage_error)
        return 2
    if probe.fatal:
        entries = [checks.result_entry("detect.torch_build", "detect", "error", 0.0, probe.fatal)]
    if hello and hello.get("environment"):
        environment, devices = hello["environment"], hello.get("devices", [])
    else:
        requested = args.device.split(":")[0]
        environment = report_assembly.fallback_environment(requested if requested != "auto" else "cpu",
                                                           probe.fatal or "the probe worker never described torch")
        devices = []
    digest, stable = fingerprint.host_fingerprint()
    report = report_assembly.assemble(environment, devices, entries, digest, stable)
    text = json.dumps(report, indent=2, default=str)
    if args.output:
        tmp = args.output + ".tmp"
        with open(tmp, "w") as handle:
            handle.write(text + "\n")
        os.replace(tmp, args.output)
    else:
        sys.stdout.write(text + "\n")
    if not args.quiet:
        sys.stderr.write("\n" + report_assembly.render_summary(report) + "\n")
    return 0 if report["summary"]["ok"] else 1
