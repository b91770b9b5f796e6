"""perf: how fast the device is -- figures, not pass/fail.

Each check measures a few figures and reports them in ``data.figures`` (the report gathers them into its
``perf`` block; the CLI summary prints them). Every figure stands beside the same figure on this host's CPU
and, where ``probes.checks.peaks`` knows the device, as a fraction of its peak:

- ``matmul.<dtype>``: square matmul throughput (FLOP/s) in float32 and the half dtypes the device holds;
- ``elementwise.bandwidth``: ``y = x * 2`` over a large float32 tensor (bytes read + written per second);
- ``copy.h2d.pageable`` / ``copy.h2d.pinned`` / ``copy.d2h.pageable`` / ``copy.d2h.pinned`` and
  ``copy.pinned_speedup`` (does pinning help on this device at all?);
- ``latency.launch`` (a tiny op, queued back to back) and ``latency.synchronize``;
- ``models.<name>.step``: one training step of the models group's models;
- ``profile``: the top ops of a ResNet-style step by time (device time where the profiler records device
  activity, else host time) and ``profile.sync_points``: the host<->device syncs in that step (``item()``,
  device-to-host copies), counted with a dispatch mode.

A check is ``passed`` when it measured (the figures are the answer), ``skipped`` on CPU-only parts that do not
apply, ``unsupported`` when the device lacks what a measurement needs. Each figure takes a bounded time
(``BUDGET_S``; ``--deep`` more and larger sizes), so the group stays within a few seconds on a CPU.
"""

import time
from typing import Any, Dict

from probes.checks import outcome as checks
from probes.checks import peaks
from probes.checks.smoke import device_failure

BUDGET_S = 0.08  # per timed figure; --deep: DEEP_BUDGET_S
DEEP_BUDGET_S = 1.0
MATMUL_N = 128
DEEP_MATMUL_N = 1024
ELEMENTS = 1 << 20  # 4 MiB of float32
DEEP_ELEMENTS = 1 << 24
COPY_BYTES = 4 << 20
DEEP_COPY_BYTES = 64 << 20
MAX_REPS = 200


def _deep(ctx):
    return bool(ctx.options.get("deep"))


def _timed(ctx, device, fn, budget):
    """Seconds per call of ``fn`` on ``device``: warm up once, then repeat until ``budget`` is spent."""
    sync = ctx.synchronize if str(device) != "cpu" else (lambda: None)
    fn()
    sync()
    reps, start = 0, time.perf_counter()
    elapsed = 0.0
    while reps < MAX_REPS and (reps < 2 or elapsed < budget):
        fn()
        reps += 1
        if reps in (1, 2, 4, 8, 16, 32, 64, 128) or elapsed >= budget:
            sync()
        elapsed = time.perf_counter() - start
    sync()
    elapsed = time.perf_counter() - start
    return elapsed / reps


def _figure(name, unit, value, cpu_value=None, peak=None, note=None):
    figure = {"name": name, "unit": unit, "value": value, "cpu_value": cpu_value}
    if peak and value is not None:
        figure["peak_fraction"] = value / peak
    if note:
        figure["note"] = note[:400]
    return figure


def _peak(ctx):
    if ctx.is_cpu or ctx.device_module is None:
        return None
    getter = getattr(ctx.device_module, "get_device_name", None)
    try:
        name = getter(ctx.index) if getter is not None else None
    except Exception:
        name = None
    return peaks.lookup(name)


def _result(ctx, figures, what, **data):
    data["figures"] = figures
    peak = _peak(ctx)
    if peak:
        data["peak_source"] = peak["source"]
    shown = ", ".join("%s %.3g %s" % (f["name"], f["value"], f["unit"]) for f in figures if f["value"] is not None)
    return checks.passed("%s on %s: %s" % (what, ctx.device, shown or "nothing measurable"), **data)


