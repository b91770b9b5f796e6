"""runtime: the device APIs around the kernels, as training code uses them (CUDA's names as the yardstick).

Pinned memory (``pin_memory()``, ``DataLoader(pin_memory=True)``), ``non_blocking`` copies, a device
``Generator``, ``get_rng_state``/``set_rng_state`` of the device module, ``torch.random.fork_rng``, the
profiler recording device activity, a training checkpoint (model, optimizer state, the loop's step, the CPU and
device RNG states) loaded back onto the device and resumed, activation checkpointing, and which
``torch.cuda``-style memory functions the device module has.

A backend that does not provide an API at all (NotImplementedError, the PrivateUse1 hooks' "You should
register ... and implement getNewGenerator", no such function) is ``unsupported``; an API that exists and
gives a wrong answer is ``failed``. On CPU the device-only checks are ``skipped``.
"""

import io
import warnings

from probes.checks import error_texts, smoke
from probes.checks import outcome as checks
from probes.checks.context import CPU_SAME_DEVICE

# the torch.cuda-style memory functions, in the order the report lists them
MEMORY_FUNCTIONS = ("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
                    "memory_stats", "memory_summary", "memory_snapshot", "mem_get_info", "empty_cache",
                    "reset_peak_memory_stats", "reset_accumulated_memory_stats", "set_per_process_memory_fraction",
                    "get_per_process_memory_fraction")
# the ones called with no argument (the others are only looked up: they change process state)
MEMORY_CALLED = ("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
                 "memory_stats", "memory_summary", "mem_get_info", "empty_cache")
MEMORY_CORE = ("memory_allocated", "memory_reserved", "max_memory_allocated", "memory_stats", "empty_cache")
# device type -> torch.profiler.ProfilerActivity member that records its kernels
PROFILER_ACTIVITY = {"cuda": "CUDA", "xpu": "XPU", "hpu": "HPU", "mtia": "MTIA"}


def _absent(exc):
    """True when ``exc`` says the backend does not provide the API (rather than getting it wrong)."""
    if isinstance(exc, (NotImplementedError, AttributeError)):
        return True
    text = str(exc)[:2000]
    return bool(error_texts.backend_declines(exc)) or "implement `" in text or "not implemented" in text.lower()


def _answer(ctx, what, exc, **data):
    data.update(error=error_texts.first_line(exc, 500))
    if _absent(exc):
        return checks.unsupported("%s: %s does not provide it (%s)" % (what, ctx.device_type, data["error"]), **data)
    return checks.failed("%s raised on %s: %s" % (what, ctx.device, data["error"]), **data)


def _device_only(fn):
    def run(ctx):
        if ctx.is_cpu:
            return checks.skipped("device is CPU: there is no device API to check")
        return fn(ctx)

    return run


def _note(ctx, detail):
    return detail + ("; " + CPU_SAME_DEVICE if ctx.is_cpu else "")


# -- memory transfer --------------------------------------------------------------------------------
def pin_memory(ctx):
    torch = ctx.torch
    x = torch.arange(64, dtype=torch.float32)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pinned = x.pin_memory()
    except Exception as exc:
        return _answer(ctx, "pin_memory()", exc)
    if not pinned.is_pinned():
        return checks.failed("pin_memory() returned a tensor that is not pinned", pinned=False)
    if not torch.equal(pinned, x):
        return checks.failed("pin_memory() changed the values")
    return checks.passed("pin_memory() gives page-locked memory for %s" % ctx.device_type, pinned=True)


