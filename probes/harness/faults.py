"""Test-only fault injection: make a named check hang, crash or abort inside the worker.

``ACCELENV_PROBE_TEST_FAULTS="hang:smoke.train_step,crash:ops.mm.*"`` -- comma-separated ``KIND:PATTERN``
(fnmatch patterns over check ids). Kinds: ``hang`` (sleeps forever), ``crash`` (SIGSEGV), ``abort``
(SIGABRT), ``exit`` (exit code 3), ``raise`` (a Python exception). Tests use it to prove the runner
contains each; it is never set in normal use.
"""

import fnmatch
import os
import signal
import time

FAULTS_ENV = "ACCELENV_PROBE_TEST_FAULTS"
KINDS = ("hang", "crash", "abort", "exit", "raise")


class InjectedFault(RuntimeError):
    pass


def parse(text):
    faults = []
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        kind, _, pattern = item.partition(":")
        if kind not in KINDS or not pattern:
            raise ValueError("bad %s entry %r: use KIND:CHECK_ID_PATTERN with KIND in %s"
                             % (FAULTS_ENV, item, ", ".join(KINDS)))
        faults.append((kind, pattern))
    return faults


def from_env():
    return parse(os.environ.get(FAULTS_ENV))


def inject(faults, check_id):
    for kind, pattern in faults:
        if not fnmatch.fnmatchcase(check_id, pattern):
            continue
        if kind == "hang":
            while True:
                time.sleep(3600)
        if kind == "crash":
            os.kill(os.getpid(), getattr(signal, "SIGSEGV", signal.SIGTERM))
            time.sleep(5)  # the signal is delivered asynchronously on some platforms
        if kind == "abort":
            os.abort()
        if kind == "exit":
            os._exit(3)
        if kind == "raise":
            raise InjectedFault("fault injected into %s by %s" % (check_id, FAULTS_ENV))
