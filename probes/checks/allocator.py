"""allocator: the device's caching allocator behaves: stats move, freed blocks are reused, the cache can
be emptied, an impossible allocation raises OOM and the process carries on, the config variable works, and
the device has (and really holds) the memory a training run needs.

On CPU every check is skipped: CPU tensors go through the system allocator and torch keeps no
allocator statistics for them.
"""

import gc
import json
import os
import subprocess
import sys

from probes.checks import error_texts
from probes.checks import outcome as checks
from probes.checks.memory_api import MemoryApi

MIB = 1 << 20
CPU_REASON = (
    "device is CPU: CPU tensors use the system allocator and torch keeps no device allocator statistics "
    "for them (memory_allocated/memory_stats exist only for accelerator allocators), so there is nothing "
    "to measure"
)
# Allocator configuration variables per backend family, most specific first. PYTORCH_ALLOC_CONF is the
# device-generic name from torch 2.8; the CUDA name stays an alias (PrivateUse1 notes, section 5).
ALLOC_CONF_VARS = {
    "cuda": ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"),
    "rocm": ("PYTORCH_HIP_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"),
    "xpu": ("PYTORCH_XPU_ALLOC_CONF", "PYTORCH_ALLOC_CONF"),
    "npu": ("PYTORCH_NPU_ALLOC_CONF",),
    "mlu": ("PYTORCH_MLU_ALLOC_CONF",),
}
PROBE_SPLIT_MB = 64
_CHILD = r"""
import importlib, json, sys
if sys.argv[1]:
    importlib.import_module(sys.argv[1])
import torch
dev = torch.device(sys.argv[2])
mod = torch.get_device_module(dev.type) if hasattr(torch, "get_device_module") else getattr(torch, dev.type)
x = torch.empty(1 << 20, dtype=torch.uint8, device=dev)
print(json.dumps({"max_split_size": mod.memory_stats(dev).get("max_split_size")}))
"""


def _family(ctx):
    return "rocm" if ctx.device_type == "cuda" and ctx.hip_build else ctx.device_type


def _gated(fn):
    def run(ctx):
        if ctx.is_cpu:
            return checks.skipped(CPU_REASON)
        api = MemoryApi(ctx)
        if not api.available:
            return checks.skipped("backend %s exposes no memory statistics: its device module has no working "
                                  "memory_allocated and torch.accelerator.memory is absent or unsupported"
                                  % ctx.backend)
        return fn(ctx, api)

    return run


def _block(ctx, nbytes):
    return ctx.torch.empty(nbytes, dtype=ctx.torch.uint8, device=ctx.device)


def stats_move(ctx, api):
    gc.collect()
    if api.has("reset_peak"):
        api.reset_peak()
    base = api.allocated()
    block = _block(ctx, 8 * MIB)
    ctx.synchronize()
    grown = api.allocated()
    del block
    gc.collect()
    ctx.synchronize()
    shrunk = api.allocated()
    peak = api.peak() if api.has("peak") else None
    data = {"source": api.source, "base": base, "after_alloc": grown, "after_free": shrunk, "peak": peak}
    if grown < base + 8 * MIB:
        return checks.failed("allocated memory did not grow by 8 MiB (%d -> %d)" % (base, grown), **data)
    if shrunk > grown - 8 * MIB:
        return checks.failed("allocated memory did not shrink after free (%d -> %d)" % (grown, shrunk), **data)
    if peak is not None and peak < grown:
        return checks.failed("peak %d is below the allocation it saw (%d)" % (peak, grown), **data)
    return checks.passed("allocated grew by >= 8 MiB and shrank back; peak tracked (%s)" % api.source, **data)


def cache_reuse(ctx, api):
    if not api.has("reserved"):
        return checks.skipped("%s reports no reserved (cached) memory" % api.source)
    api.empty_cache()
    block = _block(ctx, 16 * MIB)
    del block
    gc.collect()
    first = api.reserved()
    for _ in range(5):
        block = _block(ctx, 16 * MIB)
        del block
    gc.collect()
    ctx.synchronize()
    again = api.reserved()
    data = {"source": api.source, "reserved_after_first": first, "reserved_after_repeats": again}
    if first < 16 * MIB:  # a caching allocator keeps the freed block: reserved stays > 0 after the free
        return checks.failed("reserved is %d bytes after a 16 MiB block was freed: the allocator caches nothing "
                             "(or does not report it)" % first, **data)
    if again > first:
        return checks.failed("reserved grew from %d to %d on repeated 16 MiB allocate/free: freed blocks are "
                             "not reused" % (first, again), **data)
    return checks.passed("repeated allocate/free reused the cached block (reserved stayed at %d)" % first, **data)


def empty_cache(ctx, api):
    if not api.has("reserved") or not api.has("empty_cache"):
        return checks.skipped("%s offers no reserved figure or no empty_cache()" % api.source)
    block = _block(ctx, 64 * MIB)
    del block
    gc.collect()
    ctx.synchronize()
    before = api.reserved()
    api.empty_cache()
    after = api.reserved()
    data = {"source": api.source, "reserved_before": before, "reserved_after": after}
    if before < 64 * MIB:
        return checks.failed("a freed 64 MiB block was not kept in the cache (reserved %d)" % before, **data)
    if after >= before:
        return checks.failed("empty_cache() did not return memory (reserved %d -> %d)" % (before, after), **data)
    return checks.passed("empty_cache() returned cached memory (%d -> %d)" % (before, after), **data)


