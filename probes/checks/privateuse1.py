"""privateuse1: what an out-of-tree backend registered through PrivateUse1 should give training code.

``torch.utils.rename_privateuse1_backend(name)`` and ``generate_methods_for_privateuse1_backend()`` should
leave: ``torch.device(name)``; ``tensor.<name>()``, ``tensor.is_<name>``, ``Module.<name>()``,
``UntypedStorage.<name>()`` and ``UntypedStorage.is_<name>``; a device module ``torch.<name>`` with the
``torch.cuda`` functions training code calls (``DEVICE_MODULE_FUNCTIONS``) and ``get_device_properties``;
and checkpoints saved from the device that load back with ``map_location`` (onto the device and onto CPU).

Something absent is ``unsupported`` (a gap, named); something present that answers wrongly is ``failed``.
Devices that are not PrivateUse1 backends (cpu, cuda, mps, xpu) skip the group with the reason.
"""

import io
from typing import Any, Dict

from probes.checks import outcome as checks

#: torch.cuda functions training code (Lightning, HF Trainer, DDP scripts) calls on the device module
DEVICE_MODULE_FUNCTIONS = ("is_available", "device_count", "current_device", "set_device", "synchronize",
                           "manual_seed", "manual_seed_all", "get_rng_state", "set_rng_state", "get_device_name",
                           "get_device_properties", "memory_allocated", "max_memory_allocated", "empty_cache",
                           "is_initialized", "Stream", "Event", "current_stream", "stream", "device")


def _gated(fn):
    def run(ctx):
        if ctx.device is None:
            return checks.skipped("not run: %s" % (ctx.device_error or "no device to probe"))
        if ctx.privateuse1 is None or ctx.privateuse1 != ctx.device_type:
            return checks.skipped("%s is not a PrivateUse1 backend (PrivateUse1 is %s)"
                                  % (ctx.device_type, ctx.privateuse1 or "not renamed"))
        return fn(ctx, ctx.device_type)

    return run


def tensor_methods(ctx, name):
    torch = ctx.torch
    missing = []
    for owner, attr in ((torch.Tensor, name), (torch.Tensor, "is_" + name), (torch.nn.Module, name),
                        (torch.UntypedStorage, name), (torch.UntypedStorage, "is_" + name)):
        if not hasattr(owner, attr):
            missing.append("%s.%s" % (owner.__name__, attr))
    data: Dict[str, Any] = {"missing": missing}
    if missing:
        return checks.unsupported("generate_methods_for_privateuse1_backend() left out %s" % ", ".join(missing), **data)
    x = torch.arange(6, dtype=torch.float32)
    moved = getattr(x, name)()
    module = getattr(torch.nn.Linear(2, 2), name)()
    storage = getattr(x.untyped_storage(), name)()
    data.update(tensor_device=str(moved.device), module_device=str(module.weight.device),
                storage_device=str(storage.device))
    wrong = [what for what, dev in (("tensor", moved.device), ("module", module.weight.device),
                                    ("storage", storage.device)) if dev.type != name]
    if wrong or not getattr(moved, "is_" + name) or getattr(x, "is_" + name):
        return checks.failed("the generated methods did not move to %s (%s), or is_%s is wrong"
                             % (name, ", ".join(wrong) or "is_ flags", name), **data)
    if moved.cpu().tolist() != x.tolist():
        return checks.failed("tensor.%s() changed the values" % name, **data)
    return checks.passed("tensor.%s(), tensor.is_%s, Module.%s() and UntypedStorage.%s() move to %s"
                         % (name, name, name, name, ctx.device), **data)


def device_module(ctx, name):
    torch = ctx.torch
    module = getattr(torch, name, None)
    if module is None:
        return checks.unsupported("no torch.%s device module (torch._register_device_module was not called)" % name)
    missing = [f for f in DEVICE_MODULE_FUNCTIONS if not hasattr(module, f)]
    data = {"module": getattr(module, "__name__", repr(module))[:200], "missing": missing,
            "compared_with": "torch.cuda"}
    no_device = _no_device(ctx, module, name, missing, data)
    if no_device is not None:
        return no_device
    gaps = _cuda_gaps(torch, missing)
    if gaps:
        return checks.unsupported("torch.%s lacks %d of the torch.cuda functions training code calls: %s"
                                  % (name, len(gaps), ", ".join(gaps)), **data)
    wrong = _misbehaving(torch, module, data.get("current_device", ctx.index))
    if wrong:
        data["misbehaving"] = wrong
        return checks.failed("torch.%s has the functions, but they do not work: %s" % (name, "; ".join(wrong)), **data)
    return checks.passed("torch.%s has every torch.cuda function training code calls (%d), and the ones that can be "
                         "called harmlessly answer as torch.cuda's do" % (name, len(DEVICE_MODULE_FUNCTIONS)), **data)


def _cuda_gaps(torch, missing):
    """The missing functions torch.cuda has (all of them where this torch has no torch.cuda)."""
    cuda = getattr(torch, "cuda", None)
    in_cuda = [f for f in DEVICE_MODULE_FUNCTIONS if cuda is None or hasattr(cuda, f)]
    return [f for f in missing if f in in_cuda]