def dataloader_pin_memory(ctx):
    torch = ctx.torch
    from torch.utils.data import DataLoader, TensorDataset

    data = TensorDataset(torch.arange(32, dtype=torch.float32).reshape(16, 2), torch.arange(16))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            batches = list(DataLoader(data, batch_size=4, pin_memory=True, num_workers=0))
        except Exception as exc:
            return _answer(ctx, "DataLoader(pin_memory=True)", exc)
    said = [str(w.message)[:300] for w in caught if "pin" in str(w.message).lower()]
    pinned = all(t.is_pinned() for batch in batches for t in batch)
    if not pinned:
        return checks.unsupported("DataLoader(pin_memory=True) handed out unpinned batches on %s%s"
                                  % (ctx.device_type, ": " + said[0] if said else ""), warnings=said)
    return checks.passed("DataLoader(pin_memory=True) yields pinned batches", batches=len(batches))


def non_blocking(ctx):
    torch = ctx.torch
    x = torch.randn(256, 64, generator=torch.Generator().manual_seed(5))
    try:
        try:
            source = x.pin_memory()
            pinned = True
        except Exception:
            source, pinned = x, False
        on_device = source.to(ctx.device, non_blocking=True)
        doubled = on_device * 2
        back = doubled.to("cpu", non_blocking=True)
        ctx.synchronize()
    except Exception as exc:
        return _answer(ctx, "non_blocking copy", exc)
    if not torch.equal(back, x * 2):
        return checks.failed("a non_blocking round trip through %s changed the values (after synchronize)"
                             % ctx.device, pinned_source=pinned)
    return checks.passed(_note(ctx, "non_blocking copies to and from %s agree after synchronize (%s source)"
                               % (ctx.device, "pinned" if pinned else "pageable")), pinned_source=pinned)


# -- randomness -------------------------------------------------------------------------------------
def _draws(torch, ctx, gen=None):
    return torch.randn(64, device=ctx.device, generator=gen).cpu()


def generator(ctx):
    torch = ctx.torch
    try:
        gen = torch.Generator(device=ctx.device)
        gen.manual_seed(1234)
        first = _draws(torch, ctx, gen)
        gen.manual_seed(1234)
        again = _draws(torch, ctx, gen)
        gen.manual_seed(4321)
        other = _draws(torch, ctx, gen)
        state = gen.get_state()
        after = _draws(torch, ctx, gen)
        gen.set_state(state)
        replay = _draws(torch, ctx, gen)
    except Exception as exc:
        return _answer(ctx, "torch.Generator(device=%r)" % str(ctx.device), exc)
    data = {"generator_device": str(gen.device), "reproducible": bool(torch.equal(first, again)),
            "seed_changes_values": not bool(torch.equal(first, other)),
            "state_replays": bool(torch.equal(after, replay))}
    if not all(data[k] for k in ("reproducible", "seed_changes_values", "state_replays")):
        return checks.failed("the device Generator is not deterministic: %s" % ", ".join(
            k for k in ("reproducible", "seed_changes_values", "state_replays") if not data[k]), **data)
    return checks.passed(_note(ctx, "a %s Generator reproduces its seed and its saved state" % gen.device), **data)


def _rng_owner(ctx):
    return ctx.torch.random if ctx.is_cpu else ctx.device_module


def rng_state(ctx):
    torch = ctx.torch
    owner = _rng_owner(ctx)
    get, put = getattr(owner, "get_rng_state", None), getattr(owner, "set_rng_state", None)
    if get is None or put is None:
        return checks.unsupported("torch.%s has no get_rng_state/set_rng_state" % ctx.device_type,
                                  get_rng_state=get is not None, set_rng_state=put is not None)
    try:
        torch.manual_seed(99)
        state = get()
        first = _draws(torch, ctx)
        put(state)
        replay = _draws(torch, ctx)
        fresh = _draws(torch, ctx)
    except Exception as exc:
        return _answer(ctx, "get_rng_state/set_rng_state", exc)
    data = {"state_bytes": int(state.numel()) if hasattr(state, "numel") else None,
            "replays": bool(torch.equal(first, replay)), "advances": not bool(torch.equal(first, fresh))}
    if not data["replays"]:
        return checks.failed("set_rng_state did not restore the device RNG: draws after it differ", **data)
    if not data["advances"]:
        return checks.failed("the device RNG does not advance: consecutive draws are equal", **data)
    return checks.passed(_note(ctx, "get_rng_state/set_rng_state replay the %s RNG" % ctx.device_type), **data)


