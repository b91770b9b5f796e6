"""The runner: drives worker processes, contains hangs and crashes, and collects every check's result.

One worker runs the checks in order (torch is imported once). When a check outlives its timeout the
worker's process group is killed and the check is ``timeout``; when the worker dies the check it was in
is ``crashed`` (with the signal name or exit code). Either way a fresh worker runs the checks still to
do. The runner itself never imports torch, so nothing a check does can take it down.

Localisation: the worker leaves a breadcrumb of the aten op it is in (``probes.harness.breadcrumbs``); a timeout or
crash inside an op names it (``data.aten_op``), keeps the innermost frames of the faulthandler dump, and
blocks the op's family for the workers that follow: later checks that reach it are marked with the same
status without calling it. A check may declare its own timeout (compile stages do); the plan carries it.
"""

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict

from probes.checks import error_texts
from probes.checks import outcome as checks
from probes.harness import breadcrumbs, redaction

STARTUP_ALLOWANCE_S = 120  # torch import + plugin activation + detection, on a slow host
STDERR_TAIL = 1500
STDERR_KEEP = 256 * 1024  # how much of a dead worker's stderr is searched for the faulthandler dump


class Blocklist(object):
    """The op families that hung or crashed, shared by every runner of a suite and written to one file that
    each worker re-reads before a check (so a worker running at the same time learns of them too)."""

    #: sent to every worker attached when the list grows: it re-reads the list there and then, mid-check (a
    #: worker running at the same time would otherwise reach the op before its next check)
    NOTIFY = getattr(signal, "SIGUSR1", None)

    def __init__(self):
        self.lock = threading.Lock()
        self.entries = {}  # aten op family -> {"status", "op", "check"}
        self.workers = set()  # the processes (Popen) of the workers that listen for NOTIFY
        handle, self.path = tempfile.mkstemp(prefix="accelenv-blocked-", suffix=".json")
        with os.fdopen(handle, "w") as out:
            json.dump({}, out)
        os.mkdir(self.first_calls_path(self.path))

    @staticmethod
    def nodes_path(path):
        """The file beside the blocklist where workers record which aten ops each backward node type calls
        (``probes.harness.breadcrumbs.NodeOps``)."""
        return path + ".nodes"

    @staticmethod
    def first_calls_path(path):
        """The directory beside the blocklist where workers hold each op family's first call
        (``probes.harness.breadcrumbs.FirstCalls``)."""
        return path + ".first"

    def add(self, family, info):
        with self.lock:
            if family in self.entries:
                return
            self.entries[family] = info
            tmp = self.path + ".tmp"
            with open(tmp, "w") as out:
                json.dump(self.entries, out)
            os.replace(tmp, self.path)
            listening = list(self.workers) if self.NOTIFY is not None else []
        for proc in listening:
            if proc.poll() is not None:
                continue  # ended (its pid may already be another process's)
            try:
                proc.send_signal(self.NOTIFY)
            except OSError:
                pass  # it has just ended

    def attach(self, proc):
        """Tell the worker ``proc`` (which said hello, so it handles NOTIFY) when the list grows."""
        if self.NOTIFY is not None:
            with self.lock:
                self.workers.add(proc)

    def detach(self, proc):
        with self.lock:
            self.workers.discard(proc)

    def close(self):
        shutil.rmtree(self.first_calls_path(self.path), ignore_errors=True)
        for path in (self.path, self.path + ".tmp", self.nodes_path(self.path)):
            try:
                os.unlink(path)
            except OSError:
                pass


class WorkerLaunch(object):
    """How to start a worker: the command prefix and the environment."""

    def __init__(self, argv, env):
        self.argv = argv
        self.env = env


def _reader(stream, sink):
    for line in iter(stream.readline, ""):
        sink.put(line)
    sink.put(None)


def _signal_name(returncode):
    if returncode is not None and returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return "signal %d" % -returncode
    return None


