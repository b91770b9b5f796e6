"""Command line of the probe itself: ``python -m probes`` or ``python -I accelenv_probe.py``.

Exit codes: 0 every check passed, skipped or unsupported (outside the required groups); 1 any check failed,
timed out, crashed or errored, or a smoke or models check is not passed-or-skipped (``registry.REQUIRED``: a
device that cannot train fails whatever else passed); 2 bad arguments or device settings (a bad
``ACCELENV_REFDEV_FAULTS``), with no report written; 3 under ``--strict`` when nothing went wrong but some
check is ``unsupported`` (a missing op, no collective backend, no device generator, ...).
Progress goes to stderr, one line per check; the report is JSON on stdout or in ``--output``.

The groups marked ``own_worker`` in ``probes.checks.registry`` (opinfo, compile, distributed) run in workers
of their own, at the same time as the others; the ``alone`` ones (perf) after them, by themselves, with every
core. The report lists every check in group order either way.
"""

import argparse
import json
import os
import sys
import threading
from typing import Any, List

from probes.checks import device_activation, dispatcher, registry
from probes.checks import outcome as checks
from probes.harness import certify, runner
from probes.harness import report as report_assembly
from probes.host import fingerprint

DEFAULT_TIMEOUT_S = 120.0
EXIT_UNSUPPORTED = 3
OPINFO_OPS_ENV = "ACCELENV_PROBE_OPINFO_OPS"  # the default of --opinfo-ops (the test suite bounds the list)


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
        raise argparse.ArgumentTypeError(str(exc)) from exc
    return text