def _own_generator(ctx):
    """None when the device has a generator of its own (``torch.Generator(device=...)``), else the reason."""
    try:
        ctx.torch.Generator(device=ctx.device)
    except Exception as exc:
        return error_texts.first_line(exc, 300)
    return None


def manual_seed(ctx):
    """The device module's ``manual_seed`` seeds the device's own generator: device draws depend on it and not
    on the CPU generator (a backend drawing from the CPU generator has no generator of its own)."""
    torch = ctx.torch
    if ctx.is_cpu:
        return checks.skipped("device is CPU: its generator is the CPU generator")
    owner = ctx.device_module
    seed_fn = getattr(owner, "manual_seed", None)
    if seed_fn is None:
        return checks.unsupported("torch.%s has no manual_seed" % ctx.device_type)
    missing = _own_generator(ctx)
    if missing is not None:
        return checks.unsupported("%s has no generator of its own (torch.Generator(device=%r): %s): its random "
                                  "kernels draw from another one" % (ctx.device_type, str(ctx.device), missing))
    try:
        torch.random.default_generator.manual_seed(1)
        seed_fn(7)
        first = _draws(torch, ctx)
        torch.random.default_generator.manual_seed(2)
        seed_fn(7)
        again = _draws(torch, ctx)
        seed_fn(8)
        other = _draws(torch, ctx)
    except Exception as exc:
        return _answer(ctx, "torch.%s.manual_seed" % ctx.device_type, exc)
    data = {"follows_device_seed": bool(torch.equal(first, again)),
            "seed_changes_values": not bool(torch.equal(first, other))}
    if not data["follows_device_seed"]:
        return checks.failed("device draws changed with the CPU seed under the same torch.%s.manual_seed: the "
                             "device does not draw from its own generator" % ctx.device_type, **data)
    if not data["seed_changes_values"]:
        return checks.failed("torch.%s.manual_seed does not change the device's draws" % ctx.device_type, **data)
    return checks.passed("torch.%s.manual_seed seeds the device's own generator" % ctx.device_type, **data)


def fork_rng(ctx):
    torch = ctx.torch
    fork = getattr(torch.random, "fork_rng", None)
    if fork is None:
        return checks.unsupported("torch %s has no torch.random.fork_rng" % torch.__version__)
    if not ctx.is_cpu:
        missing = _own_generator(ctx)
        if missing is not None:  # fork_rng would restore the CPU generator and pass for the wrong reason
            return checks.unsupported("%s has no generator of its own for fork_rng to save and restore "
                                      "(torch.Generator(device=%r): %s)" % (ctx.device_type, str(ctx.device), missing))
    seed = torch.manual_seed if ctx.is_cpu else getattr(ctx.device_module, "manual_seed", torch.manual_seed)
    try:
        seed(7)
        expected = _draws(torch, ctx)
        seed(7)
        kwargs = {} if ctx.is_cpu else {"device_type": ctx.device_type}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with fork(**kwargs):
                _draws(torch, ctx)
                _draws(torch, ctx)
        after = _draws(torch, ctx)
    except Exception as exc:
        return _answer(ctx, "torch.random.fork_rng", exc)
    if not torch.equal(after, expected):
        return checks.failed("fork_rng(device_type=%r) did not restore the device RNG: draws after the block "
                             "differ from draws without it" % ctx.device_type)
    return checks.passed(_note(ctx, "fork_rng restores the %s RNG" % ctx.device_type))


# -- profiler ----------------------------------------------------------------------------------------
def _activity(ctx):
    torch = ctx.torch
    activities = torch.profiler.ProfilerActivity
    name = PROFILER_ACTIVITY.get(ctx.device_type)
    if name is None and ctx.privateuse1 == ctx.device_type:
        name = "PrivateUse1"
    return getattr(activities, name, None) if name else None, name


