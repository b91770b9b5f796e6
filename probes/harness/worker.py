"""The worker: imports torch once, activates the device, runs checks in order, streams JSON lines.

Protocol (one JSON object per line on the worker's original stdout; anything torch or a vendor library
prints goes to stderr instead, so it cannot corrupt the stream):
  {"type": "hello", "plan": [[id, group], ...], "environment": {...}, "devices": [...]}
  {"type": "start", "id": ...}   then   {"type": "result", "check": {...}}   per check
  {"type": "done"}               or     {"type": "fatal", "detail": ...} when torch cannot be imported
  {"type": "usage", "detail": ...} instead of hello when the device's settings are invalid (exit 2)
The runner decides what a silence or a death means; the worker never has to survive its own crash.
"""

import contextlib
import faulthandler
import json
import os
import signal
import sys
import time
import traceback
import warnings

from probes.checks import context, detect, device_activation, dispatcher, error_texts, registry
from probes.checks import outcome as checks
from probes.harness import breadcrumbs, faults, kernel_block, runner

# The groups, their plans and which run untraced: ``probes.checks.registry``.


def _protocol_stream():
    fd = os.dup(1)
    os.dup2(2, 1)  # stray prints from C++ or vendor code now land on stderr
    return os.fdopen(fd, "w", buffering=1)


def _send(stream, message):
    stream.write(json.dumps(message, default=str) + "\n")
    stream.flush()


def _setup_torch(torch, threads=None):
    # A backend's "falls back to the CPU" warning is TORCH_WARN_ONCE: once per process, inside whichever check
    # reached the op first. Warn-always makes it come again in every check that reaches the op.
    warn_always = getattr(torch, "set_warn_always", None)
    if warn_always is not None:
        try:
            warn_always(True)
        except Exception:
            pass
    if threads:  # the runner shares the cores out among the workers it runs at once
        try:
            torch.set_num_threads(threads)
        except Exception:
            pass
    # Exact float32 on both sides of every comparison: TF32 would make CUDA disagree with CPU by design.
    for owner, attr in ((getattr(torch.backends, "cuda", None), "matmul"), (torch.backends, "cudnn")):
        target = getattr(owner, attr, None) if owner is not None else None
        if target is not None and hasattr(target, "allow_tf32"):
            try:
                target.allow_tf32 = False
            except Exception:
                pass


def build_plan(ctx, facts, groups):
    planned = []
    for group in registry.GROUPS:
        if group.name not in groups:
            continue
        if group.with_facts:
            planned.extend(group.plan_function()(ctx, facts))
        elif ctx.device is None:
            reason = "not run: %s" % ctx.device_error
            planned.append(checks.Check("%s.device_unavailable" % group.name, group.name,
                                        lambda _ctx, reason=reason: checks.skipped(reason)))
        else:
            planned.extend(group.plan_function()(ctx))
    return planned


def _device_answer(ctx, exc):
    """A missing kernel or a device OOM escaping a check is the device's answer, not a probe bug."""
    info = error_texts.classify_unsupported(exc)
    if info is not None and info.get("aten_op"):
        return ("unsupported", "%s is not implemented for backend %s" % (info["aten_op"], info.get("backend")
                                                                          or ctx.backend), info)
    if ctx.torch is not None and error_texts.is_oom(exc, ctx.torch):
        return ("failed", "the device ran out of memory: %s" % error_texts.first_line(exc, 500),
                {"out_of_memory": True, "error": error_texts.first_line(exc, 500)})
    return None