def matmul(ctx):
    torch = ctx.torch
    n = DEEP_MATMUL_N if _deep(ctx) else MATMUL_N
    budget = DEEP_BUDGET_S if _deep(ctx) else BUDGET_S
    peak = _peak(ctx) or {}
    figures = []
    for name in ("float32", "float16", "bfloat16"):
        if name != "float32" and ctx.dtype_problem(name):
            continue
        dtype = getattr(torch, name)
        gen = torch.Generator().manual_seed(0)
        a_cpu = torch.randn(n, n, generator=gen).to(dtype)
        b_cpu = torch.randn(n, n, generator=gen).to(dtype)
        a, b = a_cpu.to(ctx.device), b_cpu.to(ctx.device)
        flops = 2.0 * n ** 3
        value = flops / _timed(ctx, ctx.device, lambda a=a, b=b: torch.mm(a, b), budget)
        try:
            cpu = value if ctx.is_cpu else flops / _timed(ctx, "cpu", lambda a=a_cpu, b=b_cpu: torch.mm(a, b), budget)
        except Exception:  # CPU lacks a half kernel in an old torch
            cpu = None
        # a dtype whose peak is unknown (None) gets no fraction of peak
        figures.append(_figure("matmul.%s" % name, "FLOP/s", value, cpu, (peak.get("flops") or {}).get(name)))
    return _result(ctx, figures, "%dx%d matmul" % (n, n), n=n)


def elementwise(ctx):
    torch = ctx.torch
    count = DEEP_ELEMENTS if _deep(ctx) else ELEMENTS
    budget = DEEP_BUDGET_S if _deep(ctx) else BUDGET_S
    x_cpu = torch.ones(count)
    x = x_cpu.to(ctx.device)
    moved = 8.0 * count  # 4 bytes read, 4 written per element
    value = moved / _timed(ctx, ctx.device, lambda: torch.mul(x, 2.0), budget)
    cpu = value if ctx.is_cpu else moved / _timed(ctx, "cpu", lambda: torch.mul(x_cpu, 2.0), budget)
    figure = _figure("elementwise.bandwidth", "B/s", value, cpu, (_peak(ctx) or {}).get("memory_bw"))
    return _result(ctx, [figure], "x * 2 over %d float32" % count, elements=count)