def _patterns(text):
    patterns = [p.strip() for p in text.split(",") if p.strip()]
    if not patterns:
        raise argparse.ArgumentTypeError("give at least one OpInfo name pattern, e.g. add,mm,nn.functional.*")
    return patterns


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
    p.add_argument("--checks", type=_groups, default=list(registry.DEFAULT), help=",".join(checks.GROUPS))
    p.add_argument("--output", help="write the report here instead of stdout")
    p.add_argument("--timeout", type=_timeout, default=DEFAULT_TIMEOUT_S, help="seconds per check")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--deep", action="store_true",
                   help="opinfo: every reference input, not the first sample only")
    p.add_argument("--certify", action="store_true",
                   help="map the run onto the measurable rows of the PyTorch Compute Platform Quality Levels rubric "
                        "(report.certification, with the points and evidence per row)")
    p.add_argument("--strict", action="store_true",
                   help="exit %d when a check is unsupported (and nothing failed)" % EXIT_UNSUPPORTED)
    p.add_argument("--opinfo-ops", type=_patterns, default=None,
                   help="opinfo: only the OpInfos whose name matches one of these comma-separated patterns "
                        "(default: $%s, else every OpInfo)" % OPINFO_OPS_ENV)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--only-file", help=argparse.SUPPRESS)
    p.add_argument("--breadcrumb-file", help=argparse.SUPPRESS)
    p.add_argument("--blocked-file", help=argparse.SUPPRESS)
    p.add_argument("--no-environment", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--threads", type=int, default=None, help=argparse.SUPPRESS)
    # one rank of the distributed group's two-process checks (probes.checks.distributed)
    p.add_argument("--dist-rank", type=int, default=None, help=argparse.SUPPRESS)
    for flag in ("--dist-work", "--dist-backend", "--dist-tensor-device", "--dist-store", "--dist-out"):
        p.add_argument(flag, help=argparse.SUPPRESS)
    return p


class _Progress(object):
    """One progress line per check, numbered across the workers that run at the same time."""

    def __init__(self, quiet):
        self.quiet = quiet
        self.lock = threading.Lock()
        self.done = 0
        self.runners = []

    def total(self):
        planned = sum(len(r.plan) for r in self.runners if r.plan)
        return max(planned, self.done)

    def __call__(self, entry, _done=None, _total=None):
        if self.quiet:
            return
        with self.lock:
            self.done += 1
            total = self.total()
            width = len(str(total))
            sys.stderr.write("[%*d/%d] %-11s %s (%.2fs)\n" % (width, self.done, total, entry["status"], entry["id"],
                                                               entry["duration_s"]))
            sys.stderr.flush()


def _run_worker(args):
    from probes.harness import worker

    only = None
    if args.only_file:
        with open(args.only_file) as handle:
            only = set(json.load(handle))
    options = {"deep": args.deep, "opinfo_ops": args.opinfo_ops}
    return worker.main(args.device, args.checks, only=only, send_environment=not args.no_environment,
                       options=options, trail_file=args.breadcrumb_file, blocked_file=args.blocked_file,
                       threads=args.threads)


def _phases(groups):
    """Group lists, one per worker: the shared one first (it describes the environment), then one per own group."""
    shared = [g for g in groups if g not in registry.OWN_WORKER]
    phases = [shared] if shared else []
    return phases + [[g] for g in groups if g in registry.OWN_WORKER]


def worker_threads(workers, cpus=None, environ=None):
    """Intra-op threads for each of ``workers`` workers running at once: the cores shared out, at least one;
    None (torch's default) where the user chose with OMP_NUM_THREADS. With torch's default every worker
    takes every core, and on a small host they spin against each other: on 2 cores the OpInfo group took
    twice as long beside the compile group. The probe's tensors are small; no check needs more threads."""
    environ = os.environ if environ is None else environ
    if environ.get("OMP_NUM_THREADS", "").strip():
        return None
    cpus = cpus if cpus is not None else (os.cpu_count() or 1)
    return max(1, cpus // max(1, workers))


def _worker_flags(args, threads=None):
    flags = ["--deep"] if args.deep else []
    if args.opinfo_ops:
        flags += ["--opinfo-ops", ",".join(args.opinfo_ops)]
    if threads:
        flags += ["--threads", str(threads)]
    return flags


def _runners(args, launch, phases, together, progress, blocklist):
    """One Runner per phase: the phases run together share the cores, the ``alone`` ones get them all."""
    flags = _worker_flags(args, worker_threads(len(together)))
    return [runner.Runner(launch, args.device, phase, args.timeout, progress,
                          flags if phase in together else _worker_flags(args, worker_threads(1)),
                          describe=i == 0, blocklist=blocklist)
            for i, phase in enumerate(phases)]


def run_phases(args, groups, progress):
    """Run each phase's Runner in its own thread, the ``alone`` groups (perf) after all the others, one at a time
    with every core; returns (hello, entries in group order, fatal, usage)."""
    launch = runner.default_launch()
    blocklist = runner.Blocklist()
    phases = _phases(groups)
    together = [p for p in phases if p[0] not in registry.ALONE]
    runners = _runners(args, launch, phases, together, progress, blocklist)
    progress.runners = runners
    outcomes: List[Any] = [None] * len(runners)

    def work(i):
        outcomes[i] = runners[i].run()

    threads = [threading.Thread(target=work, args=(i,)) for i, phase in enumerate(phases) if phase in together]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i, phase in enumerate(phases):
        if phase not in together:
            work(i)
    blocklist.close()
    return _gathered(runners, outcomes)


def _in_group_order(outcomes):
    entries = [entry for _, phase_entries in outcomes for entry in phase_entries]
    order = dict((group, i) for i, group in enumerate(checks.GROUPS))
    entries.sort(key=lambda e: order.get(e["group"], len(order)))  # stable: each group keeps its own order
    return entries


def _gathered(runners, outcomes):
    """(hello, entries in group order, fatal, usage) from the finished runners and their outcomes."""
    hello = outcomes[0][0] if outcomes else None
    entries = _in_group_order(outcomes)
    usage = next((r.usage_error for r in runners if r.usage_error), None)
    fatal = next((r.fatal for r in runners if r.fatal), None)
    if hello is not None:
        hello["exercised"] = sorted(set().union(*(r.exercised for r in runners)))
    return hello, entries, fatal, usage


def _opinfo_ops_from_env(args):
    """Fill ``--opinfo-ops`` from the environment when not given; False (after saying why) when it is bad."""
    if args.opinfo_ops is None and os.environ.get(OPINFO_OPS_ENV, "").strip():
        try:
            args.opinfo_ops = _patterns(os.environ[OPINFO_OPS_ENV])
        except argparse.ArgumentTypeError as exc:
            sys.stderr.write("accelenv-probe: error: %s: %s\n" % (OPINFO_OPS_ENV, exc))
            return False
    return True


def _described_host(args, hello, fatal):
    """(environment, devices): the worker's description, or a fallback naming why there is none."""
    if hello and hello.get("environment"):
        return hello["environment"], hello.get("devices", [])
    requested = args.device.split(":")[0]
    environment = report_assembly.fallback_environment(requested if requested != "auto" else "cpu",
                                                       fatal or "the probe worker never described torch")
    return environment, []


def _coverage(hello, entries):
    if hello and hello.get("backend_relevant"):
        return dispatcher.summarise(hello["backend_relevant"], hello.get("exercised") or (), entries,
                                    hello.get("without_own_kernel"), hello.get("backend_fallback"))
    return None


def _write_report(args, report):
    """The report as JSON to ``--output`` (atomically) or stdout; the summary table to stderr unless quiet."""
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
        if report.get("certification"):
            sys.stderr.write(certify.render(report["certification"]) + "\n")


def _exit_code(args, report):
    if not report["summary"]["ok"]:
        return 1
    if args.strict and report["summary"]["counts"].get("unsupported"):
        return EXIT_UNSUPPORTED
    return 0


def main(argv=None):
    args = parser().parse_args(argv)
    if not _opinfo_ops_from_env(args):
        return 2
    if args.dist_rank is not None:
        from probes.checks import distributed

        return distributed.rank_main(args.device, args.dist_work, args.dist_backend, args.dist_tensor_device,
                                     args.dist_store, args.dist_rank, args.dist_out)
    if args.worker:
        return _run_worker(args)
    groups = [g for g in checks.GROUPS if g in args.checks]
    progress = _Progress(args.quiet)
    hello, entries, fatal, usage = run_phases(args, groups, progress)
    if usage:
        sys.stderr.write("accelenv-probe: error: %s\n" % usage)
        return 2
    if fatal:
        entries = [checks.result_entry("detect.torch_build", "detect", "error", 0.0, fatal)]
    environment, devices = _described_host(args, hello, fatal)
    digest, stable = fingerprint.host_fingerprint()
    coverage = _coverage(hello, entries)
    report = report_assembly.assemble(environment, devices, entries, digest, stable, coverage)
    if args.certify:
        report["certification"] = certify.certification(report)
    _write_report(args, report)
    return _exit_code(args, report)
