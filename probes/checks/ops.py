"""ops: each op variant of ``op_table`` on the device against a CPU reference, per claimed dtype.

For one (case, dtype): build CPU inputs, run on the device and on CPU (in the same dtype, or upcast to
float32 when CPU lacks that dtype's kernel), compare with the dtype's tolerance, then do the same for
the gradients. A missing kernel (dispatcher "Could not run 'aten::X' ...", also in backward) is
``unsupported`` naming the op; a device that ran the op on CPU instead (``data.cpu_fallback``) fails it.
"""

import warnings

from probes.checks import blame, error_texts, op_table
from probes.checks import outcome as checks
from probes.checks.context import CPU_SAME_DEVICE


class _RefError(Exception):
    pass


def _tensors(out):
    if isinstance(out, (tuple, list)):
        return list(out)
    return [out]


def _compare(torch, got, ref, dtype_name, exact_dtype):
    """(ok, detail, max_abs_err) comparing output lists elementwise on CPU in float64."""
    got, ref = _tensors(got), _tensors(ref)
    if len(got) != len(ref):
        return False, "returned %d outputs, CPU %d" % (len(got), len(ref)), None
    atol, rtol = op_table.TOLERANCES[dtype_name]
    worst = 0.0
    for i, (g, r) in enumerate(zip(got, ref)):
        g = g.detach().cpu()
        r = r.detach()
        if exact_dtype and g.dtype != r.dtype:
            return False, "output %d has dtype %s, CPU gives %s" % (i, g.dtype, r.dtype), None
        if tuple(g.shape) != tuple(r.shape):
            return False, "output %d has shape %s, CPU gives %s" % (i, tuple(g.shape), tuple(r.shape)), None
        if g.numel() == 0:
            continue
        if not (g.dtype.is_floating_point or r.dtype.is_floating_point) and exact_dtype:
            if not bool(torch.equal(g, r)):
                return False, "output %d differs from CPU (exact dtype %s)" % (i, g.dtype), None
            continue
        gd, rd = g.double(), r.to(g.dtype).double() if not exact_dtype else r.double()
        nan_g, nan_r = torch.isnan(gd), torch.isnan(rd)
        if not bool(torch.equal(nan_g, nan_r)):
            return False, "output %d has NaN where CPU has none (or the reverse)" % i, None
        diff = (gd - rd).abs().masked_fill(nan_g, 0.0)
        bound = atol + rtol * rd.abs().masked_fill(nan_r, 0.0)
        err = float(diff.max())
        worst = max(worst, err)
        if bool((diff > bound).any()):
            return False, "output %d differs from CPU: max abs err %.3g (atol %g, rtol %g)" % (i, err, atol, rtol), err
        if dtype_name in op_table.NORMWISE:
            eps = float(torch.finfo(getattr(torch, dtype_name)).eps)
            ref_norm = float(rd.masked_fill(nan_r, 0.0).norm())
            normwise = float(diff.norm()) / ref_norm if ref_norm > 0 else 0.0
            if normwise > eps:
                return False, ("output %d differs from CPU as a whole: normwise relative error %.3g, over %s's eps "
                               "%.3g (each element within atol %g, rtol %g)" % (i, normwise, dtype_name, eps, atol,
                                                                                rtol)), err
    return True, None, worst


def _grad_weights(torch, out):
    # Weighted sums give every output element a distinct gradient (plain sum() hides permutations).
    return [torch.cos(torch.arange(t.numel(), dtype=torch.float32)).reshape(t.shape) for t in out]


def _run(torch, case, inputs, device, want_grad):
    """Run a case on ``device``; returns (outputs, grads or None)."""
    args = []
    leaves = []
    for i, x in enumerate(inputs):
        moved = x.to(device)
        if want_grad and i in case.grad:
            moved = moved.detach().requires_grad_(True)
            leaves.append(moved)
        args.append(moved)
    out = case.fn(torch, *args)
    if not want_grad:
        return out, None
    floats = [t for t in _tensors(out) if t.dtype.is_floating_point and t.requires_grad]
    # The cotangents are made on CPU and copied over: no device op builds the "loss", so the backward pass
    # exercises only the op's own backward (a device-side multiply would put a faulty mul in every gradient).
    weights = [w.to(dtype=t.dtype).to(t.device) for t, w in zip(floats, _grad_weights(torch, floats))]
    grads = torch.autograd.grad(floats, leaves, grad_outputs=weights, allow_unused=True)
    return out, [g if g is not None else torch.zeros_like(x) for g, x in zip(grads, leaves)]


