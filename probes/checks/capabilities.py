"""detect: the device-generic capabilities a backend may or may not implement.

Streams and events, more than one device, and ``torch.accelerator``'s synchronize, capability and memory
calls. Every API is feature-detected (torch 2.0 to today). A backend that answers "I do not implement
this" (``error_texts.backend_declines``) gets ``unsupported`` with its own words (one status for "not
implemented" in every group); any other exception from a
backend that has the API escapes the check and is reported as ``error`` with its traceback, and a wrong
answer is ``failed``.
"""

import functools
from typing import Any, Dict

from probes.checks import error_texts
from probes.checks import outcome as checks

PROBE_BYTES = 1 << 20  # one allocation, large enough to show up in any allocator's counters


def _declined(ctx, what, exc, **data):
    """``unsupported`` when ``exc`` is the backend declining ``what`` (it does not implement it); otherwise
    re-raise it."""
    phrase = error_texts.backend_declines(exc)
    if phrase is None:
        raise exc
    return checks.unsupported("%s: %s says \"%s\"" % (what, ctx.backend, phrase), declined=phrase, **data)


def _not_cpu(reason):
    def gate(fn):
        def run(ctx):
            if ctx.device is None:
                return checks.skipped("not run: %s" % (ctx.device_error or "no device to probe"))
            if ctx.is_cpu:
                return checks.skipped(reason)
            return fn(ctx)

        return run

    return gate


def _stream_context(ctx, stream):
    """A context making ``stream`` current on the device: ``torch.<dev>.stream(s)``, else ``with s:``."""
    module = ctx.device_module
    maker = getattr(module, "stream", None) if module is not None else None
    if maker is not None:
        return maker(stream)
    if hasattr(stream, "__enter__"):
        return stream
    return None


def _current_stream(ctx, stream_cls):
    module = ctx.device_module
    getter = getattr(module, "current_stream", None) if module is not None else None
    if getter is not None:
        return getter()
    accelerator = getattr(ctx.torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "current_stream"):
        return accelerator.current_stream()
    return None


#: kernels timed in the second measurement: 20 times the first's, so real events must say it took longer
LONG_WORK = 400


def _timed_events(ctx, make_event, x, kernels):
    """(elapsed_ms by the events, wall ms on the host) around ``kernels`` elementwise kernels on the current
    stream: device time between two records cannot exceed the host's time from before the first record to
    after the second completed."""
    import time

    start, end = make_event(enable_timing=True), make_event(enable_timing=True)
    ctx.synchronize()
    begun = time.perf_counter()
    start.record()
    y = x
    for _ in range(kernels):
        y = y * 1.0001 + 1.0
    end.record()
    end.synchronize()
    wall_ms = (time.perf_counter() - begun) * 1e3
    return float(start.elapsed_time(end)), wall_ms