class _Worker(object):
    def __init__(self, launch, args):
        self.errfile = tempfile.TemporaryFile(mode="w+b")
        popen_kwargs: Dict[str, Any] = {}
        if os.name == "posix":
            popen_kwargs["start_new_session"] = True  # so a kill takes the worker's children too
        self.proc = subprocess.Popen(
            launch.argv + args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.errfile,
            env=launch.env, universal_newlines=True, bufsize=1, **popen_kwargs
        )
        self.lines: "queue.Queue[Any]" = queue.Queue()
        threading.Thread(target=_reader, args=(self.proc.stdout, self.lines), daemon=True).start()

    def next_message(self, timeout):
        """A decoded message; 'eof' when the worker closed its stream; None on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                return None
            if line is None:
                return "eof"
            try:
                return json.loads(line)
            except ValueError:
                continue  # not ours; the worker redirects prints, but be safe

    def kill(self):
        if self.proc.poll() is None:
            try:
                if os.name == "posix":
                    os.killpg(self.proc.pid, signal.SIGKILL)
                else:
                    self.proc.kill()
            except OSError:
                pass
        self.proc.wait()

    def death(self):
        """(data, detail) describing how the worker ended."""
        try:
            returncode = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            returncode = self.proc.returncode
        self.errfile.seek(0, os.SEEK_END)
        size = self.errfile.tell()
        self.errfile.seek(max(0, size - STDERR_KEEP))
        text = self.errfile.read().decode("utf-8", "replace")
        name = _signal_name(returncode)
        data = {"exit_code": returncode}
        if name:
            data["signal"] = name
        frames = error_texts.faulthandler_frames(text)
        if frames:
            data["faulthandler"] = redaction.redact(frames)
            text = error_texts.without_faulthandler(text)
        how = "was killed by %s" % name if name else "exited with code %s" % returncode
        return data, how, redaction.redact_text(text[-STDERR_TAIL:].strip())

    def close(self):
        self.kill()
        self.errfile.close()


class Runner(object):
    def __init__(self, launch, device, groups, timeout, progress=None, extra_args=(), describe=True, blocklist=None):
        self.launch = launch
        self.device = device
        self.groups = groups
        self.timeout = timeout
        self.progress = progress or (lambda entry, done, total: None)
        self.extra_args = list(extra_args)
        self.describe = describe  # False: another runner's worker sends the environment
        self.hello = None
        self.plan = None  # [(id, group)]
        self.timeouts = {}  # check id -> its own timeout, where it declared one
        self.results = {}
        self.blocklist = blocklist  # ops that hung or crashed: not called again (None: no blocking)
        self.fatal = None
        self.exercised = set()  # the aten overloads its workers' traced checks called on the device
        self.usage_error = None  # the worker rejected the device's settings: nothing was probed
        handle, self.trail_file = tempfile.mkstemp(prefix="accelenv-trail-")
        os.close(handle)

    def _args(self, only_file):
        args = ["--worker", "--device", self.device, "--checks", ",".join(self.groups),
                "--breadcrumb-file", self.trail_file] + self.extra_args
        if only_file:
            args += ["--only-file", only_file]
        if self.blocklist is not None:
            args += ["--blocked-file", self.blocklist.path]
        if self.hello is not None or not self.describe:
            args.append("--no-environment")
        return args

    def _timeout_of(self, check_id):
        return self.timeouts.get(check_id) or self.timeout

    def _localise(self, status, check_id, data):
        """Name the op the worker was in (from its breadcrumb) and block its family; returns a phrase."""
        state, op = breadcrumbs.read(self.trail_file)
        if op is None:
            return ""
        data["last_aten_op"] = op
        if state != "entered":
            return "; the last aten op it entered, %s, had returned" % op
        if op.startswith(breadcrumbs.BACKWARD_NODE):  # in a backward node, outside any of its aten ops: block its type
            node = op[len(breadcrumbs.BACKWARD_NODE):]
            data["backward_node"] = node
            if self.blocklist is not None:
                self.blocklist.add(breadcrumbs.base_name(op), {"status": status, "op": op, "check": check_id})
            return ("; it was in the backward pass, inside %s (its aten ops are not traced on this device; later "
                    "checks whose backward reaches %s are marked without running it)" % (node, node))
        if not op.startswith("aten::"):  # e.g. the engine itself (autograd backward): nothing to block
            data["last_step"] = op
            return "; it was in the %s (its ops are not traced on this device)" % op
        data["aten_op"] = op
        family = breadcrumbs.base_name(op)
        if self.blocklist is not None:
            self.blocklist.add(family, {"status": status, "op": op, "check": check_id})
        return "; it was inside %s (later checks that need %s are marked without calling it)" % (op, family)

    def _record(self, entry):
        self.results[entry["id"]] = entry
        total = len(self.plan) if self.plan else len(self.results)
        self.progress(entry, len(self.results), total)

    def _remaining(self):
        return [cid for cid, _ in self.plan or () if cid not in self.results]

    def _group_of(self, check_id):
        for cid, group in self.plan or ():
            if cid == check_id:
                return group
        return check_id.split(".")[0]

    def run(self):
        try:
            return self._run()
        finally:
            try:
                os.unlink(self.trail_file)
            except OSError:
                pass

    def _json_file(self, prefix, value):
        handle, path = tempfile.mkstemp(prefix=prefix, suffix=".json")
        with os.fdopen(handle, "w") as out:
            json.dump(value, out)
        return path

    def _worker_over_remaining(self):
        """One worker over the checks not yet recorded (all of them before the plan is known); True when
        the run is over (the worker finished, or reported a fatal or usage error)."""
        only_file = self._json_file("accelenv-only-", self._remaining()) if self.plan is not None else None
        try:
            finished = self._one_worker(only_file)
        finally:
            if only_file:
                os.unlink(only_file)
        return finished or self.fatal or self.usage_error

    def _run(self):
        attempts_without_progress = 0
        while self.plan is None or self._remaining():
            before = len(self.results)
            if self._worker_over_remaining():
                break
            attempts_without_progress = attempts_without_progress + 1 if len(self.results) == before else 0
            if attempts_without_progress >= 2:
                self._give_up()
                break
        return self.hello, [self.results[cid] for cid, _ in self.plan or () if cid in self.results]

    def _give_up(self):
        for cid in self._remaining():
            self._record(checks.result_entry(cid, self._group_of(cid), "crashed", 0.0,
                                             "not run: the probe worker failed to start twice in a row"))

    def _one_worker(self, only_file):
        """Run one worker until done (True) or until it hangs/dies (False)."""
        breadcrumbs.create(self.trail_file)
        worker = _Worker(self.launch, self._args(only_file))
        current, started = None, 0.0  # started: when `current` began (read only while it is set)
        paused = None  # since when `current` waits for another worker's first call of an op (its clock stopped)
        try:
            while True:
                wait = STARTUP_ALLOWANCE_S + self.timeout if current is None else \
                    self._timeout_of(current) - (time.monotonic() - started)
                if paused is not None:  # the other worker's check ends within its own timeout
                    wait = STARTUP_ALLOWANCE_S + 2 * max([self.timeout] + list(self.timeouts.values()))
                message = worker.next_message(max(wait, 0.0))
                if message is None:  # timed out
                    if self.blocklist is not None:
                        self.blocklist.detach(worker.proc)
                    worker.kill()
                    self._timed_out(worker, current, started)
                    return False
                if message == "eof":
                    self._died(worker, current, started)
                    return False
                kind = message.get("type")
                if kind == "start":
                    current, started, paused = message["id"], time.monotonic(), None
                elif kind == "wait" and current is not None:
                    if message.get("waiting"):
                        paused = time.monotonic()
                    elif paused is not None:
                        started, paused = started + (time.monotonic() - paused), None
                elif kind == "result":
                    self._record(message["check"])
                    current = None
                elif self._finishes(kind, message):
                    return True
                elif kind == "hello" and self.blocklist is not None:
                    self.blocklist.attach(worker.proc)
        finally:
            if self.blocklist is not None:
                self.blocklist.detach(worker.proc)
            worker.close()

    def _timed_out(self, worker, current, started):
        """Record why the (killed) worker stopped answering: at startup, or in ``current``."""
        if current is None:
            self._startup_failure(worker, "the probe worker did not report within %ss"
                                  % (STARTUP_ALLOWANCE_S + self.timeout), "timeout")
            return
        limit = self._timeout_of(current)
        data = {"timeout_s": limit}
        where = self._localise("timeout", current, data)
        self._record(checks.result_entry(
            current, self._group_of(current), "timeout", time.monotonic() - started,
            "no result within %ss%s; the worker was killed and a fresh one ran the rest" % (limit, where),
            data))

    def _died(self, worker, current, started):
        """Record the worker's death: as ``current``'s crash, or as a failure to start."""
        data, how, tail = worker.death()
        if current is not None:
            detail = "the worker %s while running this check" % how
            detail += self._localise("crashed", current, data)
            if data.get("faulthandler"):
                frames = data["faulthandler"]
                detail += "; innermost frame: " + frames[1 if len(frames) > 1 else 0]
            if tail:
                detail += "; stderr tail: " + tail[-800:]
            self._record(checks.result_entry(current, self._group_of(current), "crashed",
                                             time.monotonic() - started, detail, data))
        elif self.plan is None:
            self._startup_failure(worker, "the probe worker %s before reporting" % how, "crashed",
                                  data, tail)

    def _hello(self, message):
        if self.hello is None:
            self.hello = message
        if self.plan is None:
            self.plan = [(item[0], item[1]) for item in message["plan"]]
            self.timeouts = dict((item[0], item[2]) for item in message["plan"]
                                 if len(item) > 2 and item[2])

    def _finishes(self, kind, message):
        """Take in a message other than start/result; True when it ends the worker's run."""
        if kind == "hello":
            self._hello(message)
        elif kind == "coverage":
            self.exercised.update(message.get("exercised") or ())
        elif kind == "done":
            return True
        elif kind == "fatal":
            self.fatal = message.get("detail")
            return True
        elif kind == "usage":
            self.usage_error = message.get("detail") or "invalid settings"
            return True
        return False

    def _startup_failure(self, worker, detail, status, data=None, tail=""):
        if tail:
            detail += "; stderr tail: " + tail[-800:]
        if self.plan is None:
            self.plan = [("detect.worker_start", "detect")]
            self._record(checks.result_entry("detect.worker_start", "detect", status, 0.0, detail, data or {}))


def default_launch():
    """Relaunch this probe as a worker: the bundle file when running from one, else ``-m probes``."""
    import probes

    bundle = getattr(probes, "__bundle_path__", None)
    env = dict(os.environ)
    if bundle:
        return WorkerLaunch([sys.executable, "-I", bundle], env)
    root = os.path.dirname(os.path.dirname(os.path.abspath(probes.__file__)))
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return WorkerLaunch([sys.executable, "-m", "probes"], env)
