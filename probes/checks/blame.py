"""Blame the kernel: which aten op first gives the device a result CPU does not give on the same inputs.

When a check's outputs differ from CPU, the op it names (``mm``'s consumer ``linear``, a model) is often not
the one at fault. ``first_differing_op`` runs the work again under a dispatch mode that, for every aten op
reaching a device tensor, also runs the op on CPU copies of the very inputs the device op got (taken before
the call, so in-place ops compare too) and compares the outputs with the dtype's tolerance (``op_table``'s
assert_close defaults, and one eps normwise for the 16-bit floats). The first op that differs is the kernel
to blame: later ops get the device's (already wrong) inputs on both sides, so they agree. An op the mode sees whole
although it is composite (``max_pool2d`` under ``inference_mode`` runs ``max_pool2d_with_indices``) is
opened when it differs: its decomposition runs again on copies of the device inputs under a second mode,
and the first op inside it that differs is the one named (``inside`` says which composite held it). Ops
whose results are random or uninitialised are not compared. The backward pass is followed too: the autograd
engine is run with the mode active for the re-run (the harness runs it without modes otherwise; see
``probes.harness.breadcrumbs``), which is safe here because the same work already ran without raising.
"""

from probes.checks import op_table

#: name fragments of ops whose outputs need not agree between two runs (random draws, uninitialised memory)
UNCOMPARED = ("rand", "normal", "bernoulli", "dropout", "empty", "uniform", "exponential", "multinomial",
              "geometric", "cauchy", "log_normal", "_local_scalar_dense", "set_", "resize")
_DTYPE_NAMES = {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16", "float64": "float32",
               "complex64": "float32", "complex128": "float32"}


def _name(func):
    schema = func._schema
    return schema.name + ("." + schema.overload_name if schema.overload_name else "")


def _map(value, fn, depth=0):
    if depth > 4:
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(_map(v, fn, depth + 1) for v in value)
    if isinstance(value, dict):
        return dict((k, _map(v, fn, depth + 1)) for k, v in value.items())
    return fn(value)


def _tensors(value, found, depth=0):
    if depth > 4:
        return found
    if isinstance(value, (list, tuple)):
        for v in value:
            _tensors(v, found, depth + 1)
    elif hasattr(value, "dtype") and hasattr(value, "device"):
        found.append(value)
    return found


def _as_float64(torch, t):
    """float64 values to compare (a complex tensor as its real and imaginary parts, the tolerance its part's)."""
    if t.is_complex():
        return torch.view_as_real(t.resolve_conj().resolve_neg()).double()
    return t.double()


def difference(torch, got, want):
    """None when the CPU tensor ``got`` (the device's) agrees with ``want``; else a phrase saying how not."""
    if got.shape != want.shape:
        return "shape %s, CPU %s" % (tuple(got.shape), tuple(want.shape))
    if got.dtype != want.dtype:
        return "dtype %s, CPU %s" % (got.dtype, want.dtype)
    if got.numel() == 0:
        return None
    if not (got.dtype.is_floating_point or got.dtype.is_complex):
        return None if bool(torch.equal(got, want)) else "values differ (exact dtype %s)" % got.dtype
    name = _DTYPE_NAMES.get(str(got.dtype).replace("torch.", ""))
    if name is None:
        return None
    atol, rtol = op_table.TOLERANCES[name]
    g, w = _as_float64(torch, got), _as_float64(torch, want)
    nan = torch.isnan(w)
    if not bool(torch.equal(torch.isnan(g), nan)):
        return "NaN where CPU has none (or the reverse)"
    diff = (g - w).abs().masked_fill(nan, 0.0)
    if bool((diff > atol + rtol * w.abs().masked_fill(nan, 0.0)).any()):
        return "max abs err %.3g (atol %g, rtol %g)" % (float(diff.max()), atol, rtol)
    if name in op_table.NORMWISE:
        norm = float(w.masked_fill(nan, 0.0).norm())
        normwise = float(diff.norm()) / norm if norm > 0 else 0.0
        if normwise > float(torch.finfo(got.dtype).eps):
            return "normwise relative error %.3g" % normwise
    return None


#: the aliases a composite kernel is registered under, tried in this order to open an op up
_COMPOSITE_KEYS = ("CompositeImplicitAutograd", "CompositeExplicitAutogradNonFunctional", "CompositeExplicitAutograd")
#: a device type's own dispatch key (a PrivateUse1 backend's otherwise)
_DEVICE_KEYS = {"cuda": "CUDA", "xpu": "XPU", "mps": "MPS", "hpu": "HPU", "mtia": "MTIA", "meta": "Meta"}