def _reference(torch, case, inputs, want_grad):
    """CPU reference in the same dtype; float32 upcast when CPU has no kernel for the dtype."""
    try:
        out, grads = _run(torch, case, inputs, "cpu", want_grad)
        return out, grads, True
    except Exception as exc:
        first = exc
    if not any(x.dtype in (torch.float16, torch.bfloat16) for x in inputs):
        raise _RefError("CPU reference failed: %s" % error_texts.first_line(first))
    up = [x.float() if x.dtype in (torch.float16, torch.bfloat16) else x for x in inputs]
    try:
        out, grads = _run(torch, case, up, "cpu", want_grad)
    except Exception as exc:
        raise _RefError("CPU reference failed even in float32: %s" % error_texts.first_line(exc)) from exc
    return out, grads, False


def _unsupported_or_failed(exc, case, phase, ctx):
    info = error_texts.classify_unsupported(exc)
    if info is None:
        return checks.failed("%s raised on %s (%s): %s" % (case.name, ctx.device, phase, error_texts.first_line(exc)),
                             phase=phase, aten=case.aten, error=error_texts.first_line(exc))
    op = info.get("aten_op") or case.aten
    data = dict(info, phase=phase, requested_op=case.aten)
    data["aten_op"] = op
    if info["kind"] == "dtype":
        detail = "%s has no %s kernel for %s (%s)" % (ctx.device, info["kernel"], info["dtype"], phase)
    else:
        detail = "%s is not implemented for backend %s (%s)" % (op, info.get("backend") or ctx.backend, phase)
    return checks.unsupported(detail, **data)


def _blamed(ctx, case, inputs, want_grad, outcome):
    """``outcome`` with the kernel to blame (``probes.checks.blame``): the case re-run op by op against CPU."""
    return blame.blamed(ctx, outcome, lambda: _run(ctx.torch, case, inputs, ctx.device, want_grad))


def run_case(ctx, case, dtype_name):
    torch = ctx.torch
    dtype = ctx.dtype(dtype_name)
    gen = torch.Generator().manual_seed(1234)
    inputs = case.build(torch, dtype, gen)
    want_grad = bool(case.grad) and dtype.is_floating_point
    try:
        with warnings.catch_warnings():  # the reference's warnings say nothing about the device
            warnings.simplefilter("ignore")
            ref_out, ref_grads, exact = _reference(torch, case, inputs, want_grad)
    except _RefError as exc:
        return checks.Outcome("error", str(exc), aten=case.aten)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out, _ = _run(torch, case, inputs, ctx.device, False)
            ctx.synchronize()
        except Exception as exc:
            return _unsupported_or_failed(exc, case, "forward", ctx)
        ok, why, err = _compare(torch, out, ref_out, dtype_name, exact)
        if not ok:
            return _blamed(ctx, case, inputs, False, checks.failed(
                "%s %s forward: %s" % (case.name, dtype_name, why), aten=case.aten, phase="forward",
                max_abs_err=err, reference="cpu" if exact else "cpu-float32-upcast"))
        grad_err = None
        if want_grad:
            try:
                _, grads = _run(torch, case, inputs, ctx.device, True)
                ctx.synchronize()
            except Exception as exc:
                return _unsupported_or_failed(exc, case, "backward", ctx)
            ok, why, grad_err = _compare(torch, grads, ref_grads, dtype_name, exact)
            if not ok:
                return _blamed(ctx, case, inputs, True, checks.failed(
                    "%s %s backward: %s" % (case.name, dtype_name, why), aten=case.aten, phase="backward",
                    max_abs_err=grad_err))
    data = {"aten": case.aten, "dtype": dtype_name, "max_abs_err": err, "backward": want_grad,
            "grad_max_abs_err": grad_err, "reference": "cpu" if exact else "cpu-float32-upcast"}
    fallback = error_texts.cpu_fallback_op([str(w.message) for w in caught], (case.aten,))
    if fallback:
        data["cpu_fallback"] = True
        data["fallback_op"] = fallback
        # Failed: the numbers are right because the CPU computed them; the device did not run the op.
        return checks.failed("%s matches CPU, but %s ran on the CPU fallback, not the device"
                             % (case.name, fallback), **data)
    detail = "matches CPU within tolerance" + (" (forward and backward)" if want_grad else "")
    if ctx.is_cpu:
        detail += "; " + CPU_SAME_DEVICE
    return checks.passed(detail, **data)