@_not_cpu("cpu has no streams or events")
def streams_events(ctx):
    """Work queued on a side stream, ordered against the current stream with ``wait_stream`` and ``wait_event``,
    timed with ``Event.elapsed_time``: streams and events that do nothing cannot pass (the side stream's
    result must arrive, and timing events around real work must measure time)."""
    torch = ctx.torch
    module = ctx.device_module
    stream_cls, event_cls = getattr(module, "Stream", None), getattr(module, "Event", None)
    if stream_cls is not None and event_cls is not None:  # torch.cuda / torch.xpu: the Event takes no device
        make_event = event_cls
    elif hasattr(torch, "Event"):  # the device-generic pair, where torch has it: both take the device
        stream_cls, event_cls = torch.Stream, torch.Event
        make_event = functools.partial(torch.Event, device=ctx.device)
    else:
        return checks.unsupported("torch %s has no stream and event classes for %s (no torch.%s.Stream/Event, no "
                                  "torch.Event)" % (torch.__version__, ctx.device_type, ctx.device_type))
    data = {"stream_class": _qualname(stream_cls), "event_class": _qualname(event_cls)}
    x = torch.arange(1 << 16, device=ctx.device, dtype=torch.float32)
    try:
        current = _current_stream(ctx, stream_cls)
        side = stream_cls(device=ctx.device)
        start, end = make_event(enable_timing=True), make_event(enable_timing=True)
        context = _stream_context(ctx, side)
        if current is None or context is None:
            return checks.unsupported("%s offers no current_stream() or no way to make a stream current" % ctx.backend,
                                      **data)
        side.wait_stream(current)  # x was made on the current stream
        with context:
            start.record(side)
            y = x
            for _ in range(20):  # real work between the timing events
                y = y * 1.0001 + 1.0
            end.record(side)
        current.wait_event(end)  # z reads y, produced on the side stream
        z = y * 2.0
        end.synchronize()
        ms = float(start.elapsed_time(end))
        current.synchronize()
        event_done, stream_done = bool(end.query()), bool(side.query())
        long_ms, wall_ms = _timed_events(ctx, make_event, x, LONG_WORK)
    except TypeError:  # an Event class without enable_timing
        return checks.unsupported("%s's events cannot time (no enable_timing)" % _qualname(event_cls), **data)
    except Exception as exc:
        return _declined(ctx, "streams and events are not supported", exc, **data)
    want = x.cpu()
    for _ in range(20):
        want = want * 1.0001 + 1.0
    err = float((z.cpu() - want * 2.0).abs().max() / want.abs().max())
    data.update(event_query=event_done, stream_query=stream_done, elapsed_ms=ms, rel_err=err)
    if not (event_done and stream_done):
        return checks.failed("after synchronize, query() says unfinished (event %s, stream %s)"
                             % (event_done, stream_done), **data)
    if err > 1e-5:
        return checks.failed("work ordered with wait_stream/wait_event across streams gave wrong values "
                             "(relative error %.3g)" % err, **data)
    if not ms > 0:
        return checks.failed("Event.elapsed_time around 40 kernels on a side stream is %r ms: the events record "
                             "nothing" % ms, **data)
    data.update(long_elapsed_ms=long_ms, long_wall_ms=wall_ms)
    if long_ms > wall_ms * 1.05 + 0.05:
        return checks.failed("Event.elapsed_time says %.3f ms for work the host saw finish in %.3f ms: the events do "
                             "not measure the work" % (long_ms, wall_ms), **data)
    if not long_ms > 2 * ms:
        return checks.failed("Event.elapsed_time around %d times the work is %.3f ms, against %.3f ms: the events do "
                             "not measure the work" % (LONG_WORK // 20, long_ms, ms), **data)
    return checks.passed("side-stream work ordered with wait_stream/wait_event is correct; elapsed_time %.3f ms"
                         % ms, **data)


def _qualname(cls):
    return "%s.%s" % (getattr(cls, "__module__", "?"), getattr(cls, "__name__", "?"))


def multi_device(ctx, devices):
    if ctx.device is None:
        return checks.skipped("not run: %s" % (ctx.device_error or "no device to probe"))
    count = sum(1 for d in devices if d["type"] == ctx.device_type)
    if count < 2:
        return checks.skipped("one device: %d %s device visible, so cross-device copies cannot be checked"
                              % (count, ctx.device_type), device_count=count)
    torch = ctx.torch
    x = torch.arange(4096, dtype=torch.float32)
    first = x.to("%s:0" % ctx.device_type)
    second = first.to("%s:1" % ctx.device_type)
    back = second.cpu()
    data = {"device_count": count, "copied_to": str(second.device)}
    if str(second.device) != "%s:1" % ctx.device_type or not bool(torch.equal(back, x)):
        return checks.failed("copying %s:0 -> %s:1 changed the tensor or its device (%s)"
                             % (ctx.device_type, ctx.device_type, second.device), **data)
    return checks.passed("%d %s devices; a copy from device 0 to device 1 is exact"
                         % (count, ctx.device_type), **data)


def _accelerator_fn(ctx, name):
    """(torch.accelerator.<name>, None) when it applies to the probed device, else (None, skip outcome)."""
    torch = ctx.torch
    accelerator = getattr(torch, "accelerator", None)
    fn = getattr(accelerator, name, None)
    if accelerator is None or fn is None:
        return None, checks.skipped("torch %s has no torch.accelerator.%s" % (torch.__version__, name))
    try:
        current = accelerator.current_accelerator()
    except Exception:  # torch 2.6 raises where there is no accelerator
        current = None
    if current is None or current.type != ctx.device_type:
        return None, checks.skipped("torch.accelerator's accelerator is %s, not the probed %s"
                                    % (getattr(current, "type", None), ctx.device_type))
    return fn, None


@_not_cpu("device is CPU: torch.accelerator covers accelerators only")
def accelerator_synchronize(ctx):
    fn, skip = _accelerator_fn(ctx, "synchronize")
    if skip is not None:
        return skip
    x = ctx.torch.ones(1024, device=ctx.device) * 3
    try:
        fn(ctx.index)
    except Exception as exc:
        return _declined(ctx, "torch.accelerator.synchronize is not supported", exc)
    total = float(x.sum().cpu())
    if total != 3072.0:
        return checks.failed("work before synchronize gave %r, expected 3072.0" % total)
    return checks.passed("torch.accelerator.synchronize(%d) works on %s" % (ctx.index, ctx.device))


@_not_cpu("device is CPU: torch.accelerator covers accelerators only")
def accelerator_capability(ctx):
    fn, skip = _accelerator_fn(ctx, "get_device_capability")
    if skip is not None:
        return skip
    try:
        capability = fn(ctx.index)
    except Exception as exc:
        return _declined(ctx, "torch.accelerator.get_device_capability is not supported", exc)
    if not isinstance(capability, dict):
        return checks.failed("get_device_capability returned %s, expected a dict" % type(capability).__name__)
    shown: Dict[str, Any] = {}
    for key, value in capability.items():  # {'supported_dtypes': {torch.float32, ...}} -> JSON
        if isinstance(value, (set, list, tuple)):
            shown[str(key)] = sorted(str(v).replace("torch.", "") for v in value)
        else:
            shown[str(key)] = str(value)
    return checks.passed("torch.accelerator.get_device_capability(%d): %s"
                         % (ctx.index, ", ".join(sorted(shown)) or "empty"), capability=shown)


@_not_cpu("device is CPU: torch.accelerator covers accelerators only")
def accelerator_memory(ctx):
    """The generic memory API; the allocator group uses the device module's (torch.<device>.memory_*)."""
    fn, skip = _accelerator_fn(ctx, "memory_allocated")
    if skip is not None:
        return skip
    accelerator = ctx.torch.accelerator
    where = "the allocator group uses torch.%s's memory API" % ctx.device_type
    try:
        before = int(fn(ctx.index))
    except Exception as exc:
        return _declined(ctx, "torch.accelerator memory API is not supported (%s)" % where, exc)
    block = ctx.torch.empty(PROBE_BYTES, dtype=ctx.torch.uint8, device=ctx.device)
    after = int(fn(ctx.index))
    reserved = stats = None
    if hasattr(accelerator, "memory_reserved"):
        reserved = int(accelerator.memory_reserved(ctx.index))
    if hasattr(accelerator, "memory_stats"):
        stats = accelerator.memory_stats(ctx.index)
    del block
    data = {"allocated_before": before, "allocated_after": after, "reserved": reserved,
            "stats_keys": len(stats) if stats is not None else None}
    if after - before < PROBE_BYTES:
        return checks.failed("memory_allocated grew by %d bytes after allocating %d"
                             % (after - before, PROBE_BYTES), **data)
    if reserved is not None and reserved < after:
        return checks.failed("memory_reserved (%d) is below memory_allocated (%d)" % (reserved, after),
                             **data)
    return checks.passed("torch.accelerator.memory_allocated grew by %d bytes for a %d-byte tensor"
                         % (after - before, PROBE_BYTES), **data)


def plan(ctx, devices):
    return [
        checks.Check("detect.streams_events", "detect", streams_events),
        checks.Check("detect.multi_device", "detect", lambda c: multi_device(c, devices)),
        checks.Check("detect.accelerator_synchronize", "detect", accelerator_synchronize),
        checks.Check("detect.accelerator_capability", "detect", accelerator_capability),
        checks.Check("detect.accelerator_memory", "detect", accelerator_memory),
    ]