def profiler(ctx):
    torch = ctx.torch
    activity, name = _activity(ctx)
    if activity is None:
        return checks.unsupported("torch.profiler has no activity for %s devices" % ctx.device_type)
    a = torch.randn(64, 64).to(ctx.device)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, activity]) as prof:
                for _ in range(3):
                    a = torch.mm(a, a).tanh()
                ctx.synchronize()
        events = prof.events()
    except Exception as exc:
        return _answer(ctx, "torch.profiler with ProfilerActivity.%s" % name, exc)
    device_events = [e for e in events if str(getattr(e, "device_type", "")).split(".")[-1].upper() != "CPU"]
    device_time = sum(float(getattr(e, "self_device_time_total", 0) or 0) for e in events)
    data = {"activity": name, "events": len(events), "device_events": len(device_events),
            "device_time_us": device_time, "warnings": [str(w.message)[:200] for w in caught][:3]}
    if not device_events and not device_time:
        return checks.unsupported("the profiler recorded no %s activity (%d CPU events only)" % (ctx.device_type,
                                                                                                 len(events)), **data)
    return checks.passed("the profiler recorded %d %s events" % (len(device_events), ctx.device_type), **data)


# -- checkpoints ------------------------------------------------------------------------------------
def checkpoint_load(ctx):
    torch = ctx.torch
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2)).to(ctx.device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(2)).to(ctx.device)
    model(x).square().sum().backward()
    opt.step()
    buffer = io.BytesIO()
    saved = {"model": model.state_dict(), "optim": opt.state_dict(), "step": smoke.CHECKPOINT_STEP,
             "step_on_device": torch.tensor(smoke.CHECKPOINT_STEP, device=ctx.device), "rng": _rng_states(ctx)}
    torch.save(saved, buffer)
    following = _draws(torch, ctx), torch.randn(8)  # what a run resumed from this checkpoint must draw next
    buffer.seek(0)
    try:
        loaded = torch.load(buffer, map_location=ctx.device, weights_only=True)
        twin = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2)).to(ctx.device)
        twin.load_state_dict(loaded["model"])
        twin_opt = torch.optim.AdamW(twin.parameters(), lr=1e-2)
        twin_opt.load_state_dict(loaded["optim"])
    except Exception as exc:
        return _answer(ctx, "torch.load(map_location=%r)" % str(ctx.device), exc)
    devices = sorted(set(str(t.device.type) for t in list(loaded["model"].values()) + [
        v for s in loaded["optim"]["state"].values() for v in s.values() if hasattr(v, "device")]))
    if devices != [ctx.device_type]:
        return checks.failed("loaded tensors are on %s, not %s" % (", ".join(devices), ctx.device_type),
                             devices=devices)
    differences = smoke.state_differences(torch, saved, loaded)
    if differences:
        return checks.failed("the checkpoint loaded back differs from what was saved: %s" % "; ".join(differences),
                             differences=differences, devices=devices)
    for m, o in ((model, opt), (twin, twin_opt)):
        o.zero_grad()
        m(x).square().sum().backward()
        o.step()
    worst = max(float((p - q).abs().max().cpu()) for p, q in zip(model.parameters(), twin.parameters()))
    if worst != 0.0:
        return checks.failed("a step after loading the checkpoint differs from the original by %.3g" % worst,
                             max_abs_err=worst)
    rng = sorted(saved["rng"])
    try:
        replays = _resumed_draws(ctx, loaded["rng"], following)
    except Exception as exc:
        return _answer(ctx, "set_rng_state with the checkpoint's RNG state", exc)
    if replays is not None:
        return checks.failed("the checkpoint's RNG state does not resume the run: after set_rng_state the %s draws "
                             "differ from those that followed the save" % replays, devices=devices, rng=rng)
    return checks.passed(_note(ctx, "model, AdamW state, step and the %s RNG states saved and loaded back onto %s; the "
                               "next step and the next random draws are identical" % ("/".join(rng), ctx.device)),
                         devices=devices, rng=rng)