def run_random(ctx, case, dtype_name):
    torch = ctx.torch
    dtype = ctx.dtype(dtype_name)
    draws = []
    try:
        for seed in (1234, 1234, 4321):
            torch.manual_seed(seed)
            draws.append(case.make(torch, ctx.device, dtype).cpu())
    except Exception as exc:
        return _unsupported_or_failed(exc, case, "forward", ctx)
    same = bool(torch.equal(draws[0], draws[1]))
    differs = not bool(torch.equal(draws[0], draws[2]))
    sane = bool(case.sane(torch, draws[0]))
    data = {"aten": case.aten, "dtype": dtype_name, "reproducible": same, "seed_changes_values": differs,
            "distribution_ok": sane}
    if not (same and differs and sane):
        problems = [text for flag, text in ((same, "the same seed gave different values"),
                                            (differs, "a different seed gave the same values"),
                                            (sane, "the values do not follow the distribution")) if not flag]
        return checks.failed("%s on %s: %s" % (case.name, ctx.device, "; ".join(problems)), **data)
    detail = "seeded %s is reproducible and plausible" % case.name
    if ctx.is_cpu:
        detail += "; " + CPU_SAME_DEVICE
    return checks.passed(detail, **data)


def _bound(fn, ctx_case, dtype_name, claimed):
    problem = claimed.get(dtype_name)

    def run(ctx):
        if problem:
            return checks.skipped("device does not claim %s: %s" % (dtype_name, problem), dtype=dtype_name)
        return fn(ctx, ctx_case, dtype_name)

    return run


#: the data types the compute-platform quality rubric scores (Feature Support row 2), as torch names them
RUBRIC_DTYPES = (("float64", "float64"), ("float32", "float32"), ("float16", "float16"), ("bfloat16", "bfloat16"),
                 ("float8", "float8_e4m3fn"), ("float4", "float4_e2m1fn_x2"), ("int64", "int64"),
                 ("int32", "int32"), ("int16", "int16"), ("int8", "int8"), ("int4", "int4"))


def dtype_support(ctx):
    """Which of the rubric's data types the device holds: a tensor of each copied to the device and back
    comes back bit for bit (fails when one comes back changed; a dtype torch or the device cannot hold is
    listed as not held)."""
    torch = ctx.torch
    held, changed = [], []  # type: list, list
    missing = {}  # type: dict
    for label, name in RUBRIC_DTYPES:
        dtype = getattr(torch, name, None)
        if dtype is None:
            missing[label] = "torch %s has no torch.%s" % (torch.__version__, name)
            continue
        try:
            one_byte = torch.empty(0, dtype=dtype).element_size() == 1
            if one_byte:
                src = torch.arange(16, dtype=torch.uint8).view(dtype)
            else:
                src = torch.arange(16).to(dtype)
            back = src.to(ctx.device).cpu()
            same = bool(torch.equal(back.view(torch.uint8), src.view(torch.uint8))) if one_byte else \
                bool(torch.equal(back, src))
        except Exception as exc:
            missing[label] = error_texts.first_line(exc, 160)
            continue
        (held if same else changed).append(label)
    data = {"held": held, "not_held": missing, "changed": changed, "rubric_dtypes": len(RUBRIC_DTYPES)}
    if changed:
        return checks.failed("%s tensors came back from %s changed: %s" % (len(changed), ctx.device,
                                                                           ", ".join(changed)), **data)
    detail = "%s holds %d of the %d data types the quality rubric scores (%s)%s" % (
        ctx.device, len(held), len(RUBRIC_DTYPES), ", ".join(held),
        "; not: %s" % ", ".join(sorted(missing)) if missing else "")
    if ctx.is_cpu:
        detail += "; " + CPU_SAME_DEVICE
    return checks.passed(detail, **data)


def plan(ctx):
    claimed = ctx.claimed_dtypes()
    planned = [checks.Check("ops.dtype_support", "ops", dtype_support)]
    for case in op_table.OP_CASES:
        for dtype_name in claimed:
            if op_table.KIND_OF_DTYPE[dtype_name] in case.kinds:
                planned.append(checks.Check("ops.%s.%s" % (case.name, dtype_name), "ops",
                                            _bound(run_case, case, dtype_name, claimed)))
    for random_case in op_table.RANDOM_CASES:
        for dtype_name in random_case.dtypes:
            planned.append(checks.Check("ops.random.%s.%s" % (random_case.name, dtype_name), "ops",
                                        _bound(run_random, random_case, dtype_name, claimed)))
    return planned

