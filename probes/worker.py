"""The worker: imports torch once, activates the device, runs checks in order, streams JSON lines.

Protocol (one JSON object per line on the worker's original stdout; anything torch or a vendor library
prints goes to stderr instead, so it cannot corrupt the stream):
  {"type": "hello", "plan": [[id, group], ...], "environment": {...}, "devices": [...]}
  {"type": "start", "id": ...}   then   {"type": "result", "check": {...}}   per check
  {"type": "done"}               or     {"type": "fatal", "detail": ...} when torch cannot be imported
  {"type": "usage", "detail": ...} instead of hello when the device's settings are invalid (exit 2)
The runner decides what a silence or a death means; the worker never has to survive its own crash.
"""

import faulthandler
import json
import os
import sys
import time
import traceback

from probes import (allocator, amp, checks, detect, device_activation, distributed, error_texts, faults, ops,
                    smoke)
from probes.context import ProbeContext

GROUP_PLANS = {"smoke": smoke.plan, "ops": ops.plan, "allocator": allocator.plan, "amp": amp.plan,
               "distributed": distributed.plan}


def _protocol_stream():
    fd = os.dup(1)
    os.dup2(2, 1)  # stray prints from C++ or vendor code now land on stderr
    return os.fdopen(fd, "w", buffering=1)


def _send(stream, message):
    stream.write(json.dumps(message, default=str) + "\n")
    stream.flush()


def _setup_torch(torch):
    # Exact float32 on both sides of every comparison: TF32 would make CUDA disagree with CPU by design.
    for owner, attr in ((getattr(torch.backends, "cuda", None), "matmul"), (torch.backends, "cudnn")):
        target = getattr(owner, attr, None) if owner is not None else None
        if target is not None and hasattr(target, "allow_tf32"):
            try:
                target.allow_tf32 = False
            except Exception:
                pass


def build_context(torch, requested):
    device_type, index = device_activation.parse_device(requested)
    plugin = {}
    try:
        if device_type == "auto":
            device_activation.activate_installed_plugins()
            device_type = device_activation.pick_auto(torch)
            if device_type == device_activation.REFDEV:
                plugin = {"plugin": "probes.refdev", "version": None}
        else:
            plugin = device_activation.activate(device_type)
        device = device_activation.resolve(torch, device_type, index)
    except device_activation.DeviceError as exc:
        return ProbeContext(torch, None, device_error=str(exc), plugin=plugin, requested_type=device_type)
    return ProbeContext(torch, device, plugin=plugin)


def build_plan(ctx, facts, groups):
    planned = []
    for group in checks.GROUPS:
        if group not in groups:
            continue
        if group == "detect":
            planned.extend(detect.plan(ctx, facts))
        elif ctx.device is None:
            reason = "not run: %s" % ctx.device_error
            planned.append(checks.Check("%s.device_unavailable" % group, group,
                                        lambda _ctx, reason=reason: checks.skipped(reason)))
        else:
            planned.extend(GROUP_PLANS[group](ctx))
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


def run_check(ctx, check, injected):
    started = time.perf_counter()
    try:
        faults.inject(injected, check.id)
        outcome = check.run(ctx)
        status, detail, data = outcome.status, outcome.detail, outcome.data
    except Exception as exc:
        tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
        status, detail = "error", "the check raised %s: %s" % (type(exc).__name__, str(exc).splitlines()[0][:500]
                                                               if str(exc) else "")
        data = {"exception": type(exc).__name__, "traceback_tail": "".join(tb)[-1500:]}
        answer = _device_answer(ctx, exc)
        if answer is not None:
            status, detail = answer[0], answer[1]
            data.update(answer[2])
    return checks.result_entry(check.id, check.group, status, time.perf_counter() - started, detail, data)


def main(requested, groups, only=None, send_environment=True):
    stream = _protocol_stream()
    faulthandler.enable()  # a segfault or abort leaves a Python traceback in the stderr tail we report
    injected = faults.from_env()
    try:
        import torch
    except Exception as exc:
        _send(stream, {"type": "fatal", "detail": "torch cannot be imported: %s: %s" % (type(exc).__name__, exc)})
        return 3
    _setup_torch(torch)
    try:
        ctx = build_context(torch, requested)
    except device_activation.SettingsError as exc:
        _send(stream, {"type": "usage", "detail": str(exc)})
        return 2
    facts = detect.collect(ctx)
    planned = build_plan(ctx, facts, groups)
    hello = {"type": "hello", "plan": [[c.id, c.group] for c in planned]}
    if send_environment:
        hello["environment"] = facts["environment"]
        hello["devices"] = facts["devices"]
    _send(stream, hello)
    for check in planned:
        if only is not None and check.id not in only:
            continue
        _send(stream, {"type": "start", "id": check.id})
        _send(stream, {"type": "result", "check": run_check(ctx, check, injected)})
    _send(stream, {"type": "done"})
    sys.stderr.flush()
    return 0