def copies(ctx):
    if ctx.is_cpu:
        return checks.skipped("device is CPU: there is no host<->device copy to time")
    torch = ctx.torch
    nbytes = DEEP_COPY_BYTES if _deep(ctx) else COPY_BYTES
    budget = DEEP_BUDGET_S if _deep(ctx) else BUDGET_S
    host = torch.ones(nbytes // 4)
    dev = host.to(ctx.device)
    cpu_copy = nbytes / _timed(ctx, "cpu", lambda: host.clone(), budget)
    h2d = nbytes / _timed(ctx, ctx.device, lambda: host.to(ctx.device), budget)
    figures = [_figure("copy.h2d.pageable", "B/s", h2d, cpu_copy,
                       note="CPU figure: a host-to-host clone of the same size"),
               _figure("copy.d2h.pageable", "B/s", nbytes / _timed(ctx, ctx.device, lambda: dev.to("cpu"), budget),
                       cpu_copy)]
    data: Dict[str, Any] = {"bytes": nbytes}
    try:
        pinned = host.pin_memory()
        out = torch.empty(nbytes // 4).pin_memory()
    except Exception as exc:
        data["pinned_error"] = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        figures.append(_figure("copy.h2d.pinned", "B/s", None, note="pin_memory() failed: %s" % data["pinned_error"]))
        return _result(ctx, figures, "%d-byte copies (no pinned memory)" % nbytes, **data)
    h2d = nbytes / _timed(ctx, ctx.device, lambda: pinned.to(ctx.device, non_blocking=True), budget)
    d2h = nbytes / _timed(ctx, ctx.device, lambda: out.copy_(dev, non_blocking=True), budget)
    figures += [_figure("copy.h2d.pinned", "B/s", h2d), _figure("copy.d2h.pinned", "B/s", d2h),
                _figure("copy.pinned_speedup", "ratio", h2d / figures[0]["value"],
                        note="pinned / pageable host-to-device bandwidth: > 1 means pinning helps")]
    return _result(ctx, figures, "%d-byte copies" % nbytes, **data)


def latency(ctx):
    torch = ctx.torch
    budget = DEEP_BUDGET_S if _deep(ctx) else BUDGET_S
    x = torch.zeros(16, device=ctx.device)
    x_cpu = torch.zeros(16)
    launch = _timed(ctx, ctx.device, lambda: x.add_(1.0), budget)
    cpu_launch = launch if ctx.is_cpu else _timed(ctx, "cpu", lambda: x_cpu.add_(1.0), budget)
    figures = [_figure("latency.launch", "s", launch, cpu_launch, note="a 16-element add_, back to back")]
    if not ctx.is_cpu:
        reps, start = 0, time.perf_counter()
        while reps < MAX_REPS and (reps < 5 or time.perf_counter() - start < budget):
            x.add_(1.0)
            ctx.synchronize()
            reps += 1
        figures.append(_figure("latency.synchronize", "s", max(0.0, (time.perf_counter() - start) / reps - launch),
                               note="a tiny op then synchronize(), less the op's own time"))
    return _result(ctx, figures, "launch and synchronize latency")


def model_steps(ctx):
    from probes.checks import models

    torch = ctx.torch
    budget = DEEP_BUDGET_S if _deep(ctx) else BUDGET_S
    figures = []
    for name in ("resnet", "transformer"):
        timings = []
        for device in ([ctx.device] if ctx.is_cpu else [ctx.device, "cpu"]):
            model, x, y = models.build(torch, name)
            model = model.to(device)
            x, y = x.to(device), y.to(device)
            opt = torch.optim.SGD(model.parameters(), lr=models.LR)

            def step(model=model, x=x, y=y, opt=opt, name=name):
                opt.zero_grad()
                models._loss(torch, name, model(x), y).backward()
                opt.step()

            timings.append(_timed(ctx, device, step, budget))
        figures.append(_figure("models.%s.step" % name, "s", timings[0], timings[-1]))
    return _result(ctx, figures, "training step time")


def _sync_counter(torch, device_type):
    from torch.utils._python_dispatch import TorchDispatchMode

    class Syncs(TorchDispatchMode):
        def __init__(self):
            TorchDispatchMode.__init__(self)
            self.count = 0
            self.ops = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            name = func._schema.name
            first = args[0] if args else None
            on_device = getattr(getattr(first, "device", None), "type", None) == device_type
            to_host = getattr(getattr(out, "device", None), "type", None) == "cpu"
            if on_device and (name == "aten::_local_scalar_dense" or (name in ("aten::_to_copy", "aten::copy_")
                                                                          and to_host)):
                self.count += 1
                self.ops[name] = self.ops.get(name, 0) + 1
            return out

    return Syncs()


def profile(ctx):
    from probes.checks import models

    torch = ctx.torch
    model, x, y = models.build(torch, "resnet")
    model = model.to(ctx.device)
    x, y = x.to(ctx.device), y.to(ctx.device)
    opt = torch.optim.SGD(model.parameters(), lr=models.LR)

    def step():
        opt.zero_grad()
        loss = models._loss(torch, "resnet", model(x), y)
        loss.backward()
        opt.step()
        return float(loss.detach())  # the training loop's usual sync: logging the loss

    step()
    counter = _sync_counter(torch, ctx.device_type)
    with counter:
        step()
    data = {"sync_ops": counter.ops}
    figures = [_figure("profile.sync_points", "count", float(counter.count), note="host<->device syncs in one "
                       "ResNet-style step (item(), device-to-host copies); the loss.item() is one")]
    activity_name = {"cuda": "CUDA", "xpu": "XPU"}.get(ctx.device_type)
    if activity_name is None and ctx.privateuse1 == ctx.device_type:
        activity_name = "PrivateUse1"
    try:
        activities = [torch.profiler.ProfilerActivity.CPU]
        device_activity = getattr(torch.profiler.ProfilerActivity, activity_name, None) if activity_name else None
        if device_activity is not None and not ctx.is_cpu:
            activities.append(device_activity)
        with torch.profiler.profile(activities=activities) as prof:
            step()
        events = prof.key_averages()
        device_key = "self_device_time_total" if device_activity is not None else None

        def cost(e):
            value = getattr(e, device_key, 0) if device_key else 0
            return value or getattr(e, "self_cpu_time_total", 0)

        top = sorted((e for e in events if e.key.startswith("aten::")), key=cost, reverse=True)[:8]
        data["top_ops"] = [{"op": e.key, "calls": int(e.count), "self_us": float(cost(e))} for e in top]
        data["time_source"] = "device" if device_key and any(getattr(e, device_key, 0) for e in top) else "host"
    except Exception as exc:
        data["profiler_error"] = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
    return _result(ctx, figures, "ResNet-style step profile", **data)


def _figures_check(fn):
    run = device_failure(fn)
    run.__name__ = fn.__name__
    return run


def plan(ctx):
    return [checks.Check("perf.%s" % fn.__name__, "perf", _figures_check(fn))
            for fn in (matmul, elementwise, copies, latency, model_steps, profile)]