class Tracing(object):
    """The breadcrumb trail and the blocked op families of this worker (see ``probes.harness.breadcrumbs``).

    The blocked families live in a file the runners share; it is re-read when it changed, before each check.
    """

    def __init__(self, torch, trail_file=None, blocked_file=None, device_type=None, send=None):
        self.torch = torch
        self.device_type = device_type  # blocked families are refused on this device only
        self.trail = breadcrumbs.open_trail(trail_file)
        self.blocked_file = blocked_file
        self._stamp = None
        self.seen = set()  # the aten overloads traced checks called on the device (coverage)
        self.blocked = {}
        self.why = {}
        # which aten ops each backward node type calls, learned from CPU backward passes (shared with the
        # workers before and after this one through a file beside the blocklist)
        self.learned = breadcrumbs.NodeOps(runner.Blocklist.nodes_path(blocked_file) if blocked_file else None)
        # the blocked families refused at the device's own kernels too: composite ops, the device's backward
        # pass and the untraced groups reach them there
        self.kernels = kernel_block.KernelBlock(torch, device_type) if torch is not None else None
        # each op family's first call on the device, one worker at a time (``send`` tells the runner when this
        # worker waits for another's, so the wait is not counted against the check)
        self.first_calls = breadcrumbs.FirstCalls(
            runner.Blocklist.first_calls_path(blocked_file), self._blocked_why,
            (lambda waiting, family: send({"type": "wait", "waiting": waiting, "op": family})) if send else None
        ) if blocked_file and os.path.isdir(runner.Blocklist.first_calls_path(blocked_file)) else None
        self.refresh()

    def refresh(self):
        if not self.blocked_file:
            return
        try:
            stamp = os.stat(self.blocked_file).st_mtime_ns
            if stamp == self._stamp:
                return
            with open(self.blocked_file) as handle:
                blocked = json.load(handle)
        except (OSError, ValueError):
            return
        self._stamp, self.blocked = stamp, blocked
        # in place: a mode made before (a check in flight when the runner's signal came) sees the new ones
        self.why.update((family, "%s in %s" % ("timed out" if info.get("status") == "timeout" else
                                               "crashed the worker", info.get("check")))
                        for family, info in blocked.items())
        if self.kernels is not None:
            self.kernels.block_all(self.why)

    def _blocked_why(self, family):
        self.refresh()
        return self.why.get(family)

    def mode(self, check, untraced_too=False):
        """The breadcrumb mode for ``check``; None for a group that runs untraced unless ``untraced_too`` (the
        eager parts such a group runs inside ``ctx.traced()``)."""
        if self.torch is None or (check.group in registry.UNTRACED and not untraced_too) or (
                self.trail is None and not self.blocked and self.first_calls is None):
            return None
        try:
            return breadcrumbs.make_mode(self.torch, self.trail, self.why, self.device_type, self.seen, self.learned,
                                         self.first_calls)
        except Exception:  # a torch without TorchDispatchMode: checks run untraced
            return None

    def clear(self):
        if self.trail is not None:
            self.trail.clear()


@contextlib.contextmanager
def _nothing():
    yield


def _blocked_outcome(tracing, hit):
    op, why = hit
    info = tracing.blocked.get(breadcrumbs.base_name(op), {})
    status = info.get("status") if info.get("status") in checks.STATUSES else "crashed"
    data = {"aten_op": op, "blocked_by": info.get("op"), "blocked_in": info.get("check"), "ran": False}
    node = breadcrumbs.node_of(why)
    if node:  # refused before a device backward pass whose node calls the op
        data["backward_node"] = node
    return status, ("not run to the end: it needs %s%s, which %s earlier (in %s); the op was not called again"
                    % (op, " (in the backward node %s)" % node if node else "",
                       "timed out" if status == "timeout" else "crashed the worker", info.get("check"))), data


def _traced(ctx, tracing, mode):
    """The breadcrumb mode and the device's backward pass followed under it, as one context manager."""
    def blocked_in_backward(name, why):
        mode.hit_blocked = (name, why)

    backward = breadcrumbs.device_backward(ctx.torch, tracing.trail, tracing.why, blocked_in_backward, mode,
                                           tracing.learned) if not ctx.is_cpu else _nothing()

    @contextlib.contextmanager
    def both():
        with backward, mode:
            yield

    return both()


def _run_outcome(ctx, check, injected, tracing):
    faults.inject(injected, check.id)
    if tracing is not None:
        tracing.refresh()
    kernels = tracing.kernels if tracing is not None else None
    if kernels is not None:
        kernels.hit = None
    mode = tracing.mode(check) if tracing is not None else None
    section = None
    if mode is None and tracing is not None:
        # an untraced group's eager parts (compile's references) run traced inside ctx.traced()
        section = tracing.mode(check, untraced_too=True)
        if section is not None:
            ctx.traced = lambda: _traced(ctx, tracing, section)

    def hit():
        for source in (mode, section):
            if source is not None and source.hit_blocked:
                return source.hit_blocked
        return kernels.hit if kernels is not None else None

    try:
        if mode is None:
            outcome = check.run(ctx)
        else:
            with _traced(ctx, tracing, mode):
                outcome = check.run(ctx)
    except breadcrumbs.BlockedOp:
        return None, hit()
    finally:
        ctx.traced = _nothing
    return outcome, hit()


def _fell_back(status, detail, data, messages):
    """A check that passed through a CPU fallback did not test the device: it fails, naming the ops.

    ``messages`` are the warnings the check raised (the worker sets ``torch.set_warn_always`` so a backend's
    once-per-process fallback warning comes again in every check that reaches the op, whatever ran first).
    """
    ops = error_texts.cpu_fallback_ops(messages)
    for op in (data.get("fallback_op"),):
        if op and op not in ops:
            ops.append(op)
    if not ops:
        return status, detail, data
    data = dict(data, cpu_fallback_ops=ops)
    if data.get("figures"):  # perf: the CPU's speed, not the device's
        reason = "taken through the CPU fallback of %s" % ", ".join(ops)
        data["figures"] = [dict(f, valid=False, invalid_reason=reason) for f in data["figures"]]
    if status != "passed":
        return status, detail, data
    return "failed", ("ran on the CPU fallback, not on the device: %s; what passed was the CPU's work (%s)"
                      % (", ".join(ops), detail or "passed")), data


