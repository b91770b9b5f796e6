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

How a figure is taken: one warm-up call, then ``SAMPLES`` timed samples (each repeats the call until it lasts
``SAMPLE_S``, ``MATMUL_SAMPLE_S`` for the matmul, and synchronizes at its end); the figure is the median sample,
with ``samples``, ``spread`` ((max - min) / median) and the intra-op ``threads``. A spread over ``MAX_SPREAD``
marks the figure ``valid: false`` with the reason (a busy host), as does a CPU fallback (the worker). Where the
CPU does the work (the device is the CPU: matmul, elementwise), ``cpu_share`` is the share of the sampling's
wall time the worker's busy threads ran: on Linux each thread's CPU time (``/proc/self/task``), over the wall
time of the threads that ran at least ``BUSY_THREAD`` of it (a kernel that runs on one of torch's threads,
such as a CPU's float16 fallback, leaves the others idle: that is the kernel, not sharing); elsewhere the
process CPU time over wall time x torch's threads. Under ``MIN_CPU_SHARE`` other processes were running on the
same cores, the figure measures the sharing as much as the CPU, and it is marked ``valid: false`` saying so
(what five runs on a shared host showed: the figure moved with the load, 0.002-0.25 of an independent timing,
while its spread looked fine).

Peaks: a device's peak comes from ``probes.checks.peaks`` (sourced datasheets). No datasheet applies to a host
CPU, so on the CPU the peak is measured: the fastest sample of the same figure in this run (the best the host
did, ``peak_source`` says so), and ``peak_fraction`` is how far the median fell below it. Sizes are chosen to
reach the regime a figure names: the matmul doubles n from ``MATMUL_N`` while a call is shorter than
``MIN_CALL_S`` (compute-bound or memory-bound by the roofline, against the sourced or measured bandwidth), and
shrinks it where a call at ``MATMUL_N`` lasts longer than ``MAX_CALL_S`` (a slow kernel, such as a CPU's
float16 fallback at 1 GFLOP/s: compute-bound at the smaller size too, and its figure costs seconds, not the
half minute ten calls at n=1024 took),
the elementwise figure moves 128 MiB per call (memory-bound, past any last-level cache), the latencies are
latency-bound. The group runs alone (``registry``: no other worker on the cores) and records the load average.

A check is ``passed`` when it measured (the figures are the answer), ``failed`` when ``synchronize()`` raised
(a timing would stop before the work did: no figure), ``skipped`` on CPU-only parts that do not apply,
``unsupported`` when the device lacks what a measurement needs.
"""

import os
import time
from typing import Any, Dict

from probes.checks import outcome as checks
from probes.checks import peaks
from probes.checks.smoke import device_failure

SAMPLES = 5  # timed samples per figure (the median is reported, with their spread); --deep: DEEP_SAMPLES
DEEP_SAMPLES = 11
SAMPLE_S = 0.02  # a sample repeats the call until it lasts this long (one call when a call lasts longer)
#: the matmul's samples are longer: its figure is the headline, and a 0.1 s window is what a scheduler's
#: time slices average over (5 samples: about half a second per dtype, against torch.utils.benchmark's 1 s)
MATMUL_SAMPLE_S = 0.1
#: the worker's share of its threads' CPU time while sampling, below which the figure is not the CPU's speed
MIN_CPU_SHARE = 0.75
#: a thread that ran at least this share of the sampling's wall time did the kernel's work (the others idled)
BUSY_THREAD = 0.25
MAX_CALLS = 1000
#: the samples' spread ((max - min) / median) above which a figure is marked invalid: the host was busy
MAX_SPREAD = 1.0
MATMUL_N = 1024  # the first size tried; doubled while one call is shorter than MIN_CALL_S (a fast device)
MAX_MATMUL_N = 8192
MIN_CALL_S = 0.002
#: a matmul call longer than this at MATMUL_N is a slow kernel: n shrinks (by the n^3 work) to a call this long
MAX_CALL_S = 0.25
MIN_MATMUL_N = 128
ELEMENTS = 1 << 24  # 64 MiB of float32 read and 64 MiB written per call: past any CPU's last-level cache
COPY_BYTES = 4 << 20
DEEP_COPY_BYTES = 64 << 20


class SyncFailed(Exception):
    """The device's synchronize() raised: a timing would stop before the work did, so no figure stands."""


class Timing(object):
    __slots__ = ("seconds", "spread", "samples", "calls", "best", "cpu_share")

    def __init__(self, seconds, spread, samples, calls, best=None, cpu_share=None):
        self.seconds, self.spread, self.samples, self.calls = seconds, spread, samples, calls
        self.best = best if best is not None else seconds  # the fastest sample's seconds per call
        self.cpu_share = cpu_share  # process CPU time / (wall time x threads) while sampling; None: not judged


def _deep(ctx):
    return bool(ctx.options.get("deep"))


def _sync(ctx, device):
    if str(device) == "cpu":
        return lambda: None

    def sync():
        try:
            ctx.synchronize()
        except Exception as exc:
            text = str(exc).splitlines()[0][:300] if str(exc) else ""
            raise SyncFailed("%s: %s" % (type(exc).__name__, text)) from exc

    return sync


def _timed(ctx, device, fn, samples=None, sample_s=SAMPLE_S, busy=False):
    """Seconds per call of ``fn`` on ``device``: one warm-up call, then ``samples`` timed samples (each repeats
    the call until it lasts ``sample_s``, synchronizing at its end); the median sample and the spread. ``busy``:
    the CPU does the work on all of torch's threads, so the CPU share the worker got is measured too."""
    sync = _sync(ctx, device)
    samples = samples or (DEEP_SAMPLES if _deep(ctx) else SAMPLES)
    one = _one_call_s(ctx, device, fn)
    calls = max(1, min(MAX_CALLS, int(sample_s / max(one, 1e-7))))
    times = []
    judged = busy and str(device) == "cpu"
    threads_start = _thread_cpu_s() if judged else None
    cpu_start, wall_start = time.process_time(), time.perf_counter()
    for _ in range(samples):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        times.append((time.perf_counter() - start) / calls)
    share = None
    if judged:
        wall = time.perf_counter() - wall_start
        cpu = time.process_time() - cpu_start
        share = _cpu_share(ctx, wall, cpu, threads_start, _thread_cpu_s()) if wall > 0 else None
    times.sort()
    median = times[len(times) // 2]
    return Timing(median, (times[-1] - times[0]) / median if median > 0 else 0.0, samples, calls, times[0], share)


def _thread_cpu_s():
    """Each thread's CPU seconds so far, by thread id (Linux's /proc/self/task); None where it cannot be read."""
    try:
        tids = os.listdir("/proc/self/task")
        tick = float(os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, AttributeError):
        return None
    seconds = {}
    for tid in tids:
        try:
            with open("/proc/self/task/%s/stat" % tid) as f:
                fields = f.read().rpartition(")")[2].split()
            seconds[tid] = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        except (OSError, ValueError, IndexError):
            continue  # the thread ended meanwhile
    return seconds or None


def _cpu_share(ctx, wall, cpu, before, after):
    """The share of ``wall`` the threads doing the work ran: from each thread's CPU time where it was read
    (``before``/``after``), counting the threads that ran at least ``BUSY_THREAD`` of it; else the process's
    ``cpu`` seconds over ``wall`` x torch's threads."""
    if before is not None and after is not None:
        ran = [after[tid] - before.get(tid, 0.0) for tid in after]
        busy = [seconds for seconds in ran if seconds >= BUSY_THREAD * wall]
        if busy:
            return min(1.0, sum(busy) / (wall * len(busy)))
    return cpu / (wall * max(1, int(ctx.torch.get_num_threads())))


def _figure(name, unit, value, cpu_value=None, peak=None, note=None, timing=None, regime=None, peak_source=None):
    figure: Dict[str, Any] = {"name": name, "unit": unit, "value": value, "cpu_value": cpu_value}
    if peak and value is not None:
        figure["peak_fraction"] = value / peak
        if peak_source:
            figure["peak_source"] = peak_source[:400]
    if note:
        figure["note"] = note[:400]
    if regime:
        figure["regime"] = regime
    if timing is not None:
        figure.update(samples=timing.samples, spread=round(timing.spread, 4), valid=True)
        reasons = []
        if timing.spread > MAX_SPREAD:
            reasons.append("the %d samples spread by %.0f%% of their median (at most %.0f%%): the host was busy or "
                           "the clock unsteady" % (timing.samples, 100 * timing.spread, 100 * MAX_SPREAD))
        if timing.cpu_share is not None:
            figure["cpu_share"] = round(timing.cpu_share, 3)
            if timing.cpu_share < MIN_CPU_SHARE:
                reasons.append("the worker's busy threads ran %.0f%% of the time while measuring (at least %.0f%%): "
                               "other processes were running on the same cores, so the figure is the share it "
                               "got, not the CPU's speed" % (100 * timing.cpu_share, 100 * MIN_CPU_SHARE))
        if reasons:
            figure["valid"] = False
            figure["invalid_reason"] = "; ".join(reasons)[:400]
    return figure


def _measured_peak(amount, timing, what):
    """The CPU's own peak (no datasheet applies): the fastest sample of this figure; (rate, source)."""
    if timing is None or not timing.best:
        return None, None
    return amount / timing.best, ("measured on this host (no datasheet applies to a CPU): the fastest of the %d "
                                  "samples of %s" % (timing.samples, what))


def _rate(amount, timing):
    return amount / timing.seconds if timing.seconds > 0 else None


def _peak(ctx):
    if ctx.is_cpu or ctx.device_module is None:
        return None
    getter = getattr(ctx.device_module, "get_device_name", None)
    try:
        name = getter(ctx.index) if getter is not None else None
    except Exception:
        name = None
    return peaks.lookup(name)


def _conditions(ctx):
    """What the figures were measured under: torch's intra-op threads, the host's cores and load."""
    torch = ctx.torch
    data: Dict[str, Any] = {"threads": int(torch.get_num_threads()), "cpu_count": os.cpu_count()}
    try:
        data["loadavg_1m"] = round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        pass
    return data


def _result(ctx, figures, what, **data):
    conditions = _conditions(ctx)
    for figure in figures:
        figure.setdefault("threads", conditions["threads"])
    data["figures"] = figures
    data.update(conditions)
    peak = _peak(ctx)
    if peak:
        data["peak_source"] = peak["source"]
    shown = ", ".join("%s %.3g %s" % (f["name"], f["value"], f["unit"]) for f in figures if f["value"] is not None)
    invalid = [f["name"] for f in figures if f.get("valid") is False]
    detail = "%s on %s: %s" % (what, ctx.device, shown or "nothing measurable")
    if invalid:
        detail += "; not to be trusted: %s" % ", ".join(invalid)
    return checks.passed(detail, **data)


def _matmul_operands(ctx, dtype):
    """The n x n operands the figure is taken at, on the CPU and on the device (a_cpu, b_cpu, a, b): n from
    ``MATMUL_N``, doubled while a call is shorter than ``MIN_CALL_S`` (up to ``MAX_MATMUL_N``), or shrunk once
    where a call at ``MATMUL_N`` lasts longer than ``MAX_CALL_S``."""
    n = MATMUL_N
    while True:
        operands = _operands(ctx, dtype, n)
        call_s = _one_call_s(ctx, ctx.device, lambda a=operands[2], b=operands[3]: ctx.torch.mm(a, b))
        if call_s > MAX_CALL_S and n == MATMUL_N:
            return _operands(ctx, dtype, _smaller_matmul_n(n, call_s))
        if call_s >= MIN_CALL_S or n >= MAX_MATMUL_N:
            return operands
        n *= 2  # too quick to be compute-bound: launch overhead would dominate


def _operands(ctx, dtype, n):
    torch = ctx.torch
    gen = torch.Generator().manual_seed(0)
    a_cpu = torch.randn(n, n, generator=gen).to(dtype)
    b_cpu = torch.randn(n, n, generator=gen).to(dtype)
    return a_cpu, b_cpu, a_cpu.to(ctx.device), b_cpu.to(ctx.device)


def _one_call_s(ctx, device, fn):
    """Seconds of one call of ``fn`` on ``device`` after a warm-up call (the first call pays one-time costs: a
    library's handle, the kernel's load)."""
    sync = _sync(ctx, device)
    fn()
    sync()
    start = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - start


def _smaller_matmul_n(n, call_s):
    """The size whose call lasts about ``MAX_CALL_S`` when a call at ``n`` lasted ``call_s`` (the work grows as
    n^3), a multiple of 64, at least ``MIN_MATMUL_N``."""
    scaled = int(n * (MAX_CALL_S / call_s) ** (1.0 / 3.0)) // 64 * 64
    return max(MIN_MATMUL_N, min(n, scaled))


def _matmul_regime(n, dtype_bytes, seconds, rate, bandwidth):
    """(regime, note) for an n x n matmul, by the roofline: compute-bound when memory at ``bandwidth`` (B/s, the
    device's sourced peak or the elementwise figure measured before) could feed its arithmetic intensity (FLOP
    per byte of its three matrices) at least twice as fast as it computed; latency-bound when a call still
    took under ``MIN_CALL_S``; null when no bandwidth is known."""
    intensity = 2.0 * n / (3.0 * dtype_bytes)
    note = "n=%d, %.0f FLOP/byte" % (n, intensity)
    if seconds < MIN_CALL_S:
        return "latency-bound", note + "; a call took %.2g ms even at the largest size" % (seconds * 1e3)
    if not bandwidth or not rate:
        return None, note + "; no bandwidth known to place it on the roofline"
    fed = intensity * bandwidth
    note += "; memory at %.3g GB/s could feed %.3g GFLOP/s" % (bandwidth / 1e9, fed / 1e9)
    return ("compute-bound" if fed >= 2 * rate else "memory-bound"), note


def matmul(ctx):
    torch = ctx.torch
    peak = _peak(ctx) or {}
    figures = []
    sizes = []
    for name in ("float32", "float16", "bfloat16"):
        if name != "float32" and ctx.dtype_problem(name):
            continue
        dtype = getattr(torch, name)
        a_cpu, b_cpu, a, b = _matmul_operands(ctx, dtype)
        n = a.shape[0]
        timing = _timed(ctx, ctx.device, lambda a=a, b=b: torch.mm(a, b), sample_s=MATMUL_SAMPLE_S, busy=True)
        flops = 2.0 * n ** 3
        try:
            cpu = _rate(flops, timing) if ctx.is_cpu else \
                _rate(flops, _timed(ctx, "cpu", lambda a=a_cpu, b=b_cpu: torch.mm(a, b), samples=3))
        except Exception:  # CPU lacks a half kernel in an old torch
            cpu = None
        bandwidth = peak.get("memory_bw") or ctx.__dict__.get("_perf_bandwidth")
        regime, note = _matmul_regime(n, a.element_size(), timing.seconds, _rate(flops, timing), bandwidth)
        # a dtype whose peak is unknown (None) gets no fraction of peak
        peak_flops, source = (peak.get("flops") or {}).get(name), peak.get("source")
        if ctx.is_cpu:
            peak_flops, source = _measured_peak(flops, timing, "the %s matmul at n=%d" % (name, n))
        figures.append(_figure("matmul.%s" % name, "FLOP/s", _rate(flops, timing), cpu, peak_flops, note=note,
                               timing=timing, regime=regime, peak_source=source))
        sizes.append(n)
    return _result(ctx, figures, "square matmul", n=sizes)


def elementwise(ctx):
    torch = ctx.torch
    count = ELEMENTS
    x_cpu = torch.ones(count)
    x = x_cpu.to(ctx.device)
    y = torch.empty_like(x)
    moved = 8.0 * count  # 4 bytes read, 4 written per element
    timing = _timed(ctx, ctx.device, lambda: torch.mul(x, 2.0, out=y), busy=True)
    if ctx.is_cpu:
        cpu = _rate(moved, timing)
    else:
        y_cpu = torch.empty_like(x_cpu)
        cpu = _rate(moved, _timed(ctx, "cpu", lambda: torch.mul(x_cpu, 2.0, out=y_cpu), samples=3))
    peak = _peak(ctx) or {}
    ctx.__dict__["_perf_bandwidth"] = _rate(moved, timing)  # the matmul's roofline where no peak is sourced
    peak_bw, source = peak.get("memory_bw"), peak.get("source")
    if ctx.is_cpu:
        peak_bw, source = _measured_peak(moved, timing, "y = x * 2")
    figure = _figure("elementwise.bandwidth", "B/s", _rate(moved, timing), cpu, peak_bw,
                     note="y = x * 2 into a preallocated y: %d MiB read and written per call (0.125 FLOP/byte)"
                     % (4 * count >> 20), timing=timing, regime="memory-bound", peak_source=source)
    return _result(ctx, [figure], "x * 2 over %d float32" % count, elements=count)


def copies(ctx):
    if ctx.is_cpu:
        return checks.skipped("device is CPU: there is no host<->device copy to time")
    torch = ctx.torch
    nbytes = DEEP_COPY_BYTES if _deep(ctx) else COPY_BYTES
    host = torch.ones(nbytes // 4)
    dev = host.to(ctx.device)
    cpu_copy = _rate(nbytes, _timed(ctx, "cpu", lambda: host.clone(), samples=3))
    h2d = _timed(ctx, ctx.device, lambda: host.to(ctx.device))
    d2h = _timed(ctx, ctx.device, lambda: dev.to("cpu"))
    figures = [_figure("copy.h2d.pageable", "B/s", _rate(nbytes, h2d), cpu_copy,
                       note="CPU figure: a host-to-host clone of the same size", timing=h2d),
               _figure("copy.d2h.pageable", "B/s", _rate(nbytes, d2h), cpu_copy, timing=d2h)]
    data: Dict[str, Any] = {"bytes": nbytes}
    try:
        pinned = host.pin_memory()
        out = torch.empty(nbytes // 4).pin_memory()
    except Exception as exc:
        data["pinned_error"] = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        figures.append(_figure("copy.h2d.pinned", "B/s", None, note="pin_memory() failed: %s" % data["pinned_error"]))
        return _result(ctx, figures, "%d-byte copies (no pinned memory)" % nbytes, **data)
    h2d_pinned = _timed(ctx, ctx.device, lambda: pinned.to(ctx.device, non_blocking=True))
    d2h_pinned = _timed(ctx, ctx.device, lambda: out.copy_(dev, non_blocking=True))
    figures += [_figure("copy.h2d.pinned", "B/s", _rate(nbytes, h2d_pinned), timing=h2d_pinned),
                _figure("copy.d2h.pinned", "B/s", _rate(nbytes, d2h_pinned), timing=d2h_pinned),
                _figure("copy.pinned_speedup", "ratio", h2d.seconds / h2d_pinned.seconds,
                        note="pinned / pageable host-to-device bandwidth: > 1 means pinning helps")]
    return _result(ctx, figures, "%d-byte copies" % nbytes, **data)


def latency(ctx):
    torch = ctx.torch
    x = torch.zeros(16, device=ctx.device)
    x_cpu = torch.zeros(16)
    launch = _timed(ctx, ctx.device, lambda: x.add_(1.0))
    cpu_launch = launch.seconds if ctx.is_cpu else _timed(ctx, "cpu", lambda: x_cpu.add_(1.0), samples=3).seconds
    figures = [_figure("latency.launch", "s", launch.seconds, cpu_launch, note="a 16-element add_, back to back",
                       timing=launch, regime="latency-bound")]
    if not ctx.is_cpu:
        sync = _sync(ctx, ctx.device)

        def op_and_sync():
            x.add_(1.0)
            sync()

        synced = _timed(ctx, "cpu", op_and_sync)  # "cpu": the call synchronizes itself
        figures.append(_figure("latency.synchronize", "s", max(0.0, synced.seconds - launch.seconds),
                               note="a tiny op then synchronize(), less the op's own time", timing=synced,
                               regime="latency-bound"))
    return _result(ctx, figures, "launch and synchronize latency")


def model_steps(ctx):
    from probes.checks import models

    torch = ctx.torch
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

            timings.append(_timed(ctx, device, step, samples=None if device == ctx.device else 3))
        figures.append(_figure("models.%s.step" % name, "s", timings[0].seconds, timings[-1].seconds,
                               timing=timings[0]))
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
    def guarded(ctx):
        try:
            return fn(ctx)
        except SyncFailed as exc:
            return checks.failed("%s: synchronize() on %s raised %s; no timing can be trusted (it would stop before "
                                 "the work did), so no figure is given" % (fn.__name__, ctx.device, exc),
                                 sync_error=str(exc), figures=[])

    guarded.__name__ = fn.__name__
    run = device_failure(guarded)
    run.__name__ = fn.__name__
    return run


def plan(ctx):
    return [checks.Check("perf.%s" % fn.__name__, "perf", _figures_check(fn))
            for fn in (elementwise, matmul, copies, latency, model_steps, profile)]