def _no_device(ctx, module, name, missing, data):
    """The entry when the module cannot say which devices there are (answers recorded in ``data``), else None."""
    if "is_available" in missing or "device_count" in missing:
        return checks.unsupported("torch.%s lacks %s" % (name, ", ".join(missing)), **data)
    available, count = bool(module.is_available()), int(module.device_count())
    data.update(is_available=available, device_count=count)
    if not available or count < 1:
        return checks.failed("torch.%s says is_available()=%s, device_count()=%d while a tensor lives on %s"
                             % (name, available, count, ctx.device), **data)
    if "current_device" not in missing:
        return _bad_current_device(module, name, count, data)
    return None


def _bad_current_device(module, name, count, data):
    """The failed entry when current_device() names no device (it is recorded in ``data``), else None."""
    current = module.current_device()
    data["current_device"] = current
    if not isinstance(current, int) or not 0 <= current < count:
        return checks.failed("torch.%s.current_device() gave %r for %d device(s)" % (name, current, count), **data)
    return None


def _misbehaving(torch, module, index):
    """What the device module's functions get wrong when called (not only present): each a phrase."""
    def is_int(v):
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    expectations = (
        ("synchronize()", lambda: module.synchronize(), None),
        ("set_device(%d)" % index, lambda: module.set_device(index), None),
        ("current_device() after set_device", lambda: module.current_device(), lambda v: v == index),
        ("get_device_name(%d)" % index, lambda: module.get_device_name(index), lambda v: isinstance(v, str) and v),
        ("get_device_properties(%d)" % index, lambda: module.get_device_properties(index), lambda v: v is not None),
        ("memory_allocated()", lambda: module.memory_allocated(), is_int),
        ("max_memory_allocated()", lambda: module.max_memory_allocated(), is_int),
        ("is_initialized()", lambda: module.is_initialized(), lambda v: v is True),
        ("get_rng_state()", lambda: module.get_rng_state(), lambda v: isinstance(v, torch.Tensor) and v.numel() > 0),
        ("current_stream()", lambda: module.current_stream(), lambda v: v is not None),
        ("empty_cache()", lambda: module.empty_cache(), None),
    )
    wrong = []
    for what, call, good in expectations:
        try:
            value = call()
        except Exception as exc:
            wrong.append("%s raised %s: %s" % (what, type(exc).__name__, str(exc).splitlines()[0][:150] if str(exc)
                                               else ""))
            continue
        if good is not None and not good(value):
            wrong.append("%s gave %r" % (what, value if not isinstance(value, torch.Tensor) else "a tensor"))
    return wrong


def device_properties(ctx, name):
    torch = ctx.torch
    module = getattr(torch, name, None)
    getter = getattr(module, "get_device_properties", None) if module is not None else None
    if getter is None:
        return checks.unsupported("torch.%s has no get_device_properties" % name)
    try:
        props = getter(ctx.index)
    except Exception as exc:
        return checks.unsupported("torch.%s.get_device_properties(%d) raised %s: %s"
                                  % (name, ctx.index, type(exc).__name__, str(exc).splitlines()[0][:300]))
    found = dict((attr, getattr(props, attr, None)) for attr in ("name", "total_memory"))
    data = {"properties": dict((k, v if isinstance(v, (int, float, str)) else repr(v)[:100])
                               for k, v in found.items())}
    absent = [k for k, v in found.items() if v is None]
    if absent:
        return checks.unsupported("get_device_properties() has no %s" % ", ".join(absent), **data)
    if not isinstance(found["total_memory"], int) or found["total_memory"] <= 0:
        return checks.failed("get_device_properties().total_memory is %r" % (found["total_memory"],), **data)
    return checks.passed("get_device_properties(%d): %s, %d bytes" % (ctx.index, found["name"],
                                                                      found["total_memory"]), **data)


def checkpoint_map_location(ctx, name):
    torch = ctx.torch
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3).to(ctx.device)
    state = {"model": model.state_dict(), "step": torch.tensor(7, device=ctx.device)}
    buffer = io.BytesIO()
    try:
        torch.save(state, buffer)
    except Exception as exc:
        return checks.failed("torch.save of %s tensors raised %s: %s" % (name, type(exc).__name__,
                                                                        str(exc).splitlines()[0][:300]))
    results: Dict[str, Dict[str, Any]] = {}
    for where in ("cpu", str(ctx.device)):
        buffer.seek(0)
        try:
            loaded = torch.load(buffer, map_location=where, weights_only=True)
        except TypeError:
            buffer.seek(0)
            loaded = torch.load(buffer, map_location=where)
        devices = set(t.device.type for t in list(loaded["model"].values()) + [loaded["step"]])
        same = all(torch.equal(loaded["model"][k].cpu(), v.cpu()) for k, v in model.state_dict().items())
        results[where] = {"devices": sorted(devices), "equal": same}
    data = {"loads": results}
    for where, result in results.items():
        want = torch.device(where).type
        if result["devices"] != [want] or not result["equal"]:
            return checks.failed("a checkpoint saved on %s and loaded with map_location=%r gave %s tensors, "
                                 "values %s" % (ctx.device, where, "/".join(result["devices"]),
                                                "equal" if result["equal"] else "different"), **data)
    return checks.passed("a checkpoint saved on %s loads with map_location='cpu' and %r, values equal"
                         % (ctx.device, str(ctx.device)), **data)


def plan(ctx):
    return [checks.Check("privateuse1.%s" % fn.__name__, "privateuse1", _gated(fn))
            for fn in (tensor_methods, device_module, device_properties, checkpoint_map_location)]