def run_check(ctx, check, injected, tracing=None):
    started = time.perf_counter()
    caught = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outcome, hit = _run_outcome(ctx, check, injected, tracing)
        if hit is not None:  # even when the check caught BlockedOp itself, it did not run to the end
            status, detail, data = _blocked_outcome(tracing, hit)
        else:
            status, detail, data = outcome.status, outcome.detail, outcome.data
        status, detail, data = _fell_back(status, detail, data, [str(w.message) for w in caught])
    except Exception as exc:
        tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
        status, detail = "error", "the check raised %s: %s" % (type(exc).__name__, str(exc).splitlines()[0][:500]
                                                               if str(exc) else "")
        data = {"exception": type(exc).__name__, "traceback_tail": "".join(tb)[-1500:]}
        answer = _device_answer(ctx, exc)
        if answer is not None:
            status, detail = answer[0], answer[1]
            data.update(answer[2])
    if tracing is not None:
        tracing.clear()
    return checks.result_entry(check.id, check.group, status, time.perf_counter() - started, detail, data)


def _hello(torch, ctx, facts, planned, send_environment):
    """The worker's first message: its plan and, when asked, the host's description and dispatcher coverage."""
    hello = {"type": "hello", "plan": [[c.id, c.group, c.timeout] for c in planned]}
    if send_environment:
        hello["environment"] = facts["environment"]
        hello["devices"] = facts["devices"]
        try:
            hello["backend_relevant"] = dispatcher.backend_relevant(torch)
            if ctx.device is not None and ctx.privateuse1 and ctx.device_type == ctx.privateuse1:
                lacking, fallback = dispatcher.own_kernels(torch, hello["backend_relevant"])
                hello["without_own_kernel"], hello["backend_fallback"] = lacking, fallback
        except Exception:  # a torch without the dispatcher queries: no coverage figure
            pass
    return hello


def _warm_for_the_mode(torch, checks):
    """Import what a dispatch mode's first op imports (torch._dynamo: seconds on a loaded host) before the first
    check starts, so it counts against the worker's startup allowance rather than the first traced check's
    timeout (a 5 s ``--timeout`` timed out a check that only waited for the import)."""
    if any(c.group not in registry.UNTRACED for c in checks):
        try:
            import torch._dynamo  # noqa: F401
        except Exception:
            pass


def _listen_for_blocks():
    """Re-read the blocklist when the runner says it grew (``runner.Blocklist.NOTIFY``), between two bytecodes of
    whatever check is running: a worker running beside the one that died stops calling the op at once. The
    handler is set before the hello, so the signal never meets the default action (ending the process)."""
    listening = []  # type: list  # the Tracing, once there is one

    def refresh(signum, frame):
        for tracing in listening:
            tracing.refresh()

    if runner.Blocklist.NOTIFY is not None:
        try:
            signal.signal(runner.Blocklist.NOTIFY, refresh)
        except (ValueError, OSError):  # not the main thread: the list is read before each check only
            pass
    return listening


def main(requested, groups, only=None, send_environment=True, options=None, trail_file=None, blocked_file=None,
         threads=None):
    stream = _protocol_stream()
    faulthandler.enable()  # a segfault or abort leaves a Python traceback in the stderr tail we report
    listening = _listen_for_blocks()
    injected = faults.from_env()
    try:
        import torch
    except Exception as exc:
        _send(stream, {"type": "fatal", "detail": "torch cannot be imported: %s: %s" % (type(exc).__name__, exc)})
        return 3
    _setup_torch(torch, threads)
    try:
        ctx = context.build_context(torch, requested)
        ctx.launch = runner.default_launch()
        ctx.options.update(options or {})
    except device_activation.SettingsError as exc:
        _send(stream, {"type": "usage", "detail": str(exc)})
        return 2
    facts = detect.collect(ctx)
    planned = build_plan(ctx, facts, groups)
    _send(stream, _hello(torch, ctx, facts, planned, send_environment))
    tracing = Tracing(torch, trail_file, blocked_file, ctx.device_type if ctx.device is not None else None,
                      lambda message: _send(stream, message))
    listening.append(tracing)
    _warm_for_the_mode(torch, [c for c in planned if only is None or c.id in only])
    for check in planned:
        if only is not None and check.id not in only:
            continue
        _send(stream, {"type": "start", "id": check.id})
        _send(stream, {"type": "result", "check": run_check(ctx, check, injected, tracing)})
    _send(stream, {"type": "coverage", "exercised": sorted(tracing.seen)})
    _send(stream, {"type": "done"})
    sys.stderr.flush()
    return 0