def composite_key(torch, func, device_type):
    """The composite alias key whose kernel runs ``func`` on the device (the device has no kernel of its own
    for it, so the op is other ops underneath), or None."""
    try:
        name = func.name()
        has = torch._C._dispatch_has_kernel_for_dispatch_key
        if has(name, _DEVICE_KEYS.get(device_type, "PrivateUse1")):
            return None
        for key in _COMPOSITE_KEYS:
            if has(name, key):
                return key
    except Exception:
        pass
    return None


def _inside(torch, device_type, func, key, args, kwargs, depth):
    """The first op inside the composite ``func`` whose device result differs from CPU, or None."""
    if depth >= 3 or not hasattr(func, "_op_dk"):
        return None
    inner = make_mode(torch, device_type, depth + 1)
    try:
        with inner:
            func._op_dk(getattr(torch._C.DispatchKey, key), *args, **kwargs)
    except Exception:
        pass
    return inner.first


def make_mode(torch, device_type, depth=0):
    from torch.utils._python_dispatch import TorchDispatchMode

    def on_device(value):
        return any(getattr(t.device, "type", None) == device_type for t in _tensors(value, []))

    def clone(value):
        if hasattr(value, "device") and getattr(value.device, "type", None) == device_type:
            return value.detach().clone()
        return value

    def to_cpu(value):
        if hasattr(value, "device") and getattr(value.device, "type", None) == device_type:
            return value.detach().to("cpu").clone()
        if isinstance(value, torch.device) and value.type == device_type:
            return torch.device("cpu")
        return value

    class _BlameMode(TorchDispatchMode):
        def __init__(self):
            TorchDispatchMode.__init__(self)
            self.first = None  # {"aten_op", "why", "ops_compared"}
            self.compared = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = _name(func)
            watch = self.first is None and not any(part in name for part in UNCOMPARED) and \
                (on_device(args) or on_device(list(kwargs.values())))
            dev_args = None
            if watch:
                try:
                    cpu_args, cpu_kwargs = _map(args, to_cpu), _map(kwargs, to_cpu)
                    key = composite_key(torch, func, device_type)
                    if key is not None:  # kept to open the op up if it differs
                        dev_args = (key, _map(args, clone), _map(kwargs, clone))
                except Exception:
                    watch = False
            out = func(*args, **kwargs)
            if watch:
                try:
                    want = func(*cpu_args, **cpu_kwargs)
                    self.compared += 1
                    for i, (g, w) in enumerate(zip(_tensors(out, []), _tensors(want, []))):
                        why = difference(torch, g.detach().cpu(), w)
                        if why:
                            self.first = {"aten_op": name, "why": "output %d: %s" % (i, why),
                                          "ops_compared": self.compared}
                            inner = dev_args and _inside(torch, device_type, func, *dev_args, depth=depth)
                            if inner:
                                self.first = dict(inner, inside=name, ops_compared=self.compared)
                            break
                except Exception:
                    pass  # CPU cannot run it (no half kernel): nothing to compare
            return out

    return _BlameMode()


def first_differing_op(torch, device_type, work):
    """Run ``work()`` under the blame mode; the first differing op as {"aten_op", "why", "ops_compared"}, or
    None (every op compared agreed, or the mode cannot be made in this torch)."""
    try:
        mode = make_mode(torch, device_type)
    except Exception:
        return None
    autograd = torch.autograd
    graph = getattr(autograd, "graph", None)
    harness_engine = getattr(autograd, "_engine_run_backward", None)
    engine = getattr(graph, "_engine_run_backward", None) if graph is not None else None
    if engine is not None and harness_engine is not None:
        autograd._engine_run_backward = engine  # the backward pass under the mode, for this re-run only
    try:
        with mode:
            work()
    except Exception:
        pass
    finally:
        if engine is not None and harness_engine is not None:
            autograd._engine_run_backward = harness_engine
    return mode.first


def blamed(ctx, outcome, work):
    """``outcome`` (a difference from CPU) with the kernel to blame: ``work()`` re-run under the blame mode, the
    first differing op named in the detail and in ``data.blamed_op`` / ``data.blamed_why``. On CPU (the device
    is its own reference) and when nothing differs op by op, ``outcome`` unchanged."""
    import warnings

    if ctx.is_cpu:
        return outcome
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = first_differing_op(ctx.torch, ctx.device_type, work)
    if first is None:
        return outcome
    outcome.data.update(blamed_op=first["aten_op"], blamed_why=first["why"])
    inside = ""
    if first.get("inside"):
        outcome.data["blamed_inside"] = first["inside"]
        inside = ", inside %s" % first["inside"]
    outcome.detail = "%s; the first op whose device result differs from CPU on the same inputs is %s (%s%s)" % (
        outcome.detail, first["aten_op"], first["why"], inside)
    return outcome