def _rng_states(ctx):
    """{"cpu": the CPU RNG state, "device": the device module's, where it has get_rng_state}."""
    states = {"cpu": ctx.torch.get_rng_state()}
    get = getattr(_rng_owner(ctx), "get_rng_state", None)
    if not ctx.is_cpu and get is not None:
        states["device"] = get()
    return states


def _resumed_draws(ctx, states, following):
    """None when restoring ``states`` (as loaded) replays ``following`` (device draws, CPU draws); else which
    draws differ ("device", "CPU")."""
    torch = ctx.torch
    if "device" in states:
        _rng_owner(ctx).set_rng_state(states["device"].cpu())
    torch.set_rng_state(states["cpu"].cpu())
    device_draws = _draws(torch, ctx)
    cpu_draws = torch.randn(8)
    if not bool(torch.equal(device_draws, following[0])):
        return "CPU" if ctx.is_cpu else "device"
    if not bool(torch.equal(cpu_draws, following[1])):
        return "CPU"
    return None


def activation_checkpointing(ctx):
    torch = ctx.torch
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 16)).to(ctx.device)
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(4)).to(ctx.device).requires_grad_(True)
    plain = block(x).square().sum()
    want = torch.autograd.grad(plain, [x] + list(block.parameters()))
    try:
        out = checkpoint(block, x, use_reentrant=False).square().sum()
        got = torch.autograd.grad(out, [x] + list(block.parameters()))
    except Exception as exc:
        return _answer(ctx, "torch.utils.checkpoint", exc)
    worst = max(float((g - w).abs().max().cpu()) for g, w in zip(got, want))
    if worst > 1e-5:
        return checks.failed("checkpointed gradients differ from plain ones by %.3g" % worst, max_abs_err=worst)
    return checks.passed(_note(ctx, "activation checkpointing recomputes the same gradients on %s" % ctx.device),
                         max_abs_err=worst)


def memory_functions(ctx):
    module = ctx.device_module
    found = {}
    for name in MEMORY_FUNCTIONS:
        fn = getattr(module, name, None)
        if fn is None:
            found[name] = "absent"
            continue
        if name not in MEMORY_CALLED:
            found[name] = "present"
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fn()
            found[name] = "present"
        except Exception as exc:
            found[name] = "raises: %s" % error_texts.first_line(exc, 160)
    core_missing = [n for n in MEMORY_CORE if found[n] != "present"]
    summary = ", ".join("%s %s" % (n, s.split(":")[0]) for n, s in found.items() if s != "present")
    if len(core_missing) == len(MEMORY_CORE):
        return checks.unsupported("torch.%s has none of the torch.cuda-style memory functions" % ctx.device_type,
                                  functions=found)
    if core_missing:
        return checks.unsupported("torch.%s lacks %s" % (ctx.device_type, ", ".join(core_missing)), functions=found)
    return checks.passed("torch.%s has the core memory functions%s" % (
        ctx.device_type, "; " + summary if summary else ""), functions=found)


CHECKS = (
    ("pin_memory", _device_only(pin_memory)),
    ("dataloader_pin_memory", _device_only(dataloader_pin_memory)),
    ("non_blocking", non_blocking),
    ("generator", generator),
    ("rng_state", rng_state),
    ("manual_seed", manual_seed),
    ("fork_rng", fork_rng),
    ("profiler", _device_only(profiler)),
    ("checkpoint_load", checkpoint_load),
    ("activation_checkpointing", activation_checkpointing),
    ("memory_functions", _device_only(memory_functions)),
)


def plan(ctx):
    return [checks.Check("runtime.%s" % name, "runtime", fn) for name, fn in CHECKS]