def oom_recovery(ctx, api):
    torch = ctx.torch
    total = api.total()
    ask = total * 4 if total else 1 << 50
    base = api.allocated()
    try:
        huge = torch.empty(ask, dtype=torch.uint8, device=ctx.device)
    except Exception as exc:
        if not error_texts.is_oom(exc, torch):
            return checks.failed("an impossible allocation raised %s, not an out-of-memory error"
                                 % error_texts.first_line(exc), requested_bytes=ask)
        raised = type(exc).__module__ + "." + type(exc).__name__
    else:
        del huge
        return checks.failed("allocating %d bytes (4x the device) succeeded" % ask, requested_bytes=ask)
    x = torch.ones(1024, device=ctx.device)
    carried_on = float((x * 2).sum().cpu()) == 2048.0
    after = api.allocated()
    del x
    data = {"requested_bytes": ask, "total_bytes": total, "error_type": raised, "carried_on": carried_on,
            "allocated_before": base, "allocated_after": after}
    if not carried_on:
        return checks.failed("the device computed wrongly after the OOM", **data)
    return checks.passed("%s raised for %d bytes; the process carried on" % (raised, ask), **data)


def alloc_conf(ctx, api):
    names = ALLOC_CONF_VARS.get(_family(ctx))
    current = {}
    for name in ALLOC_CONF_VARS.get(_family(ctx), ()):
        current[name] = os.environ.get(name)
    if not names:
        return checks.skipped("no allocator configuration variable is known for backend %s" % ctx.backend)
    if "max_split_size" not in api.stats():
        return checks.skipped("%s.memory_stats() has no max_split_size, so the setting cannot be read back"
                              % api.source, variables=current)
    env = dict(os.environ)
    for name in names:  # set every alias to the same value so torch versions that read either agree
        env[name] = "max_split_size_mb:%d" % PROBE_SPLIT_MB
    plugin = ctx.plugin.get("plugin") or ""
    proc = subprocess.run([sys.executable, "-c", _CHILD, plugin, str(ctx.device)], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
    if proc.returncode != 0:
        return checks.failed("the allocator-config child failed: %s" % proc.stderr.strip()[-500:], variables=current)
    seen = json.loads(proc.stdout.strip().splitlines()[-1])["max_split_size"]
    data = {"variables": current, "set": names, "expected": PROBE_SPLIT_MB * MIB, "max_split_size": seen}
    if seen != PROBE_SPLIT_MB * MIB:
        return checks.failed("max_split_size_mb:%d in %s was not honoured (max_split_size %r)"
                             % (PROBE_SPLIT_MB, "/".join(names), seen), **data)
    return checks.passed("%s honoured (max_split_size %d MiB)" % ("/".join(names), PROBE_SPLIT_MB), **data)


#: the least device memory the probe calls usable: AdamW training holds 16 bytes per float32 parameter
#: (weights, gradients, two moments), so 1 GiB is a ~67M-parameter model before any activation
MIN_DEVICE_MEMORY = 1 << 30
#: what the check actually allocates (in 64 MiB blocks), at most half the reported total
HELD_BYTES = 256 * MIB


def capacity(ctx, api):
    """The device holds what a training run needs: it reports at least ``MIN_DEVICE_MEMORY`` and really holds
    ``HELD_BYTES`` in 64 MiB tensors (a device that reports more than it can hold fails too)."""
    torch = ctx.torch
    total = api.total()
    data = {"total_bytes": total, "min_bytes": MIN_DEVICE_MEMORY}
    if total is None:
        return checks.unsupported("%s reports no total memory (get_device_properties().total_memory, "
                                  "mem_get_info)" % ctx.backend, **data)
    if total < MIN_DEVICE_MEMORY:
        return checks.failed("%s reports %d MiB of memory, under the %d MiB a training run needs (AdamW holds 16 "
                             "bytes per float32 parameter)" % (ctx.device, total // MIB, MIN_DEVICE_MEMORY // MIB),
                             **data)
    want = min(HELD_BYTES, total // 2)
    held = []  # type: list
    try:
        while len(held) * 64 * MIB < want:
            held.append(torch.empty(64 * MIB, dtype=torch.uint8, device=ctx.device))
        ctx.synchronize()
    except Exception as exc:
        got = len(held) * 64 * MIB
        del held
        gc.collect()
        api.empty_cache()
        data.update(held_bytes=got, error=error_texts.first_line(exc, 300))
        return checks.failed("%s reports %d MiB but held only %d MiB before %s" % (
            ctx.device, total // MIB, got // MIB, data["error"]), **data)
    data["held_bytes"] = len(held) * 64 * MIB
    del held
    gc.collect()
    api.empty_cache()
    return checks.passed("%s reports %d MiB and holds %d MiB in 64 MiB tensors" % (
        ctx.device, total // MIB, data["held_bytes"] // MIB), **data)


def plan(ctx):
    return [
        checks.Check("allocator.stats_move", "allocator", _gated(stats_move)),
        checks.Check("allocator.cache_reuse", "allocator", _gated(cache_reuse)),
        checks.Check("allocator.empty_cache", "allocator", _gated(empty_cache)),
        checks.Check("allocator.oom_recovery", "allocator", _gated(oom_recovery)),
        checks.Check("allocator.alloc_conf", "allocator", _gated(alloc_conf)),
        checks.Check("allocator.capacity", "allocator", _gated(capacity)),
    ]
